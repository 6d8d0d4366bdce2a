//! Experiments beyond one run (docs/experiments.md): sweeps over concurrency or rate, the
//! saturation and SLO searches (bisection over the rate), and multi-run statistics. The model,
//! tokenizer and workload are prepared once (`servebench_runner::prepare_run`) and every point
//! runs a measured phase over them (`run_prepared`).

pub mod extras;
pub mod keys;
pub mod plan;
mod point;
pub mod search;
mod summary;

use crate::cli::RunArgs;
use crate::config::OutputConfig;
use anyhow::Context;
use plan::{Experiment, SloBound, SloStat};
use point::{label, run_point, Ctx, PointOutcome, PointSpec, QuietObserver};
use search::Bisection;
use serde_json::{json, Value};
use servebench_core::metrics::RunMetrics;
use servebench_core::BenchError;
use servebench_report::info::vllm_date;
use servebench_report::{write_result, write_text};
use servebench_runner::config::DatasetSpec;
use servebench_runner::prepare::failure_codes;
use servebench_runner::CancellationToken;
use servebench_runner::{
    prepare_experiment, prepare_run, Prepared, RunConfig, RunObserver, CLIENT_THREAD_PREFIX,
};
use std::path::PathBuf;
use std::sync::Arc;
use time::OffsetDateTime;

