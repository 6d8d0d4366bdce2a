//! The report of an experiment document (`--sweep-*`, `--find-max-rate`, `--slo`, `--num-runs`;
//! docs/experiments.md): throughput–latency curves, one point per sweep point, with horizontal SLO
//! lines when the experiment (or the report's `--goodput`) has latency limits.

use serde_json::Value;
use servebench_core::metrics::Slo;

use super::page::render_experiment;
use super::svg::{AxisSpec, Chart, Kind, Series, Style};

/// Experiment kinds this report knows (`servebench_experiment`).
const KINDS: [&str; 4] = ["sweep", "find_max_rate", "slo_search", "multi_run"];

/// Why an experiment document cannot be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExperimentError {
    #[error("unknown experiment kind {0:?} (known: sweep, find_max_rate, slo_search, multi_run)")]
    UnknownKind(String),
    #[error("the {0} document has no points with results")]
    NoPoints(String),
}

/// Whether `doc` is an experiment document (it names its `servebench_experiment`).
pub fn is_experiment_json(doc: &Value) -> bool {
    doc.get("servebench_experiment").is_some_and(Value::is_string)
}

/// One point: its label and full single-run result.
struct Point<'a> {
    label: String,
    result: &'a Value,
}

fn points(doc: &Value) -> Vec<Point<'_>> {
    let pts = doc.get("points").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    pts.iter()
        .filter_map(|p| {
            let result = p.get("result").filter(|r| r.is_object())?;
            let label = p.get("label").and_then(Value::as_str).map_or_else(
                || format!("rate {}", p.get("request_rate").map(Value::to_string).unwrap_or_default()),
                String::from,
            );
            Some(Point { label, result })
        })
        .collect()
}

/// A latency limit drawn as a horizontal line on the chart of its metric.
struct Limit {
    metric: String,
    name: String,
    max_ms: f64,
}

/// SLO search bounds (`criterion.slos`: `ttft_p99` → metric `ttft`) and goodput SLOs.
fn limits(doc: &Value, goodput: &[Slo]) -> Vec<Limit> {
    let mut out = Vec::new();
    let slos =
        doc.pointer("/criterion/slos").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for s in slos {
        if let (Some(n), Some(v)) =
            (s.get("name").and_then(Value::as_str), s.get("max_ms").and_then(Value::as_f64))
        {
            let metric = n.split('_').next().unwrap_or(n).to_string();
            out.push(Limit { metric, name: format!("SLO {n} ≤ {v} ms"), max_ms: v });
        }
    }
    for g in goodput {
        let m = g.metric.as_str();
        out.push(Limit {
            metric: m.to_string(),
            name: format!("goodput SLO: {m} ≤ {} ms per request", g.threshold_ms),
            max_ms: g.threshold_ms,
        });
    }
    out
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64).filter(|x| x.is_finite())
}

