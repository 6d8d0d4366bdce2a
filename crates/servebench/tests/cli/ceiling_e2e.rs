//! Issue 27 items 3 and 4 end to end, on the embedded simulator: the open-files check counts
//! both ends of an embedded simulator's connections (SB175), and the `send_rate` validity rule
//! is checked on a paced open loop and only there.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use servebench_testkit::cli::open_files_limit;

use crate::support::{bin, text, tokenizer};

/// A saved run on the embedded simulator with `load` flags: the result's `validity` block.
fn validity_of(load: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    let out = bin()
        .args(["--sim", "--sim-ttft-ms", "1", "--sim-itl-ms", "1", "--disable-tqdm", "--tokenizer"])
        .arg(&tok)
        .arg("--sim-tokenizer")
        .arg(&tok)
        .args(["--num-prompts", "20", "--random-input-len", "8", "--random-output-len", "1", "--ignore-eos"])
        .args(load)
        .args(["--save-result", "--result-filename", "r.json", "--result-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    result["validity"].clone()
}

#[test]
fn a_paced_open_loop_is_checked_for_its_achieved_send_rate() {
    let v = validity_of(&["--request-rate", "200"]);
    let r = v["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "send_rate")
        .unwrap_or_else(|| panic!("{v}"));
    // What the client achieved depends on the machine; what the rule reports does not.
    let measured = r["measured"].as_f64().unwrap();
    assert!(measured > 0.0 && r["threshold"].is_number(), "{r}");
    assert!(r["detail"].as_str().unwrap().contains("of 200.0 offered"), "{r}");
}

#[test]
fn a_closed_loop_has_no_send_rate_to_check() {
    let v = validity_of(&["--max-concurrency", "4"]);
    let not_checked: Vec<&str> =
        v["not_checked"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(not_checked.iter().any(|n| n.starts_with("send_rate: ")), "{v}");
}

#[test]
fn an_embedded_simulator_doubles_the_open_files_a_concurrency_needs() {
    // 100 connections fit 200 files against a server elsewhere, not with both ends in this
    // process (2 × 100 + 64 > 200): refused before anything is sent, naming the fix.
    let mut cmd = bin();
    cmd.args(["--sim", "--model", "m", "--tokenizer", "cl100k_base", "--sim-tokenizer", "cl100k_base"])
        .args(["--max-concurrency", "100", "--num-prompts", "10"]);
    let out = open_files_limit(&mut cmd, 200).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("SB175") && stderr.contains("--sim") && stderr.contains("ulimit -n"), "{stderr}");
}

#[test]
fn a_timed_trace_replay_is_checked_for_lateness_and_send_rate() {
    // Its schedule is the trace's timestamps (rate inf): the schedule rules apply all the same.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let rows: String = (0..20)
        .map(|i| format!("{{\"timestamp\": {}, \"input_length\": 8, \"output_length\": 1}}\n", i * 5))
        .collect();
    std::fs::write(&trace, rows).unwrap();
    let v = validity_of(&[
        "--backend",
        "openai",
        "--dataset-name",
        "timed_trace",
        "--dataset-path",
        trace.to_str().unwrap(),
    ]);
    let ids: Vec<&str> = v["rules"].as_array().unwrap().iter().filter_map(|r| r["id"].as_str()).collect();
    assert!(ids.contains(&"dispatch_lateness") && ids.contains(&"send_rate"), "{v}");
}
