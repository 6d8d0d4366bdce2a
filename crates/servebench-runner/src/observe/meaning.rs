//! Built-in meaning of engine metric names: which series of vLLM, SGLang, TGI, llama.cpp,
//! TensorRT-LLM and NVIDIA Dynamo stand for the queue, the running batch, KV-cache usage, the
//! prefix cache, preemptions, the server's TTFT/ITL/E2E histograms and the token counters
//! (docs/metrics.md, "Server metrics of every engine", has the same table with its sources).
//!
//! Sources, one per engine (checked 2026-12-05; docs/server-metrics.md has the URLs):
//! - vLLM: `vllm/v1/metrics/loggers.py` (PrometheusStatLogger) and docs.vllm.ai "Metrics";
//! - SGLang: `python/sglang/srt/metrics/collector.py` (`sglang:` names; the retraction counter
//!   is `sglang:num_retracted_requests_total`, cached prompt tokens `sglang:cached_tokens_total`);
//! - TGI: `router/src` of text-generation-inference (`metrics::gauge!("tgi_batch_current_size")`,
//!   `tgi_queue_size`, histograms `tgi_request_duration`, `tgi_request_mean_time_per_token_duration`,
//!   `tgi_request_input_length`, `tgi_request_generated_tokens`);
//! - llama.cpp: `tools/server/server.cpp` `/metrics` (`llamacpp:` names, with `--metrics`; no
//!   KV-cache usage since `llamacpp:kv_cache_usage_ratio` was removed);
//! - TensorRT-LLM: `tensorrt_llm/metrics/collector.py` (MetricsCollector, `trtllm_` prefix);
//! - Dynamo: `lib/runtime/src/metrics/prometheus_names.rs` (`dynamo_frontend_*`, and the
//!   worker's `dynamo_component_gpu_cache_usage_percent`, formerly
//!   `dynamo_component_kvstats_gpu_cache_usage_percent`).

use serde::Serialize;

/// A canonical meaning of a server series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Meaning {
    /// Requests waiting for admission (gauge).
    Queue,
    /// Requests in the running batch (gauge).
    Running,
    /// KV-cache usage, 0..1 (gauge).
    KvCacheUsage,
    /// Prompt tokens (or blocks) found in the prefix cache (counter).
    PrefixCacheHits,
    /// Prompt tokens (or blocks) looked up in the prefix cache (counter).
    PrefixCacheQueries,
    /// Prompt blocks looked up and not found (counter; TensorRT-LLM counts misses, not queries).
    PrefixCacheMisses,
    /// Requests preempted (SGLang: retracted) (counter).
    Preemptions,
    /// Server-side time to first token, seconds (histogram).
    Ttft,
    /// Server-side inter-token latency (TGI: mean time per token of a request), seconds (histogram).
    Itl,
    /// Server-side request latency, seconds (histogram).
    E2e,
    /// Prompt tokens processed (counter).
    PromptTokens,
    /// Tokens generated (counter).
    GenerationTokens,
}

/// How a meaning's series behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Gauge,
    Counter,
    Histogram,
}

impl Meaning {
    /// Every meaning, in the order summaries list them.
    pub const ALL: [Meaning; 12] = [
        Meaning::Queue,
        Meaning::Running,
        Meaning::KvCacheUsage,
        Meaning::PrefixCacheHits,
        Meaning::PrefixCacheQueries,
        Meaning::PrefixCacheMisses,
        Meaning::Preemptions,
        Meaning::Ttft,
        Meaning::Itl,
        Meaning::E2e,
        Meaning::PromptTokens,
        Meaning::GenerationTokens,
    ];

    /// The key of the meaning in the result (`server_metrics.endpoints[].meanings`).
    pub fn key(self) -> &'static str {
        match self {
            Meaning::Queue => "queue",
            Meaning::Running => "running",
            Meaning::KvCacheUsage => "kv_cache_usage",
            Meaning::PrefixCacheHits => "prefix_cache_hits",
            Meaning::PrefixCacheQueries => "prefix_cache_queries",
            Meaning::PrefixCacheMisses => "prefix_cache_misses",
            Meaning::Preemptions => "preemptions",
            Meaning::Ttft => "ttft",
            Meaning::Itl => "itl",
            Meaning::E2e => "e2e",
            Meaning::PromptTokens => "prompt_tokens",
            Meaning::GenerationTokens => "generation_tokens",
        }
    }

    /// Gauge, counter or histogram.
    pub fn shape(self) -> Shape {
        match self {
            Meaning::Queue | Meaning::Running | Meaning::KvCacheUsage => Shape::Gauge,
            Meaning::Ttft | Meaning::Itl | Meaning::E2e => Shape::Histogram,
            _ => Shape::Counter,
        }
    }
}

