//! Trace replay: a committed Mooncake-format trace replayed against the in-process simulator
//! in engine mode with prefix caching. Rows sharing leading hash ids share token blocks, so the
//! simulator reports exactly those blocks as cached in `usage.prompt_tokens_details`; requests
//! are sent on the trace's timestamps (× the multiplier).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use servebench_client::backend::BackendKind;
use servebench_core::metrics::groups::schedule_lag;
use servebench_core::Outcome;
use servebench_data::trace::{parse_trace, TraceConfig, TraceLabels};
use servebench_runner::DatasetSpec;
use servebench_sim::{EngineConfig, SimConfig};
use std::path::PathBuf;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/mooncake_small.jsonl")
}

/// Full 16-token blocks shared with the best earlier row: what a prefix cache can hold.
fn expected_cached(rows: &[servebench_data::trace::TraceRow], i: usize) -> u32 {
    let full = |r: &servebench_data::trace::TraceRow| (r.input_length / 16) as usize;
    (0..i)
        .map(|j| {
            let (a, b) = (&rows[i], &rows[j]);
            let n = full(a).min(full(b)).min(a.hash_ids.len()).min(b.hash_ids.len());
            (0..n).take_while(|&k| a.hash_ids[k] == b.hash_ids[k]).count() as u32 * 16
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mooncake_trace_hits_the_simulators_prefix_cache_on_the_traces_timestamps() {
    let tok = servebench_data::tokenizer::load_tokenizer(crate::common::TOKENIZER).unwrap();
    let mut engine = EngineConfig::h100_8b();
    engine.jitter = 0.0;
    engine.block_size = 16;
    let sim = servebench_sim::start(
        SimConfig::new("trace-model", tok).with_engine(engine),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let multiplier = 2.0;
    let mut cfg = crate::common::config(sim.base_url(), "trace-model", BackendKind::Completions, 1000);
    cfg.dataset = DatasetSpec::TimedTrace(TraceConfig {
        path: fixture(),
        labels: TraceLabels::default(),
        chunk_size: 16,
        sec_multiplier: multiplier,
        num_prompts: 1000,
        seed: 0,
        max_model_len: None,
        self_timed: true,
        replay_end_ms: None,
    });
    // One request at a time: each prefill is done (and cached) before the next request is sent,
    // whatever the machine's load, so the cache hits are exact.
    cfg.max_concurrency = Some(1);
    let records = crate::common::run(cfg).await;
    let rows = parse_trace(&std::fs::read_to_string(fixture()).unwrap(), &TraceLabels::default()).unwrap();
    assert_eq!(records.len(), rows.len());
    for (i, (r, row)) in records.iter().zip(&rows).enumerate() {
        assert_eq!(r.outcome, Outcome::Completed, "row {i}: {:?}", r.error);
        // Arrivals from the trace: (timestamp − first) × multiplier.
        assert_eq!(r.intended_us, (row.timestamp_ms * multiplier * 1000.0) as u64, "row {i}");
        assert_eq!(r.prompt_tokens, row.input_length);
        assert_eq!(r.server_prompt_tokens, Some(row.input_length), "row {i}");
        assert_eq!(r.cached_prompt_tokens, Some(expected_cached(&rows, i)), "row {i}");
    }
    // The fixture shares prefixes: some rows must hit the cache.
    assert!(records.iter().filter(|r| r.cached_prompt_tokens.unwrap_or(0) > 0).count() >= 5);
    let lag = schedule_lag(&records, &[]);
    assert_eq!(lag.dispatched, rows.len() as u64);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_trace_gives_the_same_prompts_on_every_run() {
    let tok = servebench_data::tokenizer::load_tokenizer(crate::common::TOKENIZER).unwrap();
    let cfg = TraceConfig {
        path: fixture(),
        labels: TraceLabels::default(),
        chunk_size: 16,
        sec_multiplier: 1.0,
        num_prompts: 1000,
        seed: 0,
        max_model_len: Some(70),
        self_timed: true,
        replay_end_ms: None,
    };
    let a = servebench_data::trace::build_trace_workload(&cfg, tok.as_ref()).unwrap();
    let b = servebench_data::trace::build_trace_workload(&cfg, tok.as_ref()).unwrap();
    assert_eq!(a.workload, b.workload);
    // --max-model-len 70 drops the rows with input + output > 70 (80, 96 and 100 tokens in).
    assert_eq!(a.filtered_out, 3);
    assert_eq!(a.offsets_us.len(), a.workload.len());
}
