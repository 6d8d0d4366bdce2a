//! Experiments beyond one run (docs/experiments.md): sweeps over concurrency or rate, the
//! saturation and SLO searches (bisection over the rate), and multi-run statistics. The model,
//! tokenizer and workload are prepared once (`crate::prepare_run`) and every point runs a
//! measured phase over them (`run_prepared`), then writes the same result document a single run
//! writes. Output goes through the [`RunObserver`]'s `message` (the library never prints).
//!
//! Driven in two steps, so the caller knows when the measured phases begin:
//! [`plan_points`] (before any network traffic), [`PreparedExperiment::prepare`], then
//! [`PreparedExperiment::run`].

pub mod config;
mod point;
mod rate_search;
pub mod search;
mod sweep;

pub use config::{Experiment, ExperimentConfig, SearchOptions, SloBound, SloStat};
pub use point::{prompt_seed, PointSpec};

use crate::config::{DatasetSpec, OutputConfig, RunConfig};
use crate::observe::observer::RunObserver;
use crate::observe::server_side::ServerSide;
use crate::results::info::now_local;
use crate::run::{prepare_experiment, prepare_run, Prepared};
use point::{label, Ctx, PointOutcome};
use servebench_core::metrics::MetricName;
use servebench_core::{BenchError, Result};
use servebench_report::info::vllm_date;
use servebench_report::sections::experiment::PointFigures;
use servebench_report::sections::pooling::is_pooling_backend;
use servebench_report::written::{ExperimentHeader, PointDocument, WrittenExperiment};
use servebench_report::{write_result, write_text};
use std::path::PathBuf;
use std::sync::Arc;

/// How an experiment ended (its document is written either way when results are saved).
#[derive(Debug)]
pub struct ExperimentOutcome {
    /// Stopped by the stop signal.
    pub interrupted: bool,
    /// The first point without one successful request (SB602), when nothing else succeeded.
    pub no_success: Option<BenchError>,
    /// The sweep or multi-run point that stopped early and ended the experiment (SB143, SB144).
    pub early_stop: Option<BenchError>,
}

/// Checks what an experiment cannot be combined with and returns the points known before
/// running (sweep points, or the repeated point of a multi-run; searches choose theirs as they
/// go). A concurrency sweep with `--sweep-num-prompts-factor` sizes the random dataset for its
/// largest point.
pub fn plan_points(cfg: &mut RunConfig, exp: &ExperimentConfig) -> Result<Vec<PointSpec>> {
    if cfg.rate.ramp_up.is_some() {
        return Err(BenchError::config(
            "--ramp-up-strategy",
            "cannot be combined with sweeps, searches or --num-runs",
            "drop the ramp-up flags or run a single benchmark",
        ));
    }
    if cfg.dry_run {
        return Err(BenchError::config("--dry-run", "is for single runs", "drop --dry-run"));
    }
    check_search(cfg, exp)?;
    let specs = initial_points(exp.num_prompts, cfg, &exp.kind);
    check_points(cfg, &exp.kind, &specs)?;
    let needed = specs.iter().map(|s| s.num_prompts).max().unwrap_or(exp.num_prompts);
    if needed != exp.num_prompts {
        match &mut cfg.dataset {
            DatasetSpec::Random(r) => r.num_prompts = needed,
            _ => {
                return Err(BenchError::config(
                    "--sweep-num-prompts-factor",
                    "needs the random dataset (other datasets have a fixed prompt count)",
                    "drop --sweep-num-prompts-factor",
                ))
            }
        }
    }
    Ok(specs)
}

