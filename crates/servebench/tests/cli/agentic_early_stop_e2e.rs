//! Early stop on a session-tree replay (`--dataset-name agentic` with `--max-errors`) end to
//! end through the binary against the embedded simulator failing every request: the run stops
//! on the error limit with exit code 4, every turn keeps one record, the turns never sent
//! because a turn they depend on failed say `dependency_failed`, those the stop kept back say
//! `early_stop`, and the result's counts (`num_prompts` = the trace's turns) add up.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{bin, data, text, tokenizer};
use serde_json::Value;

/// Turns in `agentic/fork_join.jsonl` (two sessions).
const FIXTURE_TURNS: usize = 8;

#[test]
fn agentic_error_storm_stops_early_and_marks_turns_behind_a_failed_turn_dependency_failed() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let out = bin()
        .args(["--sim", "--sim-ttft-ms", "3", "--sim-itl-ms", "1", "--sim-fault", "500=1", "--sim-tokenizer"])
        .arg(&tok)
        .args(["--model", "sim-model", "--backend", "openai-chat", "--disable-tqdm", "--tokenizer"])
        .arg(&tok)
        .args(["--dataset-name", "agentic", "--dataset-path"])
        .arg(data("agentic/fork_join.jsonl"))
        .args(["--max-errors", "1", "--save-result", "--result-filename", "r.json", "--result-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(4), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stderr.contains("SB144"), "{stderr}");
    assert!(stdout.contains("session-tree replay, 2 sessions, 8 turns"), "{stdout}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(json["early_stop"]["reason"], "error_rate", "{}", json["early_stop"]);
    assert_eq!(json["num_prompts"], FIXTURE_TURNS as u64, "num_prompts counts the trace's turns");
    let records: Vec<Value> = std::fs::read_to_string(dir.path().join("r.json.records.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r.get("index").is_some())
        .collect();
    assert_eq!(records.len(), FIXTURE_TURNS, "one record per turn");
    let count = |f: &dyn Fn(&Value) -> bool| records.iter().filter(|r| f(r)).count();
    let failed = count(&|r| r["outcome"] == "failed");
    let cancelled = count(&|r| r["outcome"] == "cancelled");
    assert_eq!(failed + cancelled, FIXTURE_TURNS, "nothing completes against a server failing every request");
    let blocked = count(&|r| r["cancelled_by"] == "dependency_failed");
    assert!(blocked >= 1, "the first session's root failed: its children never ran");
    for r in records.iter().filter(|r| r["outcome"] == "cancelled") {
        assert!(r["dispatched_us"].is_null(), "a cancelled turn here was never sent: {r}");
        let why = r["cancelled_by"].as_str().unwrap();
        assert!(why == "dependency_failed" || why == "early_stop", "{r}");
    }
    let held_back = count(&|r| r["cancelled_by"] == "early_stop");
    assert_eq!(json["early_stop"]["requests_not_sent"], held_back as u64);
    assert_eq!(json["session_trees"]["turns"]["cancelled"], cancelled as u64);
    assert!(stderr.contains("never sent: a turn they depend on failed"), "{stderr}");
}
