//! `--max-idle-gap-cap-seconds` end to end: the second session of `agentic/fork_join.jsonl`
//! (recorded 500 ms after the first) is scheduled at the capped pause, and without the cap at
//! its recorded start divided by the speed-up. Read from the records' intended send times (the
//! schedule), not from when requests happened to leave.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{bin, data, text, tokenizer};
use serde_json::Value;

/// The intended send time (µs) of each session's root turn, by session.
fn root_intended_us(extra: &[&str]) -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let records = dir.path().join("r.jsonl");
    let out = bin()
        .args(["--sim", "--sim-ttft-ms", "1", "--sim-itl-ms", "1", "--sim-tokenizer"])
        .arg(&tok)
        .args(["--model", "sim-model", "--backend", "openai-chat", "--disable-tqdm", "--tokenizer"])
        .arg(&tok)
        .args(["--dataset-name", "agentic", "--dataset-path"])
        .arg(data("agentic/fork_join.jsonl"))
        .arg("--records")
        .arg(&records)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let mut roots: Vec<(u64, u64)> = std::fs::read_to_string(&records)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["turn"] == 0)
        .map(|r| (r["conversation"].as_u64().unwrap(), r["intended_us"].as_u64().unwrap()))
        .collect();
    roots.sort();
    roots.into_iter().map(|r| r.1).collect()
}

#[test]
fn max_idle_gap_cap_shortens_the_pause_between_session_starts_to_the_cap() {
    assert_eq!(root_intended_us(&["--replay-speedup", "2"]), [0, 250_000], "500 ms / 2");
    assert_eq!(
        root_intended_us(&["--replay-speedup", "2", "--max-idle-gap-cap-seconds", "0.04"]),
        [0, 40_000]
    );
    // A cap above the pause changes nothing.
    assert_eq!(root_intended_us(&["--max-idle-gap-cap-seconds", "9"]), [0, 500_000]);
}
