//! Token accounting end to end: a simulator run with `--retokenize-output` reports server
//! usage, token events and the client tokenizer's count side by side; the discrepancies in the
//! result JSON are recomputed here from the records file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{bin, save_run_json};

#[test]
fn retokenize_output_reports_usage_events_and_retokenized_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let tok = servebench_testkit::fixtures::smollm2_tokenizer();
    let out = bin()
        .args(["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", "1", "--sim-tokenizer", tok.to_str().unwrap()])
        .args(["--tokenizer", tok.to_str().unwrap(), "--num-prompts", "20", "--max-concurrency", "4"])
        .args([
            "--random-input-len",
            "32",
            "--random-output-len",
            "12",
            "--disable-tqdm",
            "--retokenize-output",
            "--verbose",
        ])
        .args(save_run_json(dir.path()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("Output tokens usage vs retokenized:"), "{stdout}");
    assert!(stdout.contains("Output tokens usage vs events:"), "{stdout}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
    let ta = &json["token_accounting"];
    assert_eq!(ta["output_source"], "usage");
    assert_eq!(ta["usage_vs_retokenized"]["requests"], 20);
    assert_eq!(ta["usage_vs_events"]["requests"], 20);
    assert_eq!(ta["retokenized_vs_events"]["requests"], 20);

    // Recompute usage vs retokenized from the records: every completed record has both counts
    // and no text (not --save-detailed).
    let records = std::fs::read_to_string(dir.path().join("run.json.records.jsonl")).unwrap();
    let (mut sum_abs, mut max_abs, mut n) = (0u64, 0u64, 0u64);
    for line in records.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["outcome"], "completed");
        assert!(r.get("generated_text").is_none());
        let (u, t) = (r["completion_tokens"].as_u64().unwrap(), r["retokenized_tokens"].as_u64().unwrap());
        assert!(t > 0);
        sum_abs += u.abs_diff(t);
        max_abs = max_abs.max(u.abs_diff(t));
        n += 1;
    }
    assert_eq!(n, 20);
    let d = &ta["usage_vs_retokenized"];
    assert_eq!(d["max_abs_diff"].as_u64().unwrap(), max_abs);
    assert!((d["mean_abs_diff"].as_f64().unwrap() - sum_abs as f64 / 20.0).abs() < 1e-9);
}
