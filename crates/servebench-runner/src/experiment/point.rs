//! One point of an experiment: the measured phase over the prepared workload with the point's
//! rate, concurrency, prompt count and seed, then the same result document a single run writes.

use super::config::ExperimentConfig;
use crate::config::{OutputConfig, RunConfig};
use crate::observe::observer::RunObserver;
use crate::observe::profiling::reset_prefix_cache;
use crate::observe::server_side::ServerSide;
use crate::results::{assemble, Assembly, RunResults, Steady};
use crate::run::{rebuild_workload, run_prepared, PreparedRun};
use servebench_client::transport::HttpClient;
use servebench_core::metrics::RunMetrics;
use servebench_core::validity::{Level, Validity};
use servebench_core::{Outcome, Result};
use servebench_report::info::python_float;
use servebench_report::sections::server;
use servebench_report::sections::steady_state::steady_state_block;
use servebench_report::written::RunDocument;
use servebench_report::{console_block, console_warnings};
use std::sync::Arc;

/// Everything the points of one experiment share.
pub struct Ctx {
    pub config: ExperimentConfig,
    pub base: RunConfig,
    pub output: OutputConfig,
    pub prepared: PreparedRun,
    /// Control-plane client (its own pool): cache resets, /metrics, profiler.
    pub control: HttpClient,
    /// The user's interrupts: the first stops the current point (and the experiment after it);
    /// with `--on-interrupt drain`, a second cancels the point's requests in flight.
    pub interrupts: crate::Interrupts,
    /// Percentiles computed for every point (the user's plus what summaries and SLOs need).
    pub percentiles: Vec<f64>,
    /// Print each point's full result block.
    pub verbose: bool,
    /// The first point without a successful request (SB602: the experiment exits 1).
    pub no_success: std::sync::Mutex<Option<servebench_core::BenchError>>,
    /// The first sweep or multi-run point that stopped early (SB143, SB144: exit 4).
    pub early_stop: std::sync::Mutex<Option<servebench_core::BenchError>>,
    /// Points run so far (the index of the next one: it seeds the point's own prompts).
    pub points_run: std::sync::atomic::AtomicU64,
    /// Where status lines, point blocks and tables go (the library never prints).
    pub observer: Arc<dyn RunObserver>,
}

impl Ctx {
    /// One line (or several) of output.
    pub fn say(&self, text: &str) {
        self.observer.message(text);
    }

    /// A block that ends with its own newline (nothing when empty).
    pub fn say_block(&self, text: &str) {
        if !text.is_empty() {
            self.observer.message(text.strip_suffix('\n').unwrap_or(text));
        }
    }
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
    pub steady: Option<Steady>,
    /// The point's result document: the one a single run writes (without `records_file`).
    pub result: RunDocument,
    pub records: servebench_core::CompactRecords,
    pub interrupted: bool,
    /// The point's run validity (its result's `validity`): an `invalid` point is never an
    /// experiment's best, nor a search's passing rate.
    pub validity: Validity,
    /// The result's `num_prompts`, by the single run's rule ([`crate::results::result_num_prompts`]):
    /// `spec.num_prompts` (conversations for multi-turn), or the records a `--duration` point had.
    pub num_prompts: u64,
    /// Something besides the client's own sends held the point's load down: a
    /// `--max-concurrency` or `--max-prefill-concurrency` cap, or conversations waiting for
    /// their replies (multi-turn, session trees). See [`load_is_capped`].
    pub capped: bool,
}

/// Whether a run's load is held down by a cap (`--max-concurrency`,
/// `--max-prefill-concurrency`) or by its conversations (multi-turn, session-tree replay, whose
/// next turn waits for the reply): then a send rate short of the asked one can describe the
/// server, not only the client.
pub fn load_is_capped(cfg: &crate::config::RunConfig) -> bool {
    cfg.max_concurrency.is_some()
        || cfg.load.max_prefill_concurrency.is_some()
        || cfg.load.multi_turn.is_some()
        || cfg.load.agentic.is_some()
}

impl PointOutcome {
    /// The client-side rules that made the point invalid (`id (detail)`): the client could not
    /// send the load asked (late dispatch, saturated CPU, event-loop stalls, and a send rate
    /// short of the asked one with no cap to hold it down, [`load_is_capped`]), so the figures
    /// describe another load than the point's. The server-side ones (a send rate a cap held
    /// down, failures, few requests per slot) still describe it.
    pub fn client_invalid_rules(&self) -> Vec<String> {
        const CLIENT: [&str; 4] = ["client_cpu", "client_cpu_wait", "event_loop_hiccup", "dispatch_lateness"];
        // Uncapped, nothing but the client (its sends, its connects) stands between the schedule
        // and the wire: a 20,000 req/s point that sent 20 % of it was a sweep's best.
        let uncapped = !self.capped;
        self.validity
            .fired()
            .filter(|r| {
                r.level == Level::Invalid
                    && (CLIENT.contains(&r.id.as_str()) || uncapped && r.id == "send_rate")
            })
            .map(|r| format!("{} ({})", r.id, r.detail))
            .collect()
    }

