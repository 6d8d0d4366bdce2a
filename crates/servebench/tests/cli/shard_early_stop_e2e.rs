//! A sharded run where one shard stops early: both run with `--max-errors 2`; shard 0 runs
//! against an embedded simulator that fails every request and stops (exit code 4), shard 1
//! against a healthy one runs to its end. `servebench merge` keeps every record, writes the first stop as the merged
//! result's `early_stop` (on the merged clock) and warns that the shards disagree.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{bin, text, tokenizer};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// Shard `index` of a 2-shard, 40-request workload at 40 req/s on the embedded simulator.
fn shard(dir: &Path, index: u32, extra: &[&str]) -> Output {
    let tok = tokenizer();
    bin()
        .args(["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", "1", "--sim-tokenizer"])
        .arg(&tok)
        .args(["--model", "sim-model", "--disable-tqdm", "--tokenizer"])
        .arg(&tok)
        .args(["--num-prompts", "40", "--request-rate", "40", "--seed", "3", "--random-input-len", "16"])
        .args(["--random-output-len", "4", "--num-shards", "2", "--shard-index", &index.to_string()])
        .args(["--save-result", "--result-filename", &format!("shard-{index}.json"), "--result-dir"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn merged_result_carries_the_first_shard_early_stop_and_warns_when_shards_disagree() {
    let dir = tempfile::tempdir().unwrap();
    // Both shards run with the same flags (merge refuses shards of different early-stop
    // settings, SB701); only shard 0's server fails.
    let stopped = shard(dir.path(), 0, &["--sim-fault", "500=1", "--max-errors", "2"]);
    assert_eq!(stopped.status.code(), Some(4), "{}", text(&stopped.stderr));
    let ran = shard(dir.path(), 1, &["--max-errors", "2"]);
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    let files: Vec<_> = (0..2).map(|i| dir.path().join(format!("shard-{i}.json.records.jsonl"))).collect();
    let out = bin()
        .arg("merge")
        .args(&files)
        .args(["--save-result", "--result-filename", "merged.json", "--result-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Early stop (error_rate)") && stdout.contains("first shard to stop"), "{stdout}");
    assert!(stderr.contains("shard(s) 0 stopped early and shard(s) 1 ran to their end"), "{stderr}");
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("merged.json")).unwrap()).unwrap();
    let single: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("shard-0.json")).unwrap()).unwrap();
    let (m, s) = (&merged["early_stop"], &single["early_stop"]);
    assert_eq!(m["reason"], "error_rate");
    assert_eq!(m["requests_not_sent"], s["requests_not_sent"], "only shard 0 stopped");
    // On the merged clock: shard 0's stop moved by its anchor's offset from the merged origin.
    let offset_s = merged["shards"][0]["origin_offset_us"].as_f64().unwrap() / 1e6;
    let moved = s["stopped_at_s"].as_f64().unwrap() + offset_s;
    assert!((m["stopped_at_s"].as_f64().unwrap() - moved).abs() < 1e-9, "{m} vs {s} + {offset_s}");
    // Nothing is lost: every request of both shards has its record and the outcomes add up.
    let sum = ["completed", "failed"].iter().map(|k| merged[k].as_u64().unwrap_or(0)).sum::<u64>()
        + merged["cancelled"].as_u64().unwrap_or(0);
    assert_eq!(sum, 40, "{merged}");
}
