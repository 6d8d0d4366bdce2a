//! Sweeps (one point per concurrency or rate) and multi-run (the same point N times).

use super::config::Experiment;
use super::header;
use super::point::{run_point, Ctx, PointOutcome, PointSpec};
use crate::prepare::failure_codes;
use crate::results::assemble::early_stop_error;
use servebench_core::Result;
use servebench_report::document::Metrics;
use servebench_report::sections::experiment::{
    best, csv, multi_run_summary, multi_run_table, summary_row, table, SummaryRow,
};
use servebench_report::written::{
    BestPoint, MultiRunDocument, StoppedEarly, SweepDocument, WrittenExperiment,
};

/// A concurrency or rate sweep: every point in turn, then the summary table and the best point.
/// Returns the document and its summary CSV.
pub async fn sweep(
    ctx: &Ctx,
    specs: Vec<PointSpec>,
    by_conc: bool,
) -> Result<(WrittenExperiment, Option<String>)> {
    let title = if by_conc { " Concurrency Sweep " } else { " Request Rate Sweep " };
    ctx.say(&format!("{title:=^50}"));
    let total = specs.len();
    let mut points = Vec::new();
    let mut stopped_early = None;
    for (i, spec) in specs.into_iter().enumerate() {
        ctx.say(&format!("{:-^50}", format!(" Run {}/{total}: {} ", i + 1, spec.label)));
        let p = run_point(ctx, spec).await?;
        stopped_early = stopped_early
            .or_else(|| stops_early(ctx, &p, i, total - i - 1))
            .or_else(|| stops_without_success(ctx, &p, i, total - i - 1));
        let stop = p.interrupted || stopped_early.is_some();
        say_interrupted(ctx, &p, total - i - 1, "points");
        points.push(p);
        if stop {
            break;
        }
    }
    let extra = &ctx.config.sweep_summary_percentiles;
    let rows: Vec<_> = points
        .iter()
        .map(|p| SummaryRow { interrupted: p.interrupted, ..summary_row(&p.figures(), extra) })
        .collect();
    ctx.say_block(&table(&rows));
    // An interrupted or stopped-early point's figures cover part of its requests (and a
    // saturated one's are not a level the server holds); one the client could not send as
    // asked describes another load than the point's: never the best point.
    let excluded = |p: &PointOutcome| is_partial(p) || !p.client_invalid_rules().is_empty();
    let best = best(points.iter().map(|p| (&p.metrics, excluded(p))), !ctx.output.goodput.is_empty());
    for p in points.iter().filter(|p| !is_partial(p)) {
        let rules = p.client_invalid_rules();
        if !rules.is_empty() {
            ctx.say(&format!(
                "Not a best candidate: {} (run validity invalid: {})",
                p.spec.label,
                rules.join("; ")
            ));
        }
    }
    match best {
        Some((i, key, v)) => ctx.say(&format!("Best ({key}): {v:.2} at {}", points[i].spec.label)),
        None if !points.is_empty() => ctx.say(if ctx.output.goodput.is_empty() {
            "Best: none (no point ran to its end with a valid run and completed requests)"
        } else {
            "Best: none (no point ran to its end with a valid run and requests meeting the --goodput SLOs)"
        }),
        None => {}
    }
    let csv = csv(&rows);
    let doc = SweepDocument {
        header: header(ctx, &Experiment::SweepRate { values: Vec::new() }),
        sweep_parameter: if by_conc { "max_concurrency" } else { "request_rate" }.to_owned(),
        interrupted: points.iter().any(|p| p.interrupted),
        points_planned: total,
        stopped_early,
        summary: rows,
        points: points.iter().map(PointOutcome::document).collect(),
        best: best.map(|(i, key, value)| BestPoint {
            index: i,
            label: points[i].spec.label.clone(),
            criterion: key.to_owned(),
            value,
        }),
    };
    Ok((WrittenExperiment::Sweep(doc), Some(csv)))
}

