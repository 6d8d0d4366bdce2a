//! End to end through the binary: trace replay, multi-turn with LoRA, and rate and concurrency
//! stages against the embedded simulator; each result must carry its group keys and match the
//! result schema.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{bin, root};
use serde_json::Value;

/// Runs the binary with `args` plus result saving into a temp dir; returns (stdout, result).
fn run(args: &[&str]) -> (String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["--sim", "--sim-tokenizer", "cl100k_base", "--disable-tqdm", "--save-result"])
        .args(["--result-dir", dir.path().to_str().unwrap(), "--result-filename", "run.json"])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");
    (stdout, json)
}

/// Every request of a result: completed, failed or cancelled.
fn requests_of(json: &Value) -> u64 {
    ["completed", "failed", "cancelled"].iter().map(|k| json[k].as_u64().unwrap()).sum()
}

#[test]
fn trace_replay_reports_cache_hits_and_schedule_lag() {
    let trace = root().join("crates/servebench-runner/tests/data/mooncake_small.jsonl");
    let (stdout, json) = run(&[
        "--sim-mode",
        "engine",
        "--dataset-name",
        "timed_trace",
        "--dataset-path",
        trace.to_str().unwrap(),
        "--timed-trace-sec-multiplier",
        "2",
    ]);
    assert_eq!(json["completed"], 10);
    assert!(json["cached_input_tokens"].as_u64().unwrap() > 0, "{json}");
    assert_eq!(json["schedule_lag"]["dispatched"], 10);
    assert!(stdout.contains(" Trace Replay "), "{stdout}");
}

/// A trace on its own timestamps is an open loop whatever `--request-rate` says (inf by
/// default): the load-mode line says so (it said "burst, all 10 at t=0"), and the
/// schedule-anchored block is shown, as for any scheduled run.
#[test]
fn trace_replay_load_mode_is_the_traces_timestamps_not_a_burst() {
    let trace = root().join("crates/servebench-runner/tests/data/mooncake_small.jsonl");
    let path = trace.to_str().unwrap();
    let args =
        ["--dataset-name", "timed_trace", "--dataset-path", path, "--timed-trace-sec-multiplier", "0.5"];
    let (stdout, _) = run(&[&args[..], &["--max-concurrency", "4"]].concat());
    assert!(stdout.contains("trace replay at the trace's timestamps × 0.5, ≤ 4 in flight"), "{stdout}");
    assert!(!stdout.contains("burst, all"), "{stdout}");
    assert!(stdout.contains("Schedule-anchored (client queue included)"), "{stdout}");
    // `--no-self-timed` follows --request-rate: with the default (inf) and no cap, a burst of
    // the trace's 10 rows (not of --num-prompts' default 1000).
    let (stdout, _) = run(&[&args[..], &["--no-self-timed"]].concat());
    assert!(stdout.contains("burst, all 10 at t=0"), "{stdout}");
}

#[test]
fn multi_turn_with_lora_reports_per_turn_metrics() {
    let (stdout, json) = run(&[
        "--backend",
        "openai-chat",
        "--multi-turn",
        "--num-prompts",
        "4",
        "--multi-turn-num-turns",
        "3",
        "--random-input-len",
        "24",
        "--random-output-len",
        "6",
        "--lora-modules",
        "a",
        "b",
        "--sim-lora-modules",
        "a",
        "b",
    ]);
    assert_eq!(json["num_conversations"], 4);
    assert_eq!(json["conversations_completed"], 4);
    assert_eq!(json["completed"], 12);
    let turns = json["per_turn_metrics"].as_array().unwrap();
    assert_eq!(turns.len(), 3);
    assert!(turns.iter().all(|t| t["completed"] == 4));
    assert!(stdout.contains(" Turn 2 (4 samples) "), "{stdout}");
}

/// 5 prompts of 16 tokens in, 4 out: the stage tests' workload.
const FIVE_PROMPTS: &[&str] = &["--num-prompts", "5", "--random-input-len", "16", "--random-output-len", "4"];