/// Runs the experiment `exp`; returns the exit code.
pub fn run(args: &RunArgs, mut cfg: RunConfig, output: OutputConfig, exp: Experiment) -> anyhow::Result<u8> {
    if cfg.rate.ramp_up.is_some() {
        return Err(BenchError::config(
            "--ramp-up-strategy",
            "cannot be combined with sweeps, searches or --num-runs",
            "drop the ramp-up flags or run a single benchmark",
        )
        .into());
    }
    if cfg.dry_run {
        return Err(BenchError::config("--dry-run", "is for single runs", "drop --dry-run").into());
    }
    let specs = initial_points(args, &cfg, &exp);
    let needed = specs.iter().map(|s| s.num_prompts).max().unwrap_or(args.num_prompts as usize);
    if needed != args.num_prompts as usize {
        match &mut cfg.dataset {
            DatasetSpec::Random(r) => r.num_prompts = needed,
            _ => {
                return Err(BenchError::config(
                    "--sweep-num-prompts-factor",
                    "needs the random dataset (other datasets have a fixed prompt count)",
                    "drop --sweep-num-prompts-factor",
                )
                .into())
            }
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(CLIENT_THREAD_PREFIX)
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run_async(args, cfg, output, exp, specs))
}

/// The points known before running: sweep points, or the repeated single point of a
/// multi-run (searches choose theirs as they go).
fn initial_points(args: &RunArgs, cfg: &RunConfig, exp: &Experiment) -> Vec<PointSpec> {
    let n = args.num_prompts as usize;
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

fn percentiles_needed(args: &RunArgs, output: &OutputConfig, exp: &Experiment) -> anyhow::Result<Vec<f64>> {
    let mut p = output.metric_percentiles.clone();
    match exp {
        Experiment::SweepConcurrency { .. } | Experiment::SweepRate { .. } => {
            p.push(90.0);
            if let Some(s) = &args.experiment.sweep_summary_percentiles {
                p.extend(plan::parse_f64_list("--sweep-summary-percentiles", s, false)?);
            }
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
    Ok(out)
}

async fn run_async(
    args: &RunArgs,
    cfg: RunConfig,
    output: OutputConfig,
    exp: Experiment,
    specs: Vec<PointSpec>,
) -> anyhow::Result<u8> {
    let signal = CancellationToken::new();
    let stop = signal.clone();
    tokio::spawn(async move {
        if crate::sim_cmd::wait_for_stop_signal().await.is_ok() {
            crate::run::exit_if_not_measuring();
            eprintln!("\nInterrupted: stopping this point; the experiment ends after it");
            stop.cancel();
            if crate::sim_cmd::wait_for_stop_signal().await.is_ok() {
                std::process::exit(crate::run::INTERRUPTED_EXIT_CODE.into());
            }
        }
    });
    let observer: Arc<dyn RunObserver> = Arc::new(QuietObserver);
    // Each point builds prompts of its own unless --reuse-prompts: keep the tokenizer for it.
    let prepared = match if args.experiment.reuse_prompts {
        prepare_run(&cfg, &observer).await?
    } else {
        prepare_experiment(&cfg, &observer).await?
    } {
        Prepared::Ready(p) => *p,
        Prepared::DryRun { .. } => return Ok(0),
    };
    crate::run::measuring_started();
    let control = extras::ServerSide::client(&cfg)?;
    let percentiles = percentiles_needed(args, &output, &exp)?;
    let verbose = !matches!(exp, Experiment::FindMaxRate | Experiment::SloSearch { .. });
    let no_success = std::sync::Mutex::new(None);
    let ctx = Ctx {
        args,
        base: cfg,
        output,
        prepared,
        control,
        stop: signal,
        percentiles,
        verbose,
        no_success,
        points_run: std::sync::atomic::AtomicU64::new(0),
    };
    let doc = match &exp {
        Experiment::SweepConcurrency { .. } | Experiment::SweepRate { .. } => {
            let by_conc = matches!(exp, Experiment::SweepConcurrency { .. });
            sweep(&ctx, specs, by_conc).await?
        }
        Experiment::MultiRun { runs, same_seed } => multi_run(&ctx, specs, *runs, *same_seed).await?,
        Experiment::FindMaxRate => rate_search(&ctx, None).await?,
        Experiment::SloSearch { slos } => rate_search(&ctx, Some(slos)).await?,
    };
    let interrupted = doc.get("interrupted").and_then(Value::as_bool).unwrap_or(false);
    save(&ctx, &exp, doc)?;
    if interrupted {
        return Ok(crate::run::INTERRUPTED_EXIT_CODE);
    }
    match ctx.no_success.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e.into()),
        None => Ok(0),
    }
}

fn header(ctx: &Ctx<'_>, exp: &Experiment) -> serde_json::Map<String, Value> {
    let mut o = serde_json::Map::new();
    o.insert("servebench_experiment".into(), json!(exp.name()));
    o.insert("date".into(), json!(vllm_date(now())));
    o.insert("backend".into(), json!(ctx.output.backend_name));
    o.insert("label".into(), json!(ctx.output.label));
    o.insert("model_id".into(), json!(ctx.prepared.model.model_id));
    o.insert("tokenizer_id".into(), json!(ctx.prepared.tokenizer_id));
    o.insert("server_tokenize".into(), ctx.prepared.verification.to_json());
    o.insert("burstiness".into(), json!(ctx.base.rate.burstiness));
    o.insert("percentiles".into(), json!(ctx.percentiles));
    o
}

fn point_json(p: &PointOutcome) -> Value {
    json!({
        "label": p.spec.label,
        "request_rate": extras::rate_word(p.spec.request_rate),
        "max_concurrency": p.spec.max_concurrency,
        "num_prompts": p.spec.num_prompts,
        "seed": p.spec.seed,
        "result": p.result,
    })
}

async fn sweep(ctx: &Ctx<'_>, specs: Vec<PointSpec>, by_conc: bool) -> anyhow::Result<Value> {
    let title = if by_conc { " Concurrency Sweep " } else { " Request Rate Sweep " };
    println!("{title:=^50}");
    let total = specs.len();
    let mut points = Vec::new();
    for (i, spec) in specs.into_iter().enumerate() {
        println!("{:-^50}", format!(" Run {}/{total}: {} ", i + 1, spec.label));
        let p = run_point(ctx, spec).await?;
        let stop = p.interrupted || stops_without_success(ctx, &p);
        points.push(p);
        if stop {
            break;
        }
    }
    let extra = match &ctx.args.experiment.sweep_summary_percentiles {
        Some(s) => plan::parse_f64_list("--sweep-summary-percentiles", s, false)?,
        None => Vec::new(),
    };
    let rows: Vec<_> = points.iter().map(|p| summary::summary_row(p, &extra)).collect();
    print!("{}", summary::table(&rows));
    let best = summary::best(&points, !ctx.output.goodput.is_empty());
    if let Some((i, key, v)) = best {
        println!("Best ({key}): {v:.2} at {}", points[i].spec.label);
    }
    let mut o = header(ctx, &Experiment::SweepRate { values: Vec::new() });
    o.insert("sweep_parameter".into(), json!(if by_conc { "max_concurrency" } else { "request_rate" }));
    o.insert("interrupted".into(), json!(points.iter().any(|p| p.interrupted)));
    o.insert("summary".into(), summary::rows_json(&rows));
    o.insert("summary_csv".into(), json!(summary::csv(&rows)));
    o.insert(
        "best".into(),
        best.map_or(
            Value::Null,
            |(i, key, v)| json!({"index": i, "label": points[i].spec.label, "criterion": key, "value": v}),
        ),
    );
    o.insert("points".into(), Value::Array(points.iter().map(point_json).collect()));
    Ok(Value::Object(o))
}

async fn multi_run(
    ctx: &Ctx<'_>,
    specs: Vec<PointSpec>,
    runs: u32,
    same_seed: bool,
) -> anyhow::Result<Value> {
    println!("{:=^50}", format!(" Multi-Run Benchmark ({runs} runs) "));
    let mut points = Vec::new();
    for spec in specs {
        println!("{:-^50}", format!(" {} (seed {}) ", spec.label, spec.seed));
        let p = run_point(ctx, spec).await?;
        let stop = p.interrupted || stops_without_success(ctx, &p);
        points.push(p);
        if stop {
            break;
        }
    }
    let results: Vec<&Value> = points.iter().map(|p| &p.result).collect();
    let summary = summary::multi_run_summary(&results);
    print!("{}", summary::multi_run_table(&summary, points.len()));
    let mut o = header(ctx, &Experiment::MultiRun { runs, same_seed });
    o.insert("num_runs".into(), json!(points.len()));
    o.insert("same_seed".into(), json!(same_seed));
    o.insert("interrupted".into(), json!(points.iter().any(|p| p.interrupted)));
    o.insert("request_rate".into(), json!(extras::rate_word(ctx.base.rate.request_rate)));
    o.insert("max_concurrency".into(), json!(ctx.base.max_concurrency));
    o.insert("summary".into(), summary);
    o.insert("runs".into(), Value::Array(points.iter().map(point_json).collect()));
    Ok(Value::Object(o))
}

/// The value of an SLO's statistic in `m`, ms.
fn slo_value(m: &RunMetrics, s: &SloBound) -> Option<f64> {
    let sum = m.summary(s.metric);
    match s.stat {
        SloStat::Mean => Some(sum.mean),
        SloStat::Median => Some(sum.median),
        SloStat::Percentile(p) => sum.percentile(p),
    }
    .filter(|_| sum.count > 0)
}

/// Bisection over the rate: saturation (`slos` = None) or the SLO search.
async fn rate_search(ctx: &Ctx<'_>, slos: Option<&Vec<SloBound>>) -> anyhow::Result<Value> {
    let a = &ctx.args.experiment;
    let what = if slos.is_some() { "SLO search" } else { "Saturation search" };
    println!(
        "{:=^50}\n{what} by bisection over the rate: start {} req/s, max {} req/s, tolerance {}%",
        format!(" {what} "),
        a.search_start_rate,
        a.search_max_rate,
        a.search_tolerance * 100.0
    );
    let mut b = Bisection::new(a.search_start_rate, a.search_max_rate, a.search_tolerance);
    let mut trajectory = Vec::new();
    let mut points = Vec::new();
    let mut interrupted = false;
    let (mut any_success, mut first_no_success) = (false, None);
    while let Some(rate) = b.next_rate() {
        let spec = PointSpec {
            label: label(rate, ctx.base.max_concurrency, false),
            request_rate: rate,
            max_concurrency: ctx.base.max_concurrency,
            num_prompts: ctx.args.num_prompts as usize,
            seed: ctx.base.seed,
        };
        let p = run_point(ctx, spec).await?;
        // A rate with no successful request fails the criterion (overload is an answer);
        // the search fails with SB602 only if no point had any success (at the end).
        if p.records.iter().any(|r| r.outcome == servebench_core::Outcome::Completed) {
            any_success = true;
        } else if first_no_success.is_none() {
            first_no_success = failure_codes::no_success(&p.records, &format!("{}: ", p.spec.label));
        }
        let (offered, achieved) = (p.offered_rate(), p.achieved_rate());
        let ratio = match (offered, achieved) {
            (Some(o), Some(a)) if o > 0.0 => Some(a / o),
            _ => None,
        };
        let mut reasons = Vec::new();
        if p.metrics.failed > 0 {
            reasons.push(format!("{} requests failed", p.metrics.failed));
        }
        let mut slo_values = serde_json::Map::new();
        match slos {
            None => match ratio {
                Some(r) if r >= a.saturation_threshold => {}
                Some(r) => reasons.push(format!(
                    "achieved {:.2} req/s is {:.1}% of offered {:.2} (< {:.0}%)",
                    achieved.unwrap_or(0.0),
                    r * 100.0,
                    offered.unwrap_or(0.0),
                    a.saturation_threshold * 100.0
                )),
                None => reasons.push("fewer than 2 completed requests".into()),
            },
            Some(slos) => {
                for s in slos {
                    let v = slo_value(&p.metrics, s);
                    slo_values.insert(s.name.clone(), json!(v));
                    match v {
                        Some(v) if v <= s.max_ms => {}
                        Some(v) => reasons.push(format!("{} {v:.2} ms > {} ms", s.name, s.max_ms)),
                        None => reasons.push(format!("{}: no value", s.name)),
                    }
                }
            }
        }
        let passed = reasons.is_empty() && !p.interrupted;
        println!(
            "step {:>2}: rate {:>10.3} req/s  offered {:>9}  achieved {:>9}  {}{}",
            trajectory.len() + 1,
            rate,
            offered.map_or("-".into(), |v| format!("{v:.2}")),
            achieved.map_or("-".into(), |v| format!("{v:.2}")),
            if passed { "pass" } else { "fail" },
            if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join("; ")) }
        );
        trajectory.push(json!({
            "step": trajectory.len() + 1,
            "request_rate": rate,
            "offered_rate": offered,
            "achieved_rate": achieved,
            "achieved_over_offered": ratio,
            "completed": p.metrics.completed,
            "failed": p.metrics.failed,
            "slo_values": slo_values,
            "passed": passed,
            "reasons": reasons,
        }));
        interrupted = p.interrupted;
        points.push(point_json(&p));
        if interrupted {
            break;
        }
        b.record(rate, passed);
    }
    match (b.low(), b.high()) {
        (Some(l), Some(h)) => println!("Result: {l:.3} req/s (next failing rate {h:.3} req/s)"),
        (Some(l), None) => println!("Result: {l:.3} req/s passed: the limit is above --search-max-rate"),
        (None, _) => println!("Result: no rate passed (down to {:.4} req/s)", a.search_start_rate / 1024.0),
    }
    let exp = match slos {
        Some(s) => Experiment::SloSearch { slos: s.clone() },
        None => Experiment::FindMaxRate,
    };
    let mut o = header(ctx, &exp);
    o.insert(
        "criterion".into(),
        match slos {
            None => json!({"saturation_threshold": a.saturation_threshold,
                "definition": "achieved_rate >= saturation_threshold * offered_rate and no failed request"}),
            Some(s) => json!({"slos": s.iter().map(|s| json!({"name": s.name, "max_ms": s.max_ms})).collect::<Vec<_>>(),
                "definition": "every SLO met and no failed request"}),
        },
    );
    o.insert("tolerance".into(), json!(a.search_tolerance));
    o.insert("max_concurrency".into(), json!(ctx.base.max_concurrency));
    o.insert("num_prompts".into(), json!(ctx.args.num_prompts));
    o.insert("result_rate".into(), json!(b.low()));
    o.insert("lowest_failing_rate".into(), json!(b.high()));
    o.insert("interrupted".into(), json!(interrupted));
    o.insert("trajectory".into(), Value::Array(trajectory));
    o.insert("points".into(), Value::Array(points));
    if !any_success && !interrupted {
        if let Some(e) = first_no_success {
            ctx.no_success.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
        }
    }
    Ok(Value::Object(o))
}