/// Refuses a search that cannot pass at any rate, before it runs its steps (each halving the
/// rate down to start/1024: the last ones alone take about 1000 × N / start seconds): one
/// request per step (no rate to measure: every request is sent at once, whatever the rate), or
/// a TPOT/ITL SLO over replies of at most one token (no inter-token gap to measure).
fn check_search(cfg: &RunConfig, exp: &ExperimentConfig) -> Result<()> {
    let slos = match &exp.kind {
        Experiment::FindMaxRate => None,
        Experiment::SloSearch { slos } => Some(slos),
        _ => return Ok(()),
    };
    let flag = if slos.is_some() { "--slo" } else { "--find-max-rate" };
    // A --duration sets each step's count (rate × seconds); a trace or session trees their own.
    let counted = cfg.load.duration.is_none()
        && cfg.load.agentic.is_none()
        && !matches!(cfg.dataset, DatasetSpec::TimedTrace(_));
    if counted && exp.num_prompts < 2 {
        return Err(BenchError::config(
            "--num-prompts",
            format!(
                "{} is too few for {flag}: a step of one request has no rate to measure, so no step can pass",
                exp.num_prompts
            ),
            "pass --num-prompts 2 or more (a few dozen per step give a steadier verdict)",
        ));
    }
    let gaps = |m: MetricName| matches!(m, MetricName::Tpot | MetricName::Itl);
    if let (Some(slo), DatasetSpec::Random(r)) =
        (slos.and_then(|s| s.iter().find(|s| gaps(s.metric))), &cfg.dataset)
    {
        let (_, longest) = servebench_data::random::length_bounds(r.output_len, r.range_ratio_output, 1);
        if longest < 2 {
            return Err(BenchError::config(
                "--slo",
                format!(
                    "{} needs replies of at least 2 tokens (it measures the gaps between tokens), and \
                     --random-output-len {} gives at most {longest}, so no step can pass",
                    slo.name, r.output_len
                ),
                "pass --random-output-len 2 or more, or bound ttft or e2el instead",
            ));
        }
    }
    Ok(())
}

/// Refuses a point of a sweep or multi-run that breaks a rule a single run is held to, as the
/// single run with its values would be: its `--max-prefill-concurrency` above its concurrency
/// (it never binds there), its `--max-error-rate-window` longer than its requests (the limit is
/// never tested).
fn check_points(cfg: &RunConfig, exp: &Experiment, specs: &[PointSpec]) -> Result<()> {
    let sweep = match exp {
        Experiment::SweepConcurrency { .. } => "--sweep-max-concurrency",
        Experiment::SweepRate { .. } => "--sweep-request-rate",
        _ => "--num-runs",
    };
    for spec in specs {
        if let (Some(prefill), Some(c)) = (cfg.load.max_prefill_concurrency, spec.max_concurrency) {
            if prefill > c {
                return Err(BenchError::FlagCombination {
                    first: format!("--max-prefill-concurrency {prefill}"),
                    second: format!("{sweep} (point {})", spec.label),
                    why: format!(
                        "the prefill cap is above the point's concurrency {c}, so it never binds there"
                    ),
                    fix: format!("pass --max-prefill-concurrency of at most {c}, or drop {c} from {sweep}"),
                });
            }
        }
    }
    // The run sends at most its point's prompts (a duration, stages, a trace or conversations
    // decide their own count).
    let bounded = cfg.load.duration.is_none()
        && cfg.load.stages.is_empty()
        && cfg.load.multi_turn.is_none()
        && cfg.load.agentic.is_none()
        && !matches!(cfg.dataset, DatasetSpec::TimedTrace(_));
    let window = cfg.load.early_stop.errors.as_ref().map_or(0, |e| e.window as u64);
    if let Some(spec) = specs.iter().filter(|_| bounded).find(|s| window > s.num_prompts as u64) {
        return Err(BenchError::ErrorWindowTooLong { window, requests: spec.num_prompts as u64 });
    }
    Ok(())
}

