//! Early stop end to end through the binary against the embedded engine simulator
//! (docs/workloads.md, "Early stop"): past capacity the run stops on saturation, a fault storm
//! stops it on the error rate, a comfortable load runs to its end, and a rate sweep's ramp
//! ends at the first saturated point. Every request keeps its record; the counts add up.
//!
//! The simulated server: 4 sequences at once, 10-ms decode steps, 20 output tokens each, so a
//! request is served in about 0.2 s and the server finishes about 20 requests/s.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{bin, text, tokenizer};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// Capacity ≈ 4 sequences / (20 tokens × 10 ms) = 20 requests/s.
const ENGINE: &[&str] = &[
    "--sim",
    "--sim-mode",
    "engine",
    "--sim-max-num-seqs",
    "4",
    "--sim-decode-step-ms",
    "10",
    "--sim-decode-per-seq-us",
    "0",
    "--sim-jitter",
    "0",
    "--sim-prefill-tokens-per-s",
    "1000000",
];

const LOAD: &[&str] = &["--random-input-len", "16", "--random-output-len", "20", "--ignore-eos"];

/// Runs the binary against the embedded engine simulator with `extra`, saving `r.json` and the
/// records in `dir`.
fn run(dir: &Path, extra: &[&str]) -> Output {
    let tok = tokenizer();
    let mut cmd = bin();
    cmd.args(ENGINE)
        .args(["--model", "sim-model", "--disable-tqdm", "--tokenizer"])
        .arg(&tok)
        .arg("--sim-tokenizer")
        .arg(&tok)
        .args(LOAD)
        .args(["--save-result", "--result-dir", dir.to_str().unwrap(), "--result-filename", "r.json"]);
    // A run's records file; an experiment writes one document of its points (SB113 for it).
    if !extra.iter().any(|a| a.starts_with("--sweep-")) {
        cmd.arg("--records").arg(dir.join("r.records.jsonl"));
    }
    cmd.args(extra).output().expect("run servebench")
}

fn result(dir: &Path) -> Value {
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(&json).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");
    json
}

fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("r.records.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("index").is_some())
        .collect()
}

fn both(out: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", text(&out.stdout), text(&out.stderr))
}

/// Nothing measured is lost: every request of the workload has a record, each completed,
/// failed or cancelled; the result's counts add up to them; those the stop kept from being sent
/// say `cancelled_by: early_stop`, and their number is the block's `requests_not_sent`.
fn assert_accounted(json: &Value, recs: &[Value], n: u64) {
    assert_eq!(recs.len() as u64, n, "one record per request");
    let count = |o: &str| recs.iter().filter(|r| r["outcome"] == o).count() as u64;
    let (c, f, x) = (count("completed"), count("failed"), count("cancelled"));
    assert_eq!(c + f + x, n, "every request ends completed, failed or cancelled");
    assert_eq!((json["completed"].as_u64(), json["failed"].as_u64()), (Some(c), Some(f)));
    assert_eq!(json["cancelled"].as_u64(), Some(x));
    let unsent =
        recs.iter().filter(|r| r["cancelled_by"] == "early_stop" && r.get("dispatched_us").is_none()).count()
            as u64;
    assert_eq!(json["early_stop"]["requests_not_sent"].as_u64(), Some(unsent));
    assert!(unsent > 0, "the stop kept requests from being sent");
}

/// 4× capacity (80 requests/s against about 20/s): the queue grows, the saturation test holds
/// over a whole window and the run stops with exit 4 (SB143), saying why and from when.
#[test]
fn four_times_capacity_stops_on_saturation_with_its_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let args =
        ["--num-prompts", "800", "--request-rate", "80", "--detect-saturation", "--saturation-window", "2"];
    let out = run(dir.path(), &args);
    assert_eq!(out.status.code(), Some(4), "{}", both(&out));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error[SB143]"), "{stderr}");
    assert!(text(&out.stdout).contains("Early stop (saturation): server saturated from"), "{}", both(&out));
    let json = result(dir.path());
    let e = &json["early_stop"];
    assert_eq!(e["reason"], "saturation", "{e}");
    let (at, stopped, window) = (
        e["detected_at_s"].as_f64().unwrap(),
        e["stopped_at_s"].as_f64().unwrap(),
        e["window_s"].as_f64().unwrap(),
    );
    assert!(window >= 2.0 && at >= window && stopped >= at, "{e}");
    assert!(e["arrival_rate"].as_f64().unwrap() > e["finish_rate"].as_f64().unwrap(), "{e}");
    assert!(e["in_flight_end"].as_u64().unwrap() > e["in_flight_start"].as_u64().unwrap(), "{e}");
    assert!(e["in_flight_growth_per_s"].as_f64().unwrap() > 0.0);
    assert!(e["error_rate"].is_null() && e["failed"].is_null(), "errors' evidence is null: {e}");
    // The default --on-interrupt is cancel: what was in flight at the stop is cancelled.
    assert_eq!(e["in_flight"], "cancelled");
    assert_accounted(&json, &records(dir.path()), 800);
}