/// A sweep or multi-run point without one successful request ends the experiment (after the
/// points so far are saved): the error (SB602) is kept for the exit code.
fn stops_without_success(ctx: &Ctx<'_>, p: &PointOutcome) -> bool {
    match failure_codes::no_success(&p.records, &format!("{}: ", p.spec.label)) {
        Some(e) => {
            println!("No request of {} succeeded: the experiment stops here", p.spec.label);
            ctx.no_success.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
            true
        }
        None => false,
    }
}

fn now() -> OffsetDateTime {
    OffsetDateTime::now_local().unwrap_or_else(|_| OffsetDateTime::now_utc())
}

/// Writes the experiment document (and the sweep CSV) when results are saved.
fn save(ctx: &Ctx<'_>, exp: &Experiment, mut doc: Value) -> anyhow::Result<()> {
    let o = &ctx.output;
    if !(o.save_result || o.append_result) {
        return Ok(());
    }
    let dir = o.result_dir.clone().unwrap_or_default();
    let path: PathBuf = match &o.result_filename {
        Some(f) => dir.join(f),
        None => {
            let label = o.label.clone().filter(|l| !l.is_empty()).unwrap_or_else(|| o.backend_name.clone());
            dir.join(format!("{label}-{}-{}.json", exp.name(), vllm_date(now())))
        }
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir.display(), e))?;
    }
    let csv = doc.as_object_mut().and_then(|m| m.remove("summary_csv"));
    write_result(&path, &doc, o.append_result)?;
    println!("Result: {}", path.display());
    if let Some(text) = csv.as_ref().and_then(Value::as_str) {
        let csv_path = path.with_extension("csv");
        write_text(&csv_path, text)?;
        println!("Summary CSV: {}", csv_path.display());
    }
    Ok(())
}
