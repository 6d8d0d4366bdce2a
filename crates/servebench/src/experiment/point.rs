//! One point of an experiment: the measured phase over the prepared workload with the point's
//! rate, concurrency, prompt count and seed, then the same result document a single run writes.

use super::extras::{
    add_to_result, rate_word, server_metrics_block, steady_state_block, steady_state_of, ServerSide,
};
use crate::cli::RunArgs;
use crate::config::OutputConfig;
use serde_json::Value;
use servebench_client::transport::HttpClient;
use servebench_core::metrics::{compute, MetricsConfig, RunMetrics};
use servebench_core::{Outcome, RequestRecord};
use servebench_report::{console_block, result_json};
use servebench_runner::observe::profiling::reset_prefix_cache;
use servebench_runner::{run_prepared, CancellationToken, PreparedRun, RunConfig, RunObserver};
use std::sync::Arc;

/// Everything the points of one experiment share.
pub struct Ctx<'a> {
    pub args: &'a RunArgs,
    pub base: RunConfig,
    pub output: OutputConfig,
    pub prepared: PreparedRun,
    /// Control-plane client (its own pool): cache resets, /metrics, profiler.
    pub control: HttpClient,
    pub stop: CancellationToken,
    /// Percentiles computed for every point (the user's plus what summaries and SLOs need).
    pub percentiles: Vec<f64>,
    /// Print each point's full result block.
    pub verbose: bool,
    /// The first point without a successful request (SB602: the experiment exits 1).
    pub no_success: std::sync::Mutex<Option<servebench_core::BenchError>>,
    /// Points run so far (the index of the next one: it seeds the point's own prompts).
    pub points_run: std::sync::atomic::AtomicU64,
}

/// The seed of point `k`'s prompts: the run's seed for the first point (so it is the single run
/// with that seed), a SplitMix64 mix of the seed and `k` after.
pub fn prompt_seed(seed: u64, k: u64) -> u64 {
    if k == 0 {
        return seed;
    }
    let mut z = seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What a point runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSpec {
    pub label: String,
    pub request_rate: f64,
    pub max_concurrency: Option<usize>,
    pub num_prompts: usize,
    pub seed: u64,
}

/// What a point produced.
#[derive(Debug)]
pub struct PointOutcome {
    pub spec: PointSpec,
    pub metrics: RunMetrics,
    pub steady: Option<super::extras::Steady>,
    /// The full result document (vLLM keys, ours, `steady_state`, `server_metrics`).
    pub result: Value,
    pub records: Vec<RequestRecord>,
    pub interrupted: bool,
}

impl PointOutcome {
    /// Offered rate: (n − 1) / span of the intended send times (the schedule as realised).
    pub fn offered_rate(&self) -> Option<f64> {
        let t: Vec<u64> = self.records.iter().map(|r| r.intended_us).collect();
        rate_over(&t)
    }

    /// Achieved rate: (n − 1) / span of the completion times of completed requests.
    pub fn achieved_rate(&self) -> Option<f64> {
        let t: Vec<u64> = self
            .records
            .iter()
            .filter(|r| r.outcome == Outcome::Completed)
            .filter_map(|r| r.done_us.or(r.last_token_us))
            .collect();
        rate_over(&t)
    }
}

fn rate_over(times: &[u64]) -> Option<f64> {
    let (lo, hi) = (times.iter().min()?, times.iter().max()?);
    (times.len() >= 2 && hi > lo).then(|| (times.len() - 1) as f64 / ((hi - lo) as f64 / 1e6))
}

/// Prints status lines only (experiments print one block per point, no progress bar).
pub struct QuietObserver;

impl RunObserver for QuietObserver {
    fn message(&self, text: &str) {
        println!("{text}");
    }
}

/// Runs one point.
pub async fn run_point(ctx: &Ctx<'_>, spec: PointSpec) -> anyhow::Result<PointOutcome> {
    if ctx.args.experiment.reset_prefix_cache {
        reset_prefix_cache(&ctx.control, &ctx.prepared.headers).await?;
    }
    let mut cfg = ctx.base.clone();
    cfg.rate.request_rate = spec.request_rate;
    cfg.max_concurrency = spec.max_concurrency;
    cfg.seed = spec.seed;
    cfg.records_path = None;
    let side = ServerSide::arm(&ctx.control, &ctx.prepared.headers, &ctx.args.experiment);
    let observer = side.observer(Arc::new(QuietObserver));
    let k = ctx.points_run.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let fresh = if ctx.args.experiment.reuse_prompts || k == 0 && spec.seed == ctx.base.seed {
        None
    } else {
        servebench_runner::rebuild_workload(&ctx.prepared, &cfg, prompt_seed(spec.seed, k)).await?
    };
    let prepared = match fresh {
        Some(w) => PreparedRun { workload: w, ..ctx.prepared.clone() },
        None => ctx.prepared.clone(),
    };
    let run = run_prepared(&prepared, &cfg, spec.num_prompts, observer, ctx.stop.clone()).await;
    let extra = side.finish().await;
    let out = run?;
    let metrics_cfg = MetricsConfig {
        percentiles: ctx.percentiles.clone(),
        selected: ctx.output.percentile_metrics.clone(),
        goodput: ctx.output.goodput.clone(),
    };
    let metrics = compute(&out.records, &metrics_cfg);
    if ctx.args.experiment.reuse_prompts && k > 0 && metrics.cached_input_tokens > 0 {
        println!(
            "warning: {}: the server reports {} of {} prompt tokens served from its prefix cache: with \
             --reuse-prompts this point resends earlier points' prompts, which flatters TTFT; drop \
             --reuse-prompts (or pass --reset-prefix-cache)",
            spec.label, metrics.cached_input_tokens, metrics.total_input_tokens
        );
    }
    let mut info =
        crate::run::run_info(&ctx.output, ctx.args, &out, &cfg.rate, cfg.max_concurrency, Vec::new());
    info.num_prompts = out.records.len() as u64;
    let steady = steady_state_of(
        &out.records,
        &ctx.args.experiment,
        &ctx.output,
        spec.request_rate,
        spec.max_concurrency,
    );
    if ctx.verbose {
        println!("{}", console_block(&info, &metrics));
        if let Some(s) = &steady {
            println!("{}", steady_state_block(s));
        }
        if let Some(s) = &extra.server {
            println!("{}", server_metrics_block(s));
        }
    }
    for p in extra.profile.iter().flat_map(|p| &p.warnings) {
        println!("warning: {p}");
    }
    let mut result = result_json(&info, &metrics, &out.records, ctx.output.save_detailed);
    result["interrupted"] = Value::Bool(out.interrupted);
    add_to_result(&mut result, steady.as_ref(), extra.server.as_ref(), extra.profile.as_ref());
    Ok(PointOutcome { spec, metrics, steady, result, records: out.records, interrupted: out.interrupted })
}

/// The label of a point (`concurrency 8`, `rate 10`, `rate inf`).
pub fn label(rate: f64, concurrency: Option<usize>, by_concurrency: bool) -> String {
    match (by_concurrency, concurrency) {
        (true, Some(c)) => format!("concurrency {c}"),
        _ => format!("rate {}", rate_word(rate)),
    }
}