/// `--num-runs`: the same point again and again, then the aggregate of every metric.
pub async fn multi_run(
    ctx: &Ctx,
    specs: Vec<PointSpec>,
    runs: u32,
    same_seed: bool,
) -> Result<WrittenExperiment> {
    ctx.say(&format!("{:=^50}", format!(" Multi-Run Benchmark ({runs} runs) ")));
    let mut points = Vec::new();
    let mut stopped_early = None;
    let total = specs.len();
    for (i, spec) in specs.into_iter().enumerate() {
        ctx.say(&format!("{:-^50}", format!(" {} (seed {}) ", spec.label, spec.seed)));
        let p = run_point(ctx, spec).await?;
        stopped_early = stopped_early
            .or_else(|| stops_early(ctx, &p, i, total - i - 1))
            .or_else(|| stops_without_success(ctx, &p, i, total - i - 1));
        let stop = p.interrupted || stopped_early.is_some();
        say_interrupted(ctx, &p, total - i - 1, "runs");
        points.push(p);
        if stop {
            break;
        }
    }
    // A run cut short (interrupted, stopped early) covers part of its requests: its figures are
    // not a repetition of the others, so it is listed but not aggregated.
    let partial_runs: Vec<usize> = (0..points.len()).filter(|&i| is_partial(&points[i])).collect();
    // vLLM's keys write 0.0 where a run has no data: such a run is left out of that key's
    // aggregate, as a `null` is (docs/metrics.md, "Metrics without data").
    let results: Vec<Metrics> = points
        .iter()
        .filter(|p| !is_partial(p))
        .map(|p| p.result.metrics().no_data_as_none(&p.metrics))
        .collect();
    let summary = multi_run_summary(&results);
    ctx.say_block(&multi_run_table(&summary, results.len()));
    for &i in &partial_runs {
        let why = if points[i].interrupted { "interrupted" } else { "stopped early" };
        ctx.say(&format!("Left out of the summary: {} ({why})", points[i].spec.label));
    }
    Ok(WrittenExperiment::MultiRun(MultiRunDocument {
        header: header(ctx, &Experiment::MultiRun { runs, same_seed }),
        num_runs: points.len(),
        num_runs_planned: total,
        same_seed,
        interrupted: points.iter().any(|p| p.interrupted),
        stopped_early,
        partial_runs,
        request_rate: servebench_report::info::python_float(ctx.base.rate.request_rate),
        max_concurrency: ctx.base.max_concurrency,
        summary,
        runs: points.iter().map(PointOutcome::document).collect(),
    }))
}

/// Whether a point's figures cover only part of its requests: interrupted, or stopped early.
fn is_partial(p: &PointOutcome) -> bool {
    p.interrupted || p.result.early_stop.is_some()
}

/// A sweep or multi-run point without one successful request ends the experiment (after the
/// points so far are saved): the error (SB602) is kept for the exit code, and the document's
/// `stopped_early` names the point (reason `no_success`). An interrupted point is not judged.
fn stops_without_success(ctx: &Ctx, p: &PointOutcome, index: usize, after: usize) -> Option<StoppedEarly> {
    if p.interrupted {
        return None;
    }
    let e = failure_codes::no_success_in_point(&p.records, &format!("{}: ", p.spec.label))?;
    ctx.say(&format!(
        "No request of {} succeeded: the experiment stops here ({after} later points not run)",
        p.spec.label
    ));
    ctx.no_success.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
    Some(StoppedEarly {
        index,
        label: p.spec.label.clone(),
        reason: "no_success".to_owned(),
        detected_at_s: None,
        points_not_run: Some(after),
    })
}

/// The console line of a point cut short by Ctrl-C: the experiment ends after it, and how many
/// of its `what` (points, runs) it leaves unrun.
fn say_interrupted(ctx: &Ctx, p: &PointOutcome, after: usize, what: &str) {
    if p.interrupted && after > 0 {
        ctx.say(&format!(
            "Interrupted at {}: the experiment stops here ({after} later {what} not run)",
            p.spec.label
        ));
    }
}

/// A point whose run stopped early (saturation, errors) ends a sweep or multi-run: the points
/// after it would only be more saturated (or fail the same way). The stop's error (SB143,
/// SB144) is kept for the exit code (4).
fn stops_early(ctx: &Ctx, p: &PointOutcome, index: usize, after: usize) -> Option<StoppedEarly> {
    let e = p.result.early_stop.as_ref()?;
    ctx.say(&format!(
        "{} stopped early: the experiment stops here ({after} later points not run)",
        p.spec.label
    ));
    ctx.early_stop.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(early_stop_error(e));
    Some(StoppedEarly {
        index,
        label: p.spec.label.clone(),
        reason: e.reason.as_str().to_owned(),
        detected_at_s: Some(e.detected_at_s),
        points_not_run: Some(after),
    })
}
