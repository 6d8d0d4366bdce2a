//! Values at the edge of what a number can hold (a sixth adversarial pass): each used to panic,
//! abort on an allocation, wrap or exit 0 with nothing sent; each is now a coded error before
//! anything is sent, or a run whose counts add up.

use std::process::Output;

use crate::support::{bin, text};

/// A run against the embedded simulator: 5 short prompts, plus `extra`.
fn run(dir: &std::path::Path, extra: &[&str]) -> Output {
    super::short_sim_run(dir, "5", extra)
}

/// Asserts exit 2 with `code` on a line naming `flag` and no panic.
fn refused(out: &Output, code: &str, flag: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let line = err.lines().find(|l| l.starts_with("error[")).unwrap_or_default();
    assert!(line.starts_with(&format!("error[{code}]")) && line.contains(flag), "{err}");
}

/// Pins the bound on flags of seconds: `--request-timeout 1e19` (and `--stall-timeout`) passed
/// the check (up to 2^64 s), then every request task panicked adding it to a clock reading and
/// the run saved sent=0 completed=0 failed=0 with exit 0; `--scrape-interval 1e30`,
/// `--ready-check-timeout-sec 1e19` and `merge --wait-secs 2^63` panicked. All are SB101.
#[test]
fn seconds_beyond_1e9_are_refused_not_added_to_a_clock_reading() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value) in [
        ("--request-timeout", "1e19"),
        ("--stall-timeout", "1e19"),
        ("--ready-check-timeout-sec", "10000000000000000000"),
        ("--duration", "1e19"),
    ] {
        refused(&run(dir.path(), &[flag, value, "--save-result"]), "SB101", flag);
    }
    refused(
        &run(dir.path(), &["--scrape-metrics", "--scrape-interval", "1e30"]),
        "SB101",
        "--scrape-interval",
    );
    let merge =
        bin().arg("merge").arg(dir.path()).args(["--wait-secs", "9223372036854775807"]).output().unwrap();
    refused(&merge, "SB101", "--wait-secs");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was saved");
    // The bound itself still runs, every request completed.
    let out = run(dir.path(), &["--request-timeout", "1e9", "--stall-timeout", "1e9"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Successful requests:                     5"),
        "{}",
        text(&out.stdout)
    );
}

/// Pins the planned-request bound: `--stages 1e308:1` and `--duration 1 --request-rate 1e308`
/// overflowed an addition; `--duration 10 --request-rate 1e8` and `--stages 1:1e19` aborted on
/// allocating the schedule. SB101 before anything is built.
#[test]
fn schedules_of_more_than_1e8_requests_are_refused_before_they_are_drawn() {
    let dir = tempfile::tempdir().unwrap();
    for (args, flag) in [
        (&["--stages", "1e308:1"][..], "--stages"),
        (&["--stages", "1:1e19"], "--stages"),
        (&["--duration", "1", "--request-rate", "1e308"], "--duration"),
        (&["--duration", "10", "--request-rate", "1e8"], "--duration"),
        (&["--duration", "1e9", "--request-rate", "1000"], "--duration"),
    ] {
        refused(&run(dir.path(), args), "SB101", flag);
    }
}

/// Pins `rps_change_events` of a steep ramp: one event per integer rate up to 1e7 rps was
/// 1.8 GB and aborted the run after it ended (the result lost); 1e308 was a capacity overflow.
/// A ramp of more than 100,000 steps records the rate each request reached.
#[test]
fn a_steep_ramp_saves_its_result_with_one_rate_event_per_request() {
    let dir = tempfile::tempdir().unwrap();
    for end in ["1e7", "1e308"] {
        let ramp = ["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", end];
        let save = ["--num-prompts", "10", "--save-result", "--result-filename", "ramp.json"];
        let out = run(dir.path(), &[&ramp[..], &save[..]].concat());
        assert!(out.status.success(), "{}", text(&out.stderr));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("ramp.json")).unwrap()).unwrap();
        let events = doc["rps_change_events"].as_array().unwrap();
        // The start, then one per request that raised the integer rate (1e308 saturates at once).
        assert!((2..=10).contains(&events.len()), "{}", events.len());
        assert_eq!(doc["completed"], 10);
    }
}

/// Pins the open-files check of concurrency stages: `--stages c=18446744073709551615:1` started
/// and grew to 24 GB (c=1000000 ignored Ctrl-C); `--max-concurrency` as large is SB175.
#[test]
fn a_concurrency_stage_beyond_the_open_files_limit_is_sb175() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--stages", "c=2:1,c=18446744073709551615:1"]);
    refused(&out, "SB175", "--stages c=N");
}

/// Pins `--start-at` bounds: 1e30 saturated to the largest µs count, read as "passed
/// 1796610216 s ago", and the shard ran; a start two hours past only warned (latencies from its
/// send times were hours long). A start a little past still runs with the warning.
#[test]
fn a_start_at_not_representable_a_week_ahead_or_an_hour_past_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let shard = ["--num-shards", "2", "--shard-index", "0", "--save-result", "--start-at"];
    for at in [
        "1e30".to_owned(),
        "18446744073709551615".into(),
        (now + 8 * 86_400).to_string(),
        (now - 7_200).to_string(),
    ] {
        refused(&run(dir.path(), &[&shard[..], &[at.as_str()]].concat()), "SB101", "--start-at");
    }
    let out = run(dir.path(), &[&shard[..], &[(now - 1).to_string().as_str()]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("warning: --start-at passed"), "{}", text(&out.stderr));
}

/// Pins the empty shard: `--num-prompts 10 --num-shards 20 --shard-index 15` printed "0 of 10
/// requests", saved an empty result and exited 0. Refused as a too small --max-concurrency is.
#[test]
fn a_shard_that_would_send_no_request_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--num-prompts", "10", "--num-shards", "20", "--shard-index", "15", "--save-result"];
    refused(&run(dir.path(), &args), "SB101", "--num-shards");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was saved");
}