/// The points known before running: sweep points, or the repeated single point of a
/// multi-run (searches choose theirs as they go).
fn initial_points(n: usize, cfg: &RunConfig, exp: &Experiment) -> Vec<PointSpec> {
    match exp {
        Experiment::SweepConcurrency { values, num_prompts_factor } => values
            .iter()
            .map(|&c| PointSpec {
                label: label(cfg.rate.request_rate, Some(c as usize), true),
                request_rate: cfg.rate.request_rate,
                max_concurrency: Some(c as usize),
                num_prompts: num_prompts_factor.map_or(n, |f| ((c as f64 * f).ceil() as usize).max(1)),
                seed: cfg.seed,
            })
            .collect(),
        Experiment::SweepRate { values } => values
            .iter()
            .map(|&r| PointSpec {
                label: label(r, cfg.max_concurrency, false),
                request_rate: r,
                max_concurrency: cfg.max_concurrency,
                num_prompts: n,
                seed: cfg.seed,
            })
            .collect(),
        Experiment::MultiRun { runs, same_seed } => (0..*runs)
            .map(|i| PointSpec {
                label: format!("run {}/{runs}", i + 1),
                request_rate: cfg.rate.request_rate,
                max_concurrency: cfg.max_concurrency,
                num_prompts: n,
                seed: if *same_seed { cfg.seed } else { cfg.seed.wrapping_add(u64::from(i)) },
            })
            .collect(),
        Experiment::FindMaxRate | Experiment::SloSearch { .. } => Vec::new(),
    }
}

fn percentiles_needed(config: &ExperimentConfig, output: &OutputConfig) -> Vec<f64> {
    let mut p = output.metric_percentiles.clone();
    match &config.kind {
        Experiment::SweepConcurrency { .. } | Experiment::SweepRate { .. } => {
            p.push(90.0);
            p.extend(config.sweep_summary_percentiles.iter().copied());
        }
        Experiment::SloSearch { slos } => p.extend(slos.iter().filter_map(|s| match s.stat {
            SloStat::Percentile(q) => Some(q),
            _ => None,
        })),
        _ => {}
    }
    let mut out: Vec<f64> = Vec::new();
    for q in p {
        if !out.contains(&q) {
            out.push(q);
        }
    }
    out
}

/// An experiment whose model, tokenizer and workload are ready.
pub struct PreparedExperiment {
    ctx: Ctx,
    specs: Vec<PointSpec>,
}

impl std::fmt::Debug for PreparedExperiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedExperiment")
            .field("experiment", &self.ctx.config.kind)
            .field("points", &self.specs)
            .finish_non_exhaustive()
    }
}

impl PreparedExperiment {
    /// Prepares the run once (model, tokenizer, workload, readiness); `None` for a dry run.
    pub async fn prepare(
        cfg: RunConfig,
        output: OutputConfig,
        config: ExperimentConfig,
        specs: Vec<PointSpec>,
        observer: Arc<dyn RunObserver>,
    ) -> Result<Option<PreparedExperiment>> {
        // Each point builds prompts of its own unless --reuse-prompts: keep the tokenizer for it.
        let prepared = match if config.reuse_prompts {
            prepare_run(&cfg, &observer).await?
        } else {
            prepare_experiment(&cfg, &observer).await?
        } {
            Prepared::Ready(p) => *p,
            Prepared::DryRun { .. } => return Ok(None),
        };
        let control = ServerSide::client(&cfg)?;
        let percentiles = percentiles_needed(&config, &output);
        let verbose = !matches!(config.kind, Experiment::FindMaxRate | Experiment::SloSearch { .. });
        let ctx = Ctx {
            config,
            base: cfg,
            output,
            prepared,
            control,
            interrupts: crate::Interrupts::default(),
            percentiles,
            verbose,
            no_success: std::sync::Mutex::new(None),
            early_stop: std::sync::Mutex::new(None),
            points_run: std::sync::atomic::AtomicU64::new(0),
            observer,
        };
        Ok(Some(PreparedExperiment { ctx, specs }))
    }

