//! One benchmark run, end to end: prepare (`preparing`: model, tokenizer, workload, readiness,
//! prompt check), then the measured phase (`measured`: warm up, dispatch on the schedule,
//! collect records as each request ends, measure the client's health); around the measured phase,
//! the server side (`server_side`: `/metrics` scraping and profiling).

mod measured;
mod preparing;
mod priming;
pub use priming::PrefixCacheRun;

pub use measured::run_prepared;
pub use preparing::{prepare_experiment, prepare_run, rebuild_workload};

use crate::config::RunConfig;
use crate::observe::health::HealthSamples;
use crate::observe::observer::RunObserver;
use crate::prepare::prompt_check::PromptCheck;
use crate::prepare::ModelIds;
use crate::records::retokenize::Retokenizer;
use servebench_client::request::{ExecOptions, RequestTarget};
use servebench_client::transport::HttpClient;
use servebench_core::{RequestRecord, Requests, Result, RunClock, TextTokenizer};
use std::sync::Arc;

/// `--tokenizer server`: use the server's `/tokenize` and `/detokenize`.
pub const SERVER_TOKENIZER: &str = "server";

/// Statistics of the workload (also the output of `--dry-run`).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadStats {
    pub requests: usize,
    pub total_prompt_tokens: u64,
    pub total_expected_output_tokens: u64,
    pub min_prompt_tokens: u32,
    pub max_prompt_tokens: u32,
    pub filtered_out: usize,
    pub build_seconds: f64,
    /// Prompt and expected-output length distributions (printed by `--dry-run`).
    pub lengths: servebench_data::dataset::DatasetStats,
    /// What the load would send of the workload (`--dry-run` only): set when its schedule is
    /// not simply every request (`--duration`, `--stages`, a trace, conversations).
    pub scheduled: Option<ScheduledLoad>,
}

/// The requests a run's schedule places before its end, as `--dry-run` shows them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScheduledLoad {
    /// Scheduled arrivals: this many requests (or conversations), the last at `last_s`.
    Arrivals { requests: usize, last_s: f64, conversations: bool },
    /// A closed loop (`c=N` stages): as many requests as the stages' slots complete by `end_s`.
    ClosedLoop { end_s: f64 },
    /// `--duration` at an infinite rate: up to `requests`, each sent as a `--max-concurrency`
    /// slot frees, until `end_s` (those still waiting then are cancelled).
    Gated { requests: usize, end_s: f64 },
}

impl WorkloadStats {
    /// From the requests' lengths (lazy requests are not built for it; they carry no
    /// multimodal parts).
    fn of(w: &Requests, filtered_out: usize, build_seconds: f64) -> Self {
        let lengths = match w {
            Requests::Held(w) => servebench_data::dataset::DatasetStats::of(w),
            Requests::Lazy(_) => {
                let (p, o) = w.metas().map(|m| (m.prompt_tokens, m.expected_output_tokens)).unzip();
                servebench_data::dataset::DatasetStats::of_lengths(p, o)
            }
        };
        WorkloadStats {
            requests: w.len(),
            total_prompt_tokens: w.total_prompt_tokens(),
            total_expected_output_tokens: w.total_expected_output_tokens(),
            min_prompt_tokens: lengths.prompt.min,
            max_prompt_tokens: lengths.prompt.max,
            filtered_out,
            build_seconds,
            lengths,
            scheduled: None,
        }
    }
}

/// Everything a finished run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// One record per request of the workload, in workload order, held as bytes (a
    /// [`RecordSet`](servebench_core::RecordSet) to walk; `to_vec` for outputs that need them
    /// all at once).
    pub records: servebench_core::CompactRecords,
    pub model: ModelIds,
    pub tokenizer_id: String,
    pub clock: RunClock,
    pub health: HealthSamples,
    pub workload: WorkloadStats,
    /// The prompt-length check and the server's `/tokenize` dialect.
    pub verification: PromptCheck,
    /// End-of-run notices (each shown with its one severity prefix).
    pub warnings: Vec<crate::observe::notice::Notice>,
    /// The run was stopped early (Ctrl-C / SIGTERM).
    pub interrupted: bool,
    /// `--probe-request-rate`: the probes' records in send order (in no metric of the run).
    pub probe_records: Vec<RequestRecord>,
    /// The run stopped early (`--detect-saturation`, `--max-error-rate`, `--max-errors`).
    pub early_stop: Option<servebench_core::early_stop::EarlyStopReport>,
    /// A controlled prefix-cache hit rate: the layout and the priming records (warm-up, in no
    /// metric).
    pub prefix_cache: Option<PrefixCacheRun>,
}

/// What `run_benchmark` returns.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // built once per run; the dry-run variant is short-lived
pub enum RunResult {
    DryRun { model: ModelIds, tokenizer_id: String, workload: WorkloadStats },
    Completed(Box<RunOutput>),
}

fn client_headers(cfg: &RunConfig) -> Result<http::HeaderMap> {
    servebench_client::build_headers(&cfg.target)
}

/// Runs one benchmark. `stop` ends the measured phase early (Ctrl-C): requests not yet sent
/// become cancelled records; its `abandon` (a second Ctrl-C) cancels those in flight too.
pub async fn run_benchmark(
    cfg: RunConfig,
    observer: Arc<dyn RunObserver>,
    stop: impl Into<crate::load::stops::Interrupts>,
) -> Result<RunResult> {
    let stop = stop.into();
    match prepare_run(&cfg, &observer).await? {
        Prepared::DryRun { model, tokenizer_id, workload } => {
            Ok(RunResult::DryRun { model, tokenizer_id, workload })
        }
        Prepared::Ready(p) => {
            let n = p.workload.len();
            Ok(RunResult::Completed(Box::new(run_prepared(&p, &cfg, n, observer, stop).await?)))
        }
    }
}

/// What [`prepare_run`] produced: the statistics only (`--dry-run`) or everything a measured
/// phase needs.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // built once per run; the dry-run variant is short-lived
pub enum Prepared {
    DryRun { model: ModelIds, tokenizer_id: String, workload: WorkloadStats },
    Ready(Box<PreparedRun>),
}

/// The part of a run done once and reused by every point of an experiment (sweep, search,
/// multi-run): connection pool, model, tokenizer-built workload (verified), request target.
#[derive(Debug, Clone)]
pub struct PreparedRun {
    pub client: HttpClient,
    /// The user's headers and API key (for control-plane calls: profiling, cache reset).
    pub headers: http::HeaderMap,
    pub model: ModelIds,
    pub tokenizer_id: String,
    /// The measured requests: held, or built on demand (the random dataset, traces).
    pub workload: Requests,
    pub stats: WorkloadStats,
    /// The prompt-length check and the server's `/tokenize` dialect.
    pub verification: PromptCheck,
    pub target: Arc<RequestTarget>,
    pub exec_opts: Arc<ExecOptions>,
    /// End-of-run notices (each shown with its one severity prefix).
    pub warnings: Vec<crate::observe::notice::Notice>,
    /// Trace arrivals, conversations, LoRA targets (crate::load).
    pub load: crate::load::LoadPlan,
    /// Counts generated text with the client tokenizer (`None` with `--tokenizer server`).
    pub retokenizer: Option<Arc<Retokenizer>>,
    /// The client tokenizer, kept only for experiments whose points build prompts of their
    /// own ([`prepare_experiment`], [`rebuild_workload`]).
    pub tokenizer: Option<Arc<dyn TextTokenizer>>,
}
