//! The client's own load controls against the engine simulator, end to end through the binary:
//! `--max-prefill-concurrency` (never more than N requests between dispatch and first token,
//! computed from the records; more without the cap) and `--request-cancellation-rate/-delay`
//! (the chosen requests are abandoned, the server sees it and stops generating for them).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{bin, fast_sim_with_progress, text, tokenizer};
use serde_json::Value;
use servebench_sim::{EngineConfig, SimConfig, SimHandle};
use std::path::Path;
use std::time::Duration;

const MODEL: &str = "sim-model";

/// An engine whose prefill is slow next to its decode: 20k prompt tokens/s, 2 ms steps.
fn engine(decode_step_ms: u64) -> EngineConfig {
    EngineConfig {
        max_num_seqs: 64,
        kv_capacity_tokens: 4_000_000,
        prefill_tokens_per_s: 20_000.0,
        max_num_batched_tokens: 8192,
        decode_step_base: Duration::from_millis(decode_step_ms),
        decode_per_seq: Duration::ZERO,
        jitter: 0.0,
        prefix_caching: false,
        block_size: 16,
        prefix_cache_blocks: 0,
        spec_k: 0,
        spec_acceptance: 0.7,
    }
}

async fn start_sim(e: EngineConfig) -> SimHandle {
    let tok = servebench_data::load_tokenizer(tokenizer().to_str().unwrap()).unwrap();
    let cfg = SimConfig::new(MODEL, tok).with_engine(e).with_ground_truth(true);
    servebench_sim::start(cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

/// Runs the binary against `addr` with `extra`; returns the result JSON and the records.
async fn run(addr: std::net::SocketAddr, dir: &Path, extra: &[&str]) -> (Value, Vec<Value>) {
    let (result, records) = (dir.join("r.json"), dir.join("r.records.jsonl"));
    let mut cmd = bin();
    cmd.args(["--base-url", &format!("http://{addr}"), "--model", MODEL, "--disable-tqdm"])
        .arg("--tokenizer")
        .arg(tokenizer())
        .args(["--save-result", "--result-dir", dir.to_str().unwrap(), "--result-filename", "r.json"])
        .arg("--records")
        .arg(&records)
        .args(extra);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert!(out.status.success(), "stdout:\n{}\nstderr:\n{}", text(&out.stdout), text(&out.stderr));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(result).unwrap()).unwrap();
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");
    let recs = std::fs::read_to_string(records)
        .unwrap()
        .lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("index").is_some())
        .collect();
    (json, recs)
}

/// Most requests at one instant between `dispatched` and their first token (their end when
/// they had none), over half-open intervals.
fn peak_in_prefill(recs: &[Value]) -> usize {
    let mut edges = Vec::new();
    for r in recs {
        let Some(d) = r["dispatched_us"].as_u64() else { continue };
        let end = r["first_token_us"].as_u64().or(r["done_us"].as_u64()).expect("an end");
        edges.push((d, 1i64));
        edges.push((end, -1));
    }
    // Ends before starts at the same µs: half-open intervals.
    edges.sort_unstable();
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, step) in edges {
        now += step;
        peak = peak.max(now);
    }
    peak as usize
}