/// The highest `pNN_<metric>_ms` percentile key present in every point (e.g. `p99_ttft_ms`).
fn top_percentile(pts: &[Point<'_>], metric: &str) -> Option<String> {
    let first = pts.first()?.result.as_object()?;
    let mut best: Option<(f64, String)> = None;
    for k in first.keys() {
        if let Some(p) = k.strip_prefix('p').and_then(|r| r.strip_suffix(&format!("_{metric}_ms"))) {
            if let Ok(p) = p.parse::<f64>() {
                if pts.iter().all(|x| num(x.result, k).is_some()) && best.as_ref().is_none_or(|b| p > b.0) {
                    best = Some((p, k.clone()));
                }
            }
        }
    }
    best.map(|b| b.1)
}

/// Throughput–latency curve of `metric`: x = achieved throughput (`x_key`), y = its median
/// (solid) and highest saved percentile (dashed), one point per experiment point.
fn curve(pts: &[Point<'_>], metric: &str, x_key: &str, x_label: &str, limits: &[Limit]) -> Chart {
    let mut series = Vec::new();
    let mut keys = vec![(format!("median_{metric}_ms"), "median".to_string(), Style::Solid)];
    if let Some(k) = top_percentile(pts, metric) {
        let name = k.split('_').next().unwrap_or_default().to_string();
        keys.push((k, name, Style::Dashed));
    }
    let mut xs = Vec::new();
    for (key, name, style) in &keys {
        let line: Vec<(f64, f64)> =
            pts.iter().filter_map(|p| Some((num(p.result, x_key)?, num(p.result, key)?))).collect();
        xs.extend(line.iter().map(|p| p.0));
        if line.is_empty() {
            continue;
        }
        let upper = metric.to_uppercase();
        let kind = if *style == Style::Solid {
            let labeled = pts
                .iter()
                .filter_map(|p| Some((num(p.result, x_key)?, num(p.result, key)?, p.label.clone())))
                .collect();
            Kind::Labeled(labeled)
        } else {
            Kind::Dots(line.clone())
        };
        series.push(Series {
            run: 0,
            name: format!("{upper} {name}"),
            style: *style,
            kind: Kind::Line(line),
        });
        series.push(Series { run: 0, name: format!("{upper} {name}: points"), style: *style, kind });
    }
    let (lo, hi) = xs.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    for l in limits.iter().filter(|l| l.metric == metric) {
        if lo.is_finite() {
            series.push(Series {
                run: 1,
                name: l.name.clone(),
                style: Style::BoldDashed,
                kind: Kind::Line(vec![(lo.min(0.0), l.max_ms), (hi, l.max_ms)]),
            });
        }
    }
    let order: Vec<String> =
        pts.iter().filter_map(|p| num(p.result, x_key).map(|x| format!("{} ({x:.1})", p.label))).collect();
    let upper = metric.to_uppercase();
    Chart {
        id: format!("sweep-{metric}-{}", if x_key == "output_throughput" { "tok" } else { "req" }),
        title: format!("{upper} vs {x_label}"),
        note: format!(
            "One point per experiment point: achieved {x_label} against {upper} (service view). Points: {}.",
            order.join(", ")
        ),
        x: AxisSpec::new(x_label).starting_at_zero(),
        y: AxisSpec::new(format!("{upper} (ms)")).starting_at_zero(),
        series,
    }
}

/// The HTML report of an experiment document; `goodput` adds per-request SLO lines (the saved
/// sweep document does not keep the `--goodput` bounds).
pub fn sweep_report(doc: &Value, goodput: &[Slo]) -> Result<String, ExperimentError> {
    let kind = doc.get("servebench_experiment").and_then(Value::as_str).unwrap_or_default();
    if !KINDS.contains(&kind) {
        return Err(ExperimentError::UnknownKind(kind.to_string()));
    }
    if kind == "multi_run" {
        return super::multi_run::multi_run_report(doc);
    }
    let pts = points(doc);
    if pts.is_empty() {
        return Err(ExperimentError::NoPoints(kind.to_string()));
    }
    let lim = limits(doc, goodput);
    let mut rows: Vec<(String, String)> = vec![("experiment".into(), kind.into())];
    for key in ["model_id", "backend", "sweep_parameter", "date", "result_rate", "lowest_failing_rate"] {
        if let Some(v) = doc.get(key).filter(|v| !v.is_null()) {
            rows.push((key.into(), v.as_str().map_or_else(|| v.to_string(), String::from)));
        }
    }
    for p in &pts {
        let mut parts = Vec::new();
        for (key, unit, name) in [
            ("output_throughput", "tok/s", ""),
            ("request_throughput", "req/s", ""),
            ("median_ttft_ms", "ms", "TTFT median "),
            ("median_tpot_ms", "ms", "TPOT median "),
            ("median_e2el_ms", "ms", "E2EL median "),
        ] {
            if let Some(v) = num(p.result, key) {
                parts.push(format!("{name}{v:.1} {unit}"));
            }
        }
        rows.push((p.label.clone(), parts.join(", ")));
    }
    let mut tok = Vec::new();
    let mut req = Vec::new();
    for metric in ["ttft", "tpot", "itl", "e2el"] {
        if pts.iter().any(|p| num(p.result, &format!("median_{metric}_ms")).is_some()) {
            tok.push(curve(&pts, metric, "output_throughput", "output tokens/s", &lim));
            req.push(curve(&pts, metric, "request_throughput", "requests/s", &lim));
        }
    }
    let title = format!(
        "servebench {}: {}",
        kind.replace('_', " "),
        doc.get("model_id").and_then(Value::as_str).unwrap_or("?")
    );
    Ok(render_experiment(
        &title,
        &rows,
        &[("Throughput–latency (output tokens/s)", tok), ("Throughput–latency (requests/s)", req)],
    ))
}