/// The engines whose names are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Vllm,
    Sglang,
    Trtllm,
    Tgi,
    Llamacpp,
    Dynamo,
}

impl Engine {
    /// The engine's name in the result.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Trtllm => "trtllm",
            Engine::Tgi => "tgi",
            Engine::Llamacpp => "llamacpp",
            Engine::Dynamo => "dynamo",
        }
    }
}

/// One row of the table: `name` of `engine` means `meaning`. Counter rows may name a
/// histogram's `_sum` (TGI and Dynamo count tokens only in per-request histograms); histogram
/// rows name the family (without `_bucket`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Name {
    pub engine: Engine,
    pub meaning: Meaning,
    pub name: &'static str,
}

const fn n(engine: Engine, meaning: Meaning, name: &'static str) -> Name {
    Name { engine, meaning, name }
}

use Engine::*;
use Meaning::*;

/// The table. For one meaning, the first row (in this order) whose series the scrape has is
/// the one read: engines' own names before Dynamo's (a Dynamo worker passes its engine's series
/// through), new names before old ones.
pub const NAMES: &[Name] = &[
    // vLLM (vllm/v1/metrics/loggers.py)
    n(Vllm, Queue, "vllm:num_requests_waiting"),
    n(Vllm, Running, "vllm:num_requests_running"),
    n(Vllm, KvCacheUsage, "vllm:kv_cache_usage_perc"),
    n(Vllm, KvCacheUsage, "vllm:gpu_cache_usage_perc"),
    n(Vllm, PrefixCacheHits, "vllm:prefix_cache_hits_total"),
    n(Vllm, PrefixCacheQueries, "vllm:prefix_cache_queries_total"),
    n(Vllm, Preemptions, "vllm:num_preemptions_total"),
    n(Vllm, Ttft, "vllm:time_to_first_token_seconds"),
    n(Vllm, Itl, "vllm:inter_token_latency_seconds"),
    n(Vllm, Itl, "vllm:time_per_output_token_seconds"),
    n(Vllm, E2e, "vllm:e2e_request_latency_seconds"),
    n(Vllm, PromptTokens, "vllm:prompt_tokens_total"),
    n(Vllm, GenerationTokens, "vllm:generation_tokens_total"),
    // SGLang (python/sglang/srt/metrics/collector.py): no queries counter; the prompt tokens are
    // what was looked up.
    n(Sglang, Queue, "sglang:num_queue_reqs"),
    n(Sglang, Running, "sglang:num_running_reqs"),
    n(Sglang, KvCacheUsage, "sglang:token_usage"),
    n(Sglang, PrefixCacheHits, "sglang:cached_tokens_total"),
    n(Sglang, PrefixCacheQueries, "sglang:prompt_tokens_total"),
    n(Sglang, Preemptions, "sglang:num_retracted_requests_total"),
    n(Sglang, Ttft, "sglang:time_to_first_token_seconds"),
    n(Sglang, Itl, "sglang:inter_token_latency_seconds"),
    n(Sglang, E2e, "sglang:e2e_request_latency_seconds"),
    n(Sglang, PromptTokens, "sglang:prompt_tokens_total"),
    n(Sglang, GenerationTokens, "sglang:generation_tokens_total"),
    // TensorRT-LLM (tensorrt_llm/metrics/collector.py): prefix reuse counted in blocks.
    n(Trtllm, Queue, "trtllm_num_requests_waiting"),
    n(Trtllm, Running, "trtllm_num_requests_running"),
    n(Trtllm, KvCacheUsage, "trtllm_kv_cache_utilization"),
    n(Trtllm, PrefixCacheHits, "trtllm_kv_cache_reused_blocks_total"),
    n(Trtllm, PrefixCacheMisses, "trtllm_kv_cache_missed_blocks_total"),
    n(Trtllm, Ttft, "trtllm_time_to_first_token_seconds"),
    n(Trtllm, Itl, "trtllm_time_per_output_token_seconds"),
    n(Trtllm, E2e, "trtllm_e2e_request_latency_seconds"),
    n(Trtllm, PromptTokens, "trtllm_prompt_tokens_total"),
    n(Trtllm, GenerationTokens, "trtllm_generation_tokens_total"),
    // TGI (router/src/*.rs): tokens only as per-request histograms; no TTFT histogram.
    n(Tgi, Queue, "tgi_queue_size"),
    n(Tgi, Running, "tgi_batch_current_size"),
    n(Tgi, Itl, "tgi_request_mean_time_per_token_duration"),
    n(Tgi, E2e, "tgi_request_duration"),
    n(Tgi, PromptTokens, "tgi_request_input_length_sum"),
    n(Tgi, GenerationTokens, "tgi_request_generated_tokens_sum"),
    // llama.cpp (tools/server/server.cpp, `--metrics`); kv_cache_usage_ratio is gone from
    // current builds (kept for older ones: OLDER_NAMES).
    n(Llamacpp, Queue, "llamacpp:requests_deferred"),
    n(Llamacpp, Running, "llamacpp:requests_processing"),
    n(Llamacpp, KvCacheUsage, "llamacpp:kv_cache_usage_ratio"),
    n(Llamacpp, PromptTokens, "llamacpp:prompt_tokens_total"),
    n(Llamacpp, GenerationTokens, "llamacpp:tokens_predicted_total"),
    // NVIDIA Dynamo (lib/runtime/src/metrics/prometheus_names.rs): the frontend's view.
    n(Dynamo, Queue, "dynamo_frontend_queued_requests"),
    n(Dynamo, Running, "dynamo_frontend_inflight_requests"),
    n(Dynamo, KvCacheUsage, "dynamo_component_gpu_cache_usage_percent"),
    n(Dynamo, KvCacheUsage, "dynamo_component_kvstats_gpu_cache_usage_percent"),
    n(Dynamo, PrefixCacheHits, "dynamo_frontend_cached_tokens_sum"),
    n(Dynamo, PrefixCacheQueries, "dynamo_frontend_input_sequence_tokens_sum"),
    n(Dynamo, Ttft, "dynamo_frontend_time_to_first_token_seconds"),
    n(Dynamo, Itl, "dynamo_frontend_inter_token_latency_seconds"),
    n(Dynamo, E2e, "dynamo_frontend_request_duration_seconds"),
    n(Dynamo, PromptTokens, "dynamo_frontend_input_sequence_tokens_sum"),
    n(Dynamo, GenerationTokens, "dynamo_frontend_output_tokens_total"),
];