const LONG_PROMPTS: &[&str] =
    &["--num-prompts", "16", "--random-input-len", "1500", "--random-output-len", "8", "--ignore-eos"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefill_cap_bounds_requests_between_dispatch_and_first_token() {
    let sim = start_sim(engine(2)).await;
    let addr = sim.local_addr();
    let dir = tempfile::tempdir().unwrap();
    let mut capped = LONG_PROMPTS.to_vec();
    capped.extend(["--max-prefill-concurrency", "2"]);
    let (json, recs) = run(addr, dir.path(), &capped).await;
    assert_eq!(json["completed"], 16, "{json}");
    assert_eq!(recs.len(), 16);
    let peak = peak_in_prefill(&recs);
    assert!(peak <= 2, "{peak} requests in prefill at once with a cap of 2");
    assert!(recs.iter().all(|r| r["prefill_wait_us"].is_u64()), "every record says how long it waited");
    assert!(json["mean_prefill_wait_ms"].as_f64().unwrap() > 0.0, "16 at once through 2 slots wait: {json}");
    assert!(json["p99_prefill_wait_ms"].is_f64());
    // The wait is before dispatch: inside the response view and queue time, outside TTFT.
    for r in &recs {
        let (i, g, d) = (
            r["intended_us"].as_u64().unwrap(),
            r["gate_us"].as_u64().unwrap(),
            r["dispatched_us"].as_u64().unwrap(),
        );
        assert!(i + r["prefill_wait_us"].as_u64().unwrap() <= g && g <= d, "{r}");
    }

    // Not a no-op: the same load without the cap has more than 2 in prefill at once.
    let dir = tempfile::tempdir().unwrap();
    let (json, recs) = run(addr, dir.path(), LONG_PROMPTS).await;
    assert_eq!(json["completed"], 16);
    assert!(peak_in_prefill(&recs) > 2, "without the cap: {}", peak_in_prefill(&recs));
    assert!(json.get("mean_prefill_wait_ms").is_none(), "no cap, no prefill-wait keys");
    assert!(recs.iter().all(|r| r.get("prefill_wait_us").is_none()));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_by_design_abandons_the_chosen_requests_and_the_server_stops_them() {
    // 400 output tokens at 5 ms a step: 2 s a request; the chosen ones are cut at 0.3 s.
    let sim = start_sim(engine(5)).await;
    let addr = sim.local_addr();
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--num-prompts",
        "12",
        "--random-input-len",
        "32",
        "--random-output-len",
        "400",
        "--ignore-eos",
        "--request-cancellation-rate",
        "50",
        "--request-cancellation-delay",
        "0.3",
        "--seed",
        "3",
    ];
    let (json, recs) = run(addr, dir.path(), &args).await;
    let chosen: Vec<&Value> = recs.iter().filter(|r| r["cancel_after_us"] == 300_000).collect();
    assert!(!chosen.is_empty() && chosen.len() < 12, "a seeded share is chosen: {}", chosen.len());
    assert!(
        chosen.iter().all(|r| r["outcome"] == "cancelled" && r["cancelled_by"] == "by_design"),
        "{chosen:?}"
    );
    let others = recs.iter().filter(|r| r.get("cancel_after_us").is_none());
    assert!(others.clone().all(|r| r["outcome"] == "completed"));
    let n = chosen.len() as u64;
    assert_eq!(json["cancelled_by_design"], n);
    assert_eq!(json["request_cancellation"]["selected"], n);
    assert_eq!(json["cancelled"], n);
    assert_eq!(
        json["completed"].as_u64().unwrap() + json["failed"].as_u64().unwrap() + n,
        12,
        "counts add up"
    );
    assert_eq!(json["completed"].as_u64().unwrap(), 12 - n);
    // The server saw each abandonment: no end of response, fewer tokens than planned.
    let truth = sim.ground_truth();
    for r in &chosen {
        let id = r["request_id"].as_str().unwrap();
        let t = truth.iter().find(|t| t.request_id == id).expect("the server got the chosen request");
        assert!(t.done.is_none(), "{id}: the server finished a response its client abandoned");
        let sent: u32 = t.events.iter().map(|e| e.tokens).sum();
        assert!(sent < t.completion_tokens, "{id}: {sent} of {} tokens sent", t.completion_tokens);
    }
    sim.shutdown().await;
}

#[test]
fn bad_client_control_combinations_are_coded_errors_before_anything_is_sent() {
    let url = format!("http://127.0.0.1:{}", servebench_testkit::net::closed_port());
    let case = |extra: &[&str]| {
        let out = bin()
            .args(["--base-url", &url, "--model", MODEL, "--num-prompts", "2"])
            .arg("--tokenizer")
            .arg(tokenizer())
            .args(extra)
            .output()
            .unwrap();
        (out.status.code(), text(&out.stderr))
    };
    let (code, err) = case(&["--backend", "openai-embeddings", "--max-prefill-concurrency", "2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("SB122"), "{err}");
    let (code, err) = case(&["--max-concurrency", "2", "--max-prefill-concurrency", "3"]);
    assert!(code == Some(2) && err.contains("SB123"), "{err}");
    let (code, err) = case(&["--request-cancellation-rate", "10"]);
    assert!(
        code == Some(2) && err.contains("SB124") && err.contains("--request-cancellation-delay"),
        "{err}"
    );
    let (code, err) = case(&["--request-cancellation-delay", "0.5"]);
    assert!(code == Some(2) && err.contains("SB124"), "{err}");
    for bad in [
        ["--request-cancellation-rate", "0"],
        ["--request-cancellation-rate", "101"],
        ["--max-prefill-concurrency", "0"],
    ] {
        let (code, err) = case(&bad);
        assert!(code == Some(2) && err.contains("SB101"), "{bad:?}: {err}");
    }
}

#[test]
fn progress_line_shows_prefill_waiting_only_with_a_prefill_cap() {
    // stderr is a pipe: the plain progress line, printed once more at the end of the phase.
    let run = |extra: &[&str]| {
        let out = fast_sim_with_progress(extra);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let capped = run(&["--max-prefill-concurrency", "1"]);
    let line = capped
        .lines()
        .find(|l| l.contains(" done: "))
        .unwrap_or_else(|| panic!("no progress line:\n{capped}"));
    // Nobody waits once every request has ended.
    assert!(line.contains("in flight, 0 waiting for prefill |"), "{line}");
    let plain = run(&[]);
    assert!(plain.contains(" done: ") && !plain.contains("prefill"), "{plain}");
}