/// A fault storm (the server answers 500 to 80 % of requests): more than half of the last 10
/// finished failed, the run stops on the error rate (exit 4, SB144); with `--on-interrupt
/// drain` the requests in flight at the stop ran to their end.
#[test]
fn a_fault_storm_stops_on_the_error_rate_and_drains_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--num-prompts",
        "200",
        "--request-rate",
        "10",
        "--sim-fault",
        "http_500=0.8",
        "--sim-fault-seed",
        "7",
        "--max-error-rate",
        "0.5",
        "--max-error-rate-window",
        "10",
        "--on-interrupt",
        "drain",
    ];
    let out = run(dir.path(), &args);
    assert_eq!(out.status.code(), Some(4), "{}", both(&out));
    assert!(text(&out.stderr).contains("error[SB144]"), "{}", both(&out));
    let json = result(dir.path());
    let e = &json["early_stop"];
    assert_eq!((e["reason"].as_str(), e["error_limit"].as_str()), (Some("error_rate"), Some("rate")), "{e}");
    assert_eq!(e["finished_in_window"], 10);
    assert!(e["failed"].as_u64().unwrap() > 5 && e["error_rate"].as_f64().unwrap() > 0.5, "{e}");
    assert!(e["arrival_rate"].is_null(), "saturation's evidence is null: {e}");
    assert_eq!((e["in_flight"].as_str(), e["cancelled_in_flight"].as_u64()), (Some("drained"), Some(0)));
    let recs = records(dir.path());
    assert!(recs.iter().all(|r| r.get("dispatched_us").is_none() || r["outcome"] != "cancelled"), "drained");
    assert_accounted(&json, &recs, 200);
}

/// A comfortable load (8 requests/s, 0.4× capacity) runs to its end with the same detectors
/// armed: no stop, exit 0, `early_stop: null`, every request completed.
#[test]
fn a_comfortable_load_does_not_stop() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--num-prompts",
        "48",
        "--request-rate",
        "8",
        "--detect-saturation",
        "--saturation-window",
        "2",
        "--max-error-rate",
        "0.5",
        "--max-error-rate-window",
        "10",
    ];
    let out = run(dir.path(), &args);
    assert!(out.status.success(), "{}", both(&out));
    let json = result(dir.path());
    assert!(json["early_stop"].is_null(), "{}", json["early_stop"]);
    assert_eq!(json["completed"], 48);
    assert!(!text(&out.stdout).contains("Early stop"));
}

/// A rate sweep ramping 5 → 80 → 160 requests/s: the 80 point saturates and stops early, the
/// sweep ends there (160 is not run) and its document says so; exit 4.
#[test]
fn a_saturated_point_ends_the_rate_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--num-prompts",
        "480",
        "--duration",
        "5",
        "--request-rate",
        "5",
        "--sweep-request-rate",
        "5,80,160",
        "--detect-saturation",
        "--saturation-window",
        "2",
    ];
    let out = run(dir.path(), &args);
    assert_eq!(out.status.code(), Some(4), "{}", both(&out));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "the 160 point was not run");
    assert!(points[0]["result"]["early_stop"].is_null(), "5 requests/s is comfortable");
    assert_eq!(points[1]["result"]["early_stop"]["reason"], "saturation");
    let s = &doc["stopped_early"];
    assert_eq!((s["index"].as_u64(), s["points_not_run"].as_u64()), (Some(1), Some(1)), "{s}");
    assert_eq!(s["label"], "rate 80.0");
    assert!(text(&out.stdout).contains("stopped early: the experiment stops here (1 later points not run)"));
    // Its figures are not a level the server holds: never the best point (it was).
    assert_eq!(doc["best"]["label"], "rate 5.0", "{}", doc["best"]);
}

/// Early-stop flags that cannot work are coded errors before anything is sent (exit 2): a
/// tuning flag alone (SB140), saturation without an arrival schedule (SB141), an error window
/// longer than the run (SB142), and values out of range (SB101).
#[test]
fn early_stop_flags_that_cannot_work_are_coded_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["--saturation-window", "10"], "error[SB140]"),
        (&["--max-error-rate-window", "10"], "error[SB140]"),
        (&["--detect-saturation"], "error[SB141]"),
        (&["--request-rate", "5", "--max-error-rate", "0.5"], "error[SB142]"),
        (&["--max-error-rate", "1"], "error[SB101]: invalid --max-error-rate"),
        (&["--request-rate", "5", "--detect-saturation", "--saturation-window", "0.5"], "error[SB101]"),
    ];
    for (flags, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["--num-prompts", "12"];
        args.extend_from_slice(flags);
        let out = run(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", both(&out));
        assert!(text(&out.stderr).contains(want), "{flags:?}: {}", both(&out));
    }
}
