//! The reduced result of pooling backends (embeddings, embeddings-chat, pooling, rerank), as
//! `vllm bench serve` prints and writes it: the " Embedding/Pooling Benchmark Result " block
//! without generation rows (no generated tokens, output/peak-output throughput), input token
//! throughput instead of total, and in the JSON `total_input_tokens` taken from the server's
//! `usage.prompt_tokens` (the client count where missing), no `total_output_tokens` or
//! generation throughputs, and always `input_lens` and `errors`; ours beside them:
//! `input_throughput` and `max_concurrent_requests` (the console's peak concurrency row).

use std::fmt::Write as _;

use crate::per_request::{Column, PerRequestArrays};
use serde_json::{Map, Value};
use servebench_core::metrics::{MetricName, RunMetrics};
use servebench_core::RecordSet;

use crate::fmt::metric_reported;
use crate::fmt::{row_f2, row_int, row_opt_f2, row_rate, stats_section, vllm_header, WIDTH};
use crate::info::RunInfo;

/// Whether `backend` (the `--backend` name) is a pooling backend.
pub fn is_pooling_backend(backend: &str) -> bool {
    matches!(
        backend,
        "openai-embeddings"
            | "openai-embeddings-chat"
            | "openai-embeddings-clip"
            | "openai-embeddings-vlm2vec"
            | "infinity-embeddings"
            | "infinity-embeddings-clip"
            | "vllm-pooling"
            | "vllm-rerank"
    )
}

fn per_second(x: f64, duration_s: f64) -> Value {
    crate::fmt::rate_json(duration_s, if duration_s > 0.0 { x / duration_s } else { 0.0 })
}

/// vLLM's pooling block (without the closing servebench block).
pub fn console_block(info: &RunInfo, m: &RunMetrics) -> String {
    let mut out = String::new();
    crate::fmt::result_head(&mut out, " Embedding/Pooling Benchmark Result ", info, m);
    row_int(&mut out, "Total input tokens:", m.server_first_input_tokens);
    let d = m.duration_s;
    row_rate(&mut out, "Request throughput (req/s):", d, m.request_throughput);
    if let Some(g) = m.request_goodput {
        row_rate(&mut out, "Request goodput (req/s):", d, g);
    }
    row_opt_f2(&mut out, "Input token throughput (tok/s):", input_throughput(m).as_f64());
    row_f2(&mut out, "Peak concurrent requests:", m.max_concurrent_requests as f64);
    for metric in MetricName::ALL {
        if metric_reported(info, m, metric) {
            let (header, short) = vllm_header(metric);
            stats_section(&mut out, header, short, m.summary(metric));
        }
    }
    let _ = writeln!(out, "{}", "=".repeat(WIDTH));
    out
}

/// The pooling result's input token throughput (its `total_token_throughput`, and
/// `input_throughput` for scripts that read the generic key): server-counted input tokens per
/// second (docs/metrics.md, "Pooling input tokens"). The console, the result JSON and the HTML
/// report's total tokens/s all take it from here.
pub fn input_throughput(m: &RunMetrics) -> Value {
    per_second(m.server_first_input_tokens as f64, m.duration_s)
}

/// The keys a pooling result ends with: `input_lens` (the server's prompt token counts, the
/// client's where missing) and `errors` when `--save-detailed` did not write them already,
/// then `input_throughput`. The generation keys a pooling result lacks are never written
/// (`crate::json::result_json`).
pub fn insert_keys<S: RecordSet + ?Sized>(
    o: &mut Map<String, Value>,
    arrays: &mut PerRequestArrays,
    m: &RunMetrics,
    records: &S,
    detailed: bool,
) {
    if !detailed {
        let order = crate::per_request::IndexOrder::of(records);
        let lens = order.values(records, |r| u64::from(r.server_prompt_tokens.unwrap_or(r.prompt_tokens)));
        arrays.insert(o, "input_lens", Column::Counts(lens));
        arrays.insert(o, "errors", Column::Texts(order.values(records, |r| r.error_entry())));
    }
    // Ours, for scripts that read the generic keys: the input throughput under its usual name.
    o.insert("input_throughput".into(), input_throughput(m));
}
