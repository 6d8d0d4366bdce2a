//! Sweeps (one point per concurrency or rate) and multi-run (the same point N times).

use super::config::Experiment;
use super::point::{rate_word, run_point, Ctx, PointOutcome, PointSpec};
use super::{header, point_json};
use crate::prepare::failure_codes;
use serde_json::{json, Value};
use servebench_core::Result;
use servebench_report::sections::experiment::{
    best, csv, multi_run_summary, multi_run_table, rows_json, summary_row, table,
};

/// A concurrency or rate sweep: every point in turn, then the summary table and the best point.
pub async fn sweep(ctx: &Ctx, specs: Vec<PointSpec>, by_conc: bool) -> Result<Value> {
    let title = if by_conc { " Concurrency Sweep " } else { " Request Rate Sweep " };
    ctx.say(&format!("{title:=^50}"));
    let total = specs.len();
    let mut points = Vec::new();
    for (i, spec) in specs.into_iter().enumerate() {
        ctx.say(&format!("{:-^50}", format!(" Run {}/{total}: {} ", i + 1, spec.label)));
        let p = run_point(ctx, spec).await?;
        let stop = p.interrupted || stops_without_success(ctx, &p);
        points.push(p);
        if stop {
            break;
        }
    }
    let extra = &ctx.config.sweep_summary_percentiles;
    let rows: Vec<_> = points.iter().map(|p| summary_row(&p.figures(), extra)).collect();
    ctx.say_block(&table(&rows));
    let best = best(points.iter().map(|p| &p.metrics), !ctx.output.goodput.is_empty());
    if let Some((i, key, v)) = best {
        ctx.say(&format!("Best ({key}): {v:.2} at {}", points[i].spec.label));
    }
    let mut o = header(ctx, &Experiment::SweepRate { values: Vec::new() });
    o.insert("sweep_parameter".into(), json!(if by_conc { "max_concurrency" } else { "request_rate" }));
    o.insert("interrupted".into(), json!(points.iter().any(|p| p.interrupted)));
    o.insert("summary".into(), rows_json(&rows));
    o.insert("summary_csv".into(), json!(csv(&rows)));
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

/// `--num-runs`: the same point again and again, then the aggregate of every metric.
pub async fn multi_run(ctx: &Ctx, specs: Vec<PointSpec>, runs: u32, same_seed: bool) -> Result<Value> {
    ctx.say(&format!("{:=^50}", format!(" Multi-Run Benchmark ({runs} runs) ")));
    let mut points = Vec::new();
    for spec in specs {
        ctx.say(&format!("{:-^50}", format!(" {} (seed {}) ", spec.label, spec.seed)));
        let p = run_point(ctx, spec).await?;
        let stop = p.interrupted || stops_without_success(ctx, &p);
        points.push(p);
        if stop {
            break;
        }
    }
    let results: Vec<&Value> = points.iter().map(|p| &p.result).collect();
    let summary = multi_run_summary(&results);
    ctx.say_block(&multi_run_table(&summary, points.len()));
    let mut o = header(ctx, &Experiment::MultiRun { runs, same_seed });
    o.insert("num_runs".into(), json!(points.len()));
    o.insert("same_seed".into(), json!(same_seed));
    o.insert("interrupted".into(), json!(points.iter().any(|p| p.interrupted)));
    o.insert("request_rate".into(), json!(rate_word(ctx.base.rate.request_rate)));
    o.insert("max_concurrency".into(), json!(ctx.base.max_concurrency));
    o.insert("summary".into(), summary);
    o.insert("runs".into(), Value::Array(points.iter().map(point_json).collect()));
    Ok(Value::Object(o))
}

/// A sweep or multi-run point without one successful request ends the experiment (after the
/// points so far are saved): the error (SB602) is kept for the exit code.
fn stops_without_success(ctx: &Ctx, p: &PointOutcome) -> bool {
    match failure_codes::no_success(&p.records, &format!("{}: ", p.spec.label)) {
        Some(e) => {
            ctx.say(&format!("No request of {} succeeded: the experiment stops here", p.spec.label));
            ctx.no_success.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
            true
        }
        None => false,
    }
}