/// Names of [`NAMES`] that current versions of their engine no longer export, kept so that
/// older servers are still read: vLLM's pre-0.10 KV gauge and pre-0.11 ITL histogram (the
/// simulator's vLLM personality still serves both, to test the fallback), llama.cpp's KV-cache
/// ratio (removed from `tools/server`), Dynamo's KV gauge before it lost its `kvstats_` infix.
pub const OLDER_NAMES: &[&str] = &[
    "vllm:gpu_cache_usage_perc",
    "vllm:time_per_output_token_seconds",
    "llamacpp:kv_cache_usage_ratio",
    "dynamo_component_kvstats_gpu_cache_usage_percent",
];

/// The rows of `meaning`, in precedence order.
pub fn rows(meaning: Meaning) -> impl Iterator<Item = &'static Name> {
    NAMES.iter().filter(move |r| r.meaning == meaning)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_names_queue_running_and_e2e_and_names_are_unique_per_meaning() {
        for e in [Vllm, Sglang, Trtllm, Tgi, Llamacpp, Dynamo] {
            for m in [Queue, Running] {
                assert!(NAMES.iter().any(|r| r.engine == e && r.meaning == m), "{e:?} {m:?}");
            }
        }
        for (i, a) in NAMES.iter().enumerate() {
            assert!(!NAMES[i + 1..].iter().any(|b| b.meaning == a.meaning && b.name == a.name), "{a:?}");
            let prefix_ok = match a.engine {
                Vllm => a.name.starts_with("vllm:"),
                Sglang => a.name.starts_with("sglang:"),
                Trtllm => a.name.starts_with("trtllm_"),
                Tgi => a.name.starts_with("tgi_"),
                Llamacpp => a.name.starts_with("llamacpp:"),
                Dynamo => a.name.starts_with("dynamo_"),
            };
            assert!(prefix_ok, "{a:?}");
        }
        assert_eq!(Meaning::ALL.len(), 12);
        for old in OLDER_NAMES {
            let row = NAMES.iter().find(|r| r.name == *old).expect("an older name is a row");
            // A newer name of the same engine and meaning is read first.
            let first = NAMES.iter().find(|r| r.engine == row.engine && r.meaning == row.meaning);
            assert!(first.is_some_and(|f| !OLDER_NAMES.contains(&f.name)) || row.engine == Llamacpp, "{old}");
        }
        assert_eq!(rows(KvCacheUsage).next().map(|r| r.name), Some("vllm:kv_cache_usage_perc"));
    }
}