    /// Runs every point (a raised `stop` ends the current point and the experiment after it;
    /// a raised `abandon` cancels the point's requests in flight), then writes the experiment
    /// document when results are saved.
    pub async fn run(self, interrupts: impl Into<crate::Interrupts>) -> Result<ExperimentOutcome> {
        let PreparedExperiment { mut ctx, specs } = self;
        ctx.interrupts = interrupts.into();
        let exp = ctx.config.kind.clone();
        let (doc, csv) = match &exp {
            Experiment::SweepConcurrency { .. } | Experiment::SweepRate { .. } => {
                let by_conc = matches!(exp, Experiment::SweepConcurrency { .. });
                sweep::sweep(&ctx, specs, by_conc).await?
            }
            Experiment::MultiRun { runs, same_seed } => {
                (sweep::multi_run(&ctx, specs, *runs, *same_seed).await?, None)
            }
            Experiment::FindMaxRate => (rate_search::rate_search(&ctx, None).await?, None),
            Experiment::SloSearch { slos } => (rate_search::rate_search(&ctx, Some(slos)).await?, None),
        };
        let interrupted = doc.interrupted();
        save(&ctx, &exp, &doc, csv.as_deref())?;
        let no_success = ctx.no_success.into_inner().unwrap_or_else(|e| e.into_inner());
        let early_stop = ctx.early_stop.into_inner().unwrap_or_else(|e| e.into_inner());
        Ok(ExperimentOutcome { interrupted, no_success, early_stop })
    }
}

pub(crate) fn header(ctx: &Ctx, exp: &Experiment) -> ExperimentHeader {
    ExperimentHeader {
        servebench_experiment: exp.name().to_owned(),
        date: vllm_date(now_local()),
        backend: ctx.output.backend_name.clone(),
        label: ctx.output.label.clone(),
        model_id: ctx.prepared.model.model_id.clone(),
        tokenizer_id: ctx.prepared.tokenizer_id.clone(),
        server_tokenize: ctx.prepared.verification.document(),
        burstiness: ctx.base.rate.burstiness,
        percentiles: ctx.percentiles.clone(),
    }
}

impl PointOutcome {
    /// The point as its experiment document lists it.
    pub(crate) fn document(&self) -> PointDocument {
        PointDocument {
            label: self.spec.label.clone(),
            request_rate: servebench_report::info::python_float(self.spec.request_rate),
            max_concurrency: self.spec.max_concurrency,
            // The point's result's count (a --duration sets it, not --num-prompts).
            num_prompts: self.num_prompts as usize,
            seed: self.spec.seed,
            result: self.result.clone(),
        }
    }

    /// What the summary table reads of this point.
    fn figures(&self) -> PointFigures<'_> {
        PointFigures {
            label: &self.spec.label,
            request_rate: self.spec.request_rate,
            max_concurrency: self.spec.max_concurrency,
            num_prompts: self.num_prompts as usize,
            metrics: &self.metrics,
            steady: self.steady.as_ref().and_then(|s| s.as_ref().ok()),
            pooling: self
                .result
                .result
                .get("backend")
                .and_then(|b| b.as_str())
                .is_some_and(is_pooling_backend),
        }
    }
}

/// Writes the experiment document (and the sweep's summary CSV) when results are saved.
fn save(ctx: &Ctx, exp: &Experiment, doc: &WrittenExperiment, csv: Option<&str>) -> Result<()> {
    let o = &ctx.output;
    if !(o.save_result || o.append_result) {
        return Ok(());
    }
    let dir = o.result_dir.clone().unwrap_or_default();
    let path: PathBuf = match &o.result_filename {
        Some(f) => dir.join(f),
        None => {
            // The label as a file-name part, as a single run's default name has it: `--label a/b`
            // named a directory that did not exist (the document was lost after every point),
            // `../x` wrote outside --result-dir.
            let label = o.label.clone().filter(|l| !l.is_empty()).unwrap_or_else(|| o.backend_name.clone());
            let label = servebench_report::file_name_part(&label);
            dir.join(format!("{label}-{}-{}.json", exp.name(), vllm_date(now_local())))
        }
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir.display(), e))?;
    }
    write_result(&path, &o.with_config(doc.to_value()), o.append_result)?;
    ctx.say(&format!("Result: {}", path.display()));
    if let Some(text) = csv {
        let csv_path = path.with_extension("csv");
        write_text(&csv_path, text)?;
        ctx.say(&format!("Summary CSV: {}", csv_path.display()));
    }
    Ok(())
}
