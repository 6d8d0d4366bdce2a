//! Kernel receive timestamps end to end, on the embedded simulator: a run says its receive
//! times are the kernel's (`client_health.receive_timestamps`), over http and https, with a
//! read lag that is never negative; `--no-kernel-timestamps` falls back to user-space read times
//! and says so once in the run header. docs/metrics.md, "Receive timestamps".

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;

use crate::support::{bin, text, tokenizer};

/// A saved run with `extra` flags: stdout, result (schema-checked), records.
fn saved_run(extra: &[&str]) -> (String, Value, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let tok = tokenizer();
    let out = bin()
        .args(["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", "1", "--disable-tqdm", "--tokenizer"])
        .arg(&tok)
        .arg("--sim-tokenizer")
        .arg(&tok)
        .args(["--num-prompts", "8", "--max-concurrency", "4", "--random-input-len", "16"])
        .args(["--random-output-len", "6", "--save-result", "--result-dir", d, "--result-filename", "r.json"])
        .args(extra)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&result).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");
    let records = std::fs::read_to_string(dir.path().join("r.json.records.jsonl")).unwrap();
    let records = records.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (stdout, result, records)
}

/// Every record's timeline stays ordered with kernel times: dispatch ≤ head ≤ first token ≤
/// done, and the write's end is never after the first response byte.
fn assert_ordered(records: &[Value]) {
    assert_eq!(records.len(), 8);
    for r in records {
        assert_eq!(r["outcome"], "completed", "{r}");
        let at = |k: &str| r[k].as_u64().unwrap();
        assert!(at("dispatched_us") <= at("headers_us"), "{r}");
        assert!(at("headers_us") <= at("first_token_us") && at("first_token_us") <= at("done_us"), "{r}");
        let p = &r["phases"];
        assert!(p["written_us"].as_u64().unwrap() <= p["first_byte_us"].as_u64().unwrap(), "{r}");
    }
}

/// The kernel-stamped reads of a result: every read carried a stamp; the lag is ordered and ≥ 0.
fn assert_kernel_sourced(result: &Value) {
    let rt = &result["client_health"]["receive_timestamps"];
    assert_eq!(rt["source"], "kernel", "{rt}");
    // Turning packet stamping on is deferred by the kernel to a work queue; by the measured
    // phase (after the readiness check) it is on, so nearly every read is stamped.
    let stamped = rt["kernel_stamped_reads"].as_u64().unwrap();
    assert!(stamped > 0 && rt["unstamped_reads"].as_u64().unwrap() < stamped, "{rt}");
    assert_eq!(rt["clock_anomalies"], 0, "{rt}");
    let (p50, p99, max) = (
        rt["read_lag_p50_ms"].as_f64().unwrap(),
        rt["read_lag_p99_ms"].as_f64().unwrap(),
        rt["read_lag_max_ms"].as_f64().unwrap(),
    );
    assert!(0.0 <= p50 && p50 <= p99, "{rt}");
    // The percentiles are bucket middles (within 1/32), the max exact.
    assert!(p99 <= max * (1.0 + 1.0 / 32.0) + 0.001, "{rt}");
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
#[test]
fn a_run_times_responses_with_kernel_receive_timestamps() {
    let (stdout, result, records) = saved_run(&["--verbose"]);
    assert_kernel_sourced(&result);
    assert_ordered(&records);
    assert!(!stdout.contains("Receive times: user-space"), "{stdout}");
    assert!(stdout.contains("Receive times: kernel (SO_TIMESTAMPING"), "the --verbose detail: {stdout}");
    assert!(stdout.contains("Read lag P99 (ms):"), "{stdout}");
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
#[test]
fn kernel_receive_timestamps_flow_through_tls() {
    let (_, result, records) = saved_run(&["--sim-tls"]);
    assert_kernel_sourced(&result);
    assert_ordered(&records);
}

#[test]
fn no_kernel_timestamps_falls_back_to_user_space_times_and_says_so_once() {
    let (stdout, result, records) = saved_run(&["--no-kernel-timestamps"]);
    let line = "Receive times: user-space read times (--no-kernel-timestamps)";
    assert_eq!(stdout.matches(line).count(), 1, "{stdout}");
    let rt = &result["client_health"]["receive_timestamps"];
    assert_eq!(rt["source"], "user-space", "{rt}");
    assert_eq!(rt["kernel_stamped_reads"], 0, "{rt}");
    assert!(
        rt["read_lag_p50_ms"].is_null() && rt["read_lag_max_ms"].is_null(),
        "no lag without stamps: {rt}"
    );
    assert_ordered(&records);
}

/// Whether a run must be granted the short slice here: Linux 6.12+ (custom slices), and this
/// test process — whose scheduling policy the run inherits — under `SCHED_OTHER` or
/// `SCHED_BATCH` (`/proc/self/stat` field 41) without reset-on-fork (which `/proc` does not show;
/// nothing here sets it). Elsewhere the run must say why not.
#[cfg(target_os = "linux")]
fn kernel_grants_short_slices() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut parts = release.trim().split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which may hold spaces) start at field 3.
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let policy: u32 = after_name.split(' ').nth(41 - 3).unwrap().parse().unwrap();
    (major, minor) >= (6, 12) && (policy == 0 || policy == 3)
}

#[cfg(target_os = "linux")]
#[test]
fn a_run_asks_for_short_time_slices_and_says_what_the_kernel_granted() {
    let (stdout, result, _) = saved_run(&["--verbose"]);
    let ts = &result["client_health"]["time_slice"];
    if kernel_grants_short_slices() {
        assert_eq!(ts["short_ms"], 0.1, "{ts}");
        assert!(ts["detail"].as_str().unwrap().starts_with("0.1 ms time slices"), "{ts}");
        // Granted: not in the run header (the --verbose health block says it).
        assert!(!stdout.contains("Time slices: the kernel's default"), "{stdout}");
        assert_eq!(stdout.matches("Time slices: 0.1 ms").count(), 1, "{stdout}");
    } else {
        assert!(ts["short_ms"].is_null(), "{ts}");
        assert_eq!(stdout.matches("Time slices: the kernel's default time slices (").count(), 2, "{stdout}");
    }
}

#[test]
fn no_short_time_slice_keeps_the_kernels_default_silently() {
    let (stdout, result, _) = saved_run(&["--no-short-time-slice"]);
    let ts = &result["client_health"]["time_slice"];
    assert!(ts["short_ms"].is_null(), "{ts}");
    assert_eq!(ts["detail"], "the kernel's default time slices", "{ts}");
    assert!(!stdout.contains("Time slices"), "{stdout}");
}
