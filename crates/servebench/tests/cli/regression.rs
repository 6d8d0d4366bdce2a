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
/// Pins `compare`'s tests (issue 23.8): `std_*` rows used to be tested with Mann–Whitney, a
/// location test, so two runs with the same spread shifted by 100 ms printed `std_ttft_ms …
/// mann_whitney_u 0.0000 yes`; and the direction sign was glued to the change (`+0.50%-`).
#[test]
fn compare_tests_std_for_spread_and_prints_the_direction_apart() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, shift_us: u64| {
        let mut lines = String::new();
        for i in 0..60u64 {
            let ttft = 50_000 + (i % 10) * 1_000 + shift_us;
            let t0 = i * 100_000;
            let rec = serde_json::json!({
                "index": i, "request_id": format!("r{i}"), "outcome": "completed",
                "intended_us": t0, "dispatched_us": t0, "first_token_us": t0 + ttft,
                "last_token_us": t0 + ttft + 10_000, "done_us": t0 + ttft + 10_000,
                "token_events": {"gaps_us": [10_000]}, "prompt_tokens": 10, "completion_tokens": 2,
                "expected_output_tokens": 2, "token_event_count": 2, "output_chars": 2, "attempts": 1
            });
            lines.push_str(&format!("{rec}\n"));
        }
        let mean = 54.5 + shift_us as f64 / 1000.0;
        let path = dir.path().join(name);
        let doc = serde_json::json!({"mean_ttft_ms": mean, "std_ttft_ms": 2.87, "request_throughput": 10.0});
        std::fs::write(&path, doc.to_string()).unwrap();
        std::fs::write(dir.path().join(format!("{name}.records.jsonl")), lines).unwrap();
        path
    };
    let (a, b) = (write("a.json", 0), write("b.json", 100_000));
    let out =
        crate::support::bin().args(["compare", a.to_str().unwrap(), b.to_str().unwrap()]).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let line = |k: &str| stdout.lines().find(|l| l.starts_with(&format!("{k} "))).unwrap().to_owned();
    let std_line = line("std_ttft_ms");
    assert!(std_line.contains("brown_forsythe") && std_line.trim_end().ends_with(" no"), "{stdout}");
    let mean_line = line("mean_ttft_ms");
    assert!(mean_line.contains(" worse ") && mean_line.contains("mann_whitney_u"), "{stdout}");
    assert!(mean_line.trim_end().ends_with(" yes"), "{stdout}");
    assert!(!stdout.contains("%-") && !stdout.contains("%+"), "{stdout}");
}

/// Pins `report` on vLLM's own result files (issue 23.9): a result without a records file used to
/// be refused with SB501 "records file not found", a fix the user cannot apply. A vLLM 0.33
/// `--save-detailed` file is drawn from its arrays (with time charts from `start_times`); without
/// `start_times` the time charts are left out and the report says why; without any array the
/// summary keys alone, and the report says so.
#[test]
fn report_draws_a_vllm_result_file_from_its_arrays_and_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = servebench_testkit::fixtures::fixture("results/vllm-0.33-detailed.json");
    let report = |input: &std::path::Path| {
        let out = dir.path().join("r.html");
        let o = crate::support::bin()
            .args(["report", input.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        std::fs::read_to_string(out).unwrap()
    };
    let html = report(&fixture);
    for id in ["ttft-cdf", "itl-hist", "e2el-cdf", "ttft-prompt", "tokens-time", "ttft-time"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(html.contains("per-request arrays") && html.contains("1 of 40 requests failed"), "notes");
    assert!(
        html.contains("<td>completed</td><td>39</td>") && html.contains("<td>duration (s)</td><td>2.80</td>")
    );
    assert!(!html.contains("<td>queue time p50</td>"), "no scheduled send times, no queue time");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture).unwrap()).unwrap();
    let obj = doc.as_object_mut().unwrap();
    obj.remove("start_times");
    let no_starts = dir.path().join("no-starts.json");
    std::fs::write(&no_starts, doc.to_string()).unwrap();
    let html = report(&no_starts);
    assert!(
        html.contains("id=\"ttft-cdf\"")
            && !html.contains("id=\"tokens-time\"")
            && !html.contains("id=\"ttft-time\"")
    );
    assert!(html.contains("Time charts (TTFT and E2EL over time"), "says which charts are absent and why");
    for k in [
        "ttfts",
        "itls",
        "latencies",
        "input_lens",
        "output_lens",
        "errors",
        "queue_times",
        "generated_texts",
    ] {
        doc.as_object_mut().unwrap().remove(k);
    }
    let summary = dir.path().join("summary.json");
    std::fs::write(&summary, doc.to_string()).unwrap();
    let html = report(&summary);
    assert!(html.contains("only the result&#39;s summary keys") && !html.contains("<svg"), "no chart");
    assert!(html.contains("<td>mean_ttft_ms</td>") && html.contains("<td>completed</td><td>39</td>"));
}