    /// The rules that made the point invalid, `id (detail)`, except those of `skip` (ids said
    /// on their own: `early_stop`, `interrupted`, …).
    pub fn invalid_rules(&self, skip: &[&str]) -> Vec<String> {
        self.validity
            .fired()
            .filter(|r| r.level == Level::Invalid && !skip.contains(&r.id.as_str()))
            .map(|r| format!("{} ({})", r.id, r.detail))
            .collect()
    }

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

/// Runs one point.
pub async fn run_point(ctx: &Ctx, spec: PointSpec) -> Result<PointOutcome> {
    if ctx.config.reset_prefix_cache {
        reset_prefix_cache(&ctx.control, &ctx.prepared.headers).await?;
    }
    let mut cfg = ctx.base.clone();
    cfg.rate.request_rate = spec.request_rate;
    cfg.max_concurrency = spec.max_concurrency;
    cfg.seed = spec.seed;
    cfg.records_path = None;
    let side = ServerSide::arm(&ctx.control, &ctx.prepared.headers, &ctx.config.server_side);
    let observer = side.observer(ctx.observer.clone());
    let k = ctx.points_run.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let fresh = if ctx.config.reuse_prompts || k == 0 && spec.seed == ctx.base.seed {
        None
    } else {
        rebuild_workload(&ctx.prepared, &cfg, prompt_seed(spec.seed, k)).await?
    };
    let prepared = match fresh {
        Some(w) => PreparedRun { workload: w, ..ctx.prepared.clone() },
        None => ctx.prepared.clone(),
    };
    let run = run_prepared(&prepared, &cfg, spec.num_prompts, observer, ctx.interrupts.clone()).await;
    let extra = side.finish().await;
    let out = run?;
    let num_prompts = crate::results::result_num_prompts(&cfg, out.records.len(), spec.num_prompts as u64);
    let assembly = Assembly {
        output: &ctx.output,
        run: &cfg,
        num_prompts,
        percentiles: &ctx.percentiles,
        steady: &ctx.config.steady,
    };
    let results = assemble(out, extra, &assembly);
    results.records_read_back()?;
    let metrics = &results.metrics;
    if ctx.config.reuse_prompts && k > 0 && metrics.cached_input_tokens.is_some_and(|c| c > 0) {
        ctx.say(&format!(
            "warning: {}: the server reports {} of {} prompt tokens served from its prefix cache: with \
             --reuse-prompts this point resends earlier points' prompts, which flatters TTFT; drop \
             --reuse-prompts (or pass --reset-prefix-cache)",
            spec.label,
            metrics.cached_input_tokens.unwrap_or(0),
            metrics.total_input_tokens
        ));
    }
    if ctx.verbose {
        ctx.say(&console_block(&results.info, metrics));
        for w in console_warnings(&results.info, metrics) {
            ctx.say(&format!("warning: {w}"));
        }
        if let Some(s) = &results.steady {
            ctx.say(&steady_state_block(s));
        }
        if let Some(s) = &results.server_side.server {
            ctx.say(&server::console_block(s));
        }
    }
    if let Some(e) = &results.out.early_stop {
        ctx.say(&format!("{}: {}", spec.label, e.console_line()));
    }
    for p in results.server_side.profile.iter().flat_map(|p| &p.warnings) {
        ctx.say(&format!("warning: {p}"));
    }
    if let Some(line) = crate::otel::export_results(&ctx.output, &cfg, &results, Some(&spec.label)).await {
        ctx.say(&line.unwrap_or_else(|warning| warning));
    }
    let validity = results.validity();
    let result = results.document(ctx.output.save_detailed, None);
    results.records_read_back()?;
    let RunResults { metrics, steady, out, .. } = results;
    Ok(PointOutcome {
        spec,
        metrics,
        steady,
        result,
        records: out.records,
        interrupted: out.interrupted,
        validity,
        num_prompts,
        capped: load_is_capped(&cfg),
    })
}

/// The label of a point (`concurrency 8`, `rate 10`, `rate inf`).
pub fn label(rate: f64, concurrency: Option<usize>, by_concurrency: bool) -> String {
    match (by_concurrency, concurrency) {
        (true, Some(c)) => format!("concurrency {c}"),
        _ => format!("rate {}", python_float(rate)),
    }
}
