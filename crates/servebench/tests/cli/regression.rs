//! Regression tests of the binary: each pins a bug that was fixed and is named after the
//! behaviour it pins; its doc comment says what used to go wrong.

use crate::modes_e2e::sim;
use crate::support::text;

/// Pins the readiness wait: its doubling pause used to stop after 1.4 s of a 2 s
/// `--ready-check-timeout-sec`. Every request answers 503: the check retries until the
/// deadline and says how long it waited.
#[test]
fn ready_check_timeout_is_waited_in_full_not_cut_short_by_the_doubling_pause() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim(dir.path(), &["--sim-fault", "http_503=1", "--ready-check-timeout-sec", "2"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let secs: f64 =
        err.split("endpoint not ready after ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(secs >= 2.0, "{err}");
}

mod messages;
mod server_text;
/// Pins the console a newcomer reads (issue 23, item 11). A closed loop (rate inf, a cap) used
/// to print "Mean Response TTFT" in seconds right after a TTFT of milliseconds, with nothing
/// saying it was the batch's own client queue, and warnings (steady state, client health)
/// inside the result on stdout. Now stdout is vLLM's block then captioned additions (the
/// schedule-anchored figures only with `--verbose` in a closed loop, captioned as
/// client-queue-inclusive) and every warning is on stderr.
#[test]
fn closed_loop_console_captions_the_client_queue_and_sends_warnings_to_stderr() {
    let warn = ["--steady-state-min-window", "1000"];
    let out = crate::support::fast_sim(&warn);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Load mode:                               closed loop, 4 in flight"), "{stdout}");
    assert!(stdout.contains("Mean client queue (ms):"), "{stdout}");
    assert!(!stdout.contains("Response TTFT"), "{stdout}");
    let warning_line = |l: &str| l.to_ascii_lowercase().starts_with("warning") || l.starts_with("note:");
    assert!(!stdout.lines().any(warning_line), "{stdout}");
    assert!(
        stderr.lines().any(|l| l.starts_with("warning: ") && l.contains("--steady-state-min-window")),
        "{stderr}"
    );

    let verbose = crate::support::fast_sim(&[&warn[..], &["--verbose"]].concat());
    let stdout = text(&verbose.stdout);
    assert!(stdout.contains("client-queue-inclusive"), "{stdout}");
    assert!(stdout.contains("Mean Response TTFT (ms):"), "{stdout}");
    assert!(stdout.contains("Output token source (requests):"), "{stdout}");
    assert!(!stdout.lines().any(warning_line), "{stdout}");
}

/// Pins `--sim --model NAME` (issue 23, item 10): the embedded simulator served only
/// `servebench-sim`, so every request of a run that named its model as against a real server
/// failed with HTTP 404. It now serves `--served-model-name`/`--model` unless `--sim-model`
/// names another.
#[test]
fn embedded_simulator_serves_the_model_the_run_names() {
    let out = crate::support::fast_sim(&["--model", "meta-llama/Llama-3.1-8B-Instruct"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("serving 'meta-llama/Llama-3.1-8B-Instruct'"), "{stdout}");
    assert!(stdout.contains("Successful requests:                     12"), "{stdout}");
    // --sim-model still wins: the run's model is then unknown to the server (404s).
    let out = crate::support::fast_sim(&["--model", "other", "--sim-model", "served"]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("serving 'served'"), "{stdout}");
    assert!(!stdout.contains("Successful requests:                     12"), "{stdout}");
}