/// Two rate stages of 0.5 s over [`FIVE_PROMPTS`].
fn staged() -> Vec<&'static str> {
    [FIVE_PROMPTS, &["--stages", "20:0.5,40:0.5"]].concat()
}

#[test]
fn stages_are_reported_one_by_one() {
    let (stdout, json) = run(&staged());
    let stages = json["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 2);
    assert_eq!(stages[1]["start_s"], 0.5);
    let total: u64 = stages.iter().map(|s| s["completed"].as_u64().unwrap()).sum();
    assert_eq!(Some(total), json["completed"].as_u64());
    assert!(stdout.contains(" Stage 1: 40 req/s"), "{stdout}");
    // Rate stages are an open loop on a schedule, not a burst: named so, and its schedule
    // checked (dispatch lateness and send rate), as a single-rate run's is.
    assert!(stdout.contains("open loop in 2 stages, 20 → 40 req/s"), "{stdout}");
    assert!(!stdout.contains("burst"), "{stdout}");
    let not_checked = json["validity"]["not_checked"].to_string();
    assert!(!not_checked.contains("dispatch_lateness"), "{not_checked}");
    assert!(!not_checked.contains("send_rate"), "{not_checked}");
}

#[test]
fn concurrency_stages_are_a_closed_loop_reported_one_by_one() {
    let (stdout, json) =
        run(&[FIVE_PROMPTS, &["--sim-ttft-ms", "5", "--sim-itl-ms", "1", "--stages", "c=1:0.5,c=4:0.5"]]
            .concat());
    let stages = json["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 2);
    assert_eq!(
        (stages[0]["max_concurrency"].clone(), stages[1]["max_concurrency"].clone()),
        (1.into(), 4.into())
    );
    assert_eq!(stages[1]["request_rate"], "inf");
    assert_eq!(stages[1]["start_s"], 0.5);
    let (n0, n1) = (stages[0]["completed"].as_u64().unwrap(), stages[1]["completed"].as_u64().unwrap());
    // About 9 ms per request: far more than the 5 prompts, and more with 4 in flight.
    assert!(n0 > 5 && n1 > n0, "{n0} {n1}");
    assert_eq!(Some(n0 + n1), json["completed"].as_u64());
    assert_eq!(json["failed"], 0);
    // Pins `num_prompts` as the run's requests (vLLM's meaning): the stages decided them, and
    // it read the --num-prompts value (5) beside more records.
    assert_eq!(json["num_prompts"].as_u64(), Some(requests_of(&json)));
    assert!(stdout.contains(" Stage 1: concurrency 4 for 0.5 s "), "{stdout}");
    assert!(stdout.contains("closed loop in 2 stages, 1 → 4 in flight"), "{stdout}");
    assert!(!stdout.contains("burst"), "{stdout}");
}

/// Pins the flag named when stages schedule nothing: it was `--duration`, not given.
#[test]
fn stages_that_schedule_nothing_name_the_stages() {
    let out =
        bin().args(["--sim", "--stages", "1e-9:1", "--num-prompts", "5", "--disable-tqdm"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("invalid --stages: no request is scheduled before the end of the run"), "{err}");
}

#[test]
fn duration_needs_a_finite_rate() {
    let out = bin().args(["--sim", "--duration", "1", "--disable-tqdm"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--duration"));
}

/// Pins the load-mode label naming the stages that ran: a `--duration` that ends the run in
/// stage 0 was labelled with both stages ("20 → 40 req/s").
#[test]
fn a_duration_that_cuts_the_stages_names_the_stages_that_ran() {
    let (stdout, json) = run(&[&staged()[..], &["--duration", "0.5"]].concat());
    assert_eq!(json["stages"].as_array().unwrap().len(), 1);
    assert_eq!(json["num_prompts"].as_u64(), Some(requests_of(&json)));
    assert!(stdout.contains("open loop in 1 stage, 20 req/s"), "{stdout}");
}
