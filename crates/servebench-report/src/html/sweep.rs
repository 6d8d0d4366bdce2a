//! The report of an experiment document (`--sweep-*`, `--find-max-rate`, `--slo`, `--num-runs`;
//! docs/experiments.md): throughput–latency curves, one point per sweep point, with horizontal SLO
//! lines when the experiment (or the report's `--goodput`) has latency limits.

use servebench_core::metrics::Slo;

use crate::document::{ExperimentDocument, Metrics};
use crate::result_keys::{Headline, LatencyKey, LatencyMetric, MetricKey, Stat};
use crate::sections::experiment::INTERRUPTED_LEGEND;

use super::experiment_error::ExperimentError;
use super::page::render_experiment;
use super::svg::{AxisSpec, Chart, Kind, Series, Style};

/// Experiment kinds this report knows (`servebench_experiment`).
const KINDS: [&str; 4] = ["sweep", "find_max_rate", "slo_search", "multi_run"];

/// One point: its label, swept value, search step and full single-run result.
struct Point<'a> {
    label: String,
    /// The swept value (the concurrency of a concurrency sweep, else the request rate; `inf`
    /// sorts last); `None` when the point does not say.
    swept: Option<f64>,
    /// A search's step: `(step number, passed)`, from the trajectory entry of the same index.
    step: Option<(u64, bool)>,
    /// The point's result, vLLM's `0.0` placeholders read as no data
    /// ([`Metrics::vllm_placeholders_as_none`]): a point where nothing completed has no TTFT.
    result: Metrics,
    /// The result as written: a key it has a number for is a metric the run reported (with
    /// data or not); one it has `null` or nothing for was not selected.
    written: &'a Metrics,
    /// The point was interrupted (its `label` ends in `*`).
    interrupted: bool,
}

/// The points with a result, ordered by the swept value (a search tries rates out of order:
/// 30, 60, 45, 37.5, …; curves and rows follow the rate).
fn points(doc: &ExperimentDocument) -> Vec<Point<'_>> {
    let pts = doc.points.as_deref().unwrap_or_default();
    let by_concurrency =
        doc.settings.sweep_parameter.as_ref().and_then(|s| s.as_str()) == Some("max_concurrency");
    let steps = doc.trajectory.as_deref().unwrap_or_default();
    let mut out: Vec<Point<'_>> = pts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let p = p.0.as_ref()?;
            let point_result = p.result.as_ref()?;
            let written = &point_result.metrics;
            let result = written.clone().vllm_placeholders_as_none();
            let label = p.label.clone().unwrap_or_else(|| {
                format!("rate {}", p.request_rate.as_ref().map(|r| r.json()).unwrap_or_default())
            });
            // An interrupted point is marked as in the console's table (rows, chart labels).
            let interrupted = point_result.interrupted == Some(true);
            let label = crate::sections::experiment::marked_label(&label, interrupted);
            let swept = if by_concurrency { &p.max_concurrency } else { &p.request_rate };
            let step = steps.get(i).and_then(|s| s.0.as_ref()).and_then(|s| Some((s.step?, s.passed?)));
            let swept = swept.as_ref().and_then(|v| v.as_f64());
            Some(Point { label, swept, step, result, written, interrupted })
        })
        .collect();
    // Stable: points without a swept value keep their order, after the others.
    out.sort_by(|a, b| {
        let key = |p: &Point<'_>| (p.swept.is_none(), p.swept.unwrap_or(0.0));
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
    });
    out
}

/// A point's label is left out (the dot stays) when it is closer to the last labelled point than
/// these shares of the axes (both start at 0) in x and in y: a label is about 60 px of a 630-px
/// plot, and a search's last steps sit within a few percent of each other.
const LABEL_GAP_X: f64 = 0.12;
const LABEL_GAP_Y: f64 = 0.06;

/// `(x, y, label)` with the labels of crowded points emptied.
fn declutter(points: Vec<(f64, f64, String)>) -> Vec<(f64, f64, String)> {
    let extent = |f: fn(&(f64, f64, String)) -> f64| {
        points.iter().map(|p| f(p).abs()).filter(|v| v.is_finite()).fold(f64::MIN_POSITIVE, f64::max)
    };
    let (rx, ry) = (extent(|p| p.0), extent(|p| p.1));
    let mut last: Option<(f64, f64)> = None;
    points
        .into_iter()
        .map(|(x, y, l)| {
            let crowded = last.is_some_and(|(lx, ly)| {
                (x - lx).abs() < LABEL_GAP_X * rx && (y - ly).abs() < LABEL_GAP_Y * ry
            });
            if crowded {
                (x, y, String::new())
            } else {
                last = Some((x, y));
                (x, y, l)
            }
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
fn limits(doc: &ExperimentDocument, goodput: &[Slo]) -> Vec<Limit> {
    let mut out = Vec::new();
    let slos = doc.criterion.as_ref().and_then(|c| c.slos.as_deref()).unwrap_or_default();
    for s in slos.iter().filter_map(|s| s.0.as_ref()) {
        if let (Some(n), Some(v)) = (s.name.as_deref(), s.max_ms) {
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

fn num(v: &Metrics, key: &MetricKey) -> Option<f64> {
    v.get(key).filter(|x| x.is_finite())
}

/// The statistic `stat` of `metric`.
fn stat_key(stat: Stat, metric: LatencyMetric) -> MetricKey {
    MetricKey::Latency(LatencyKey { stat, metric })
}

/// The highest `pNN_<metric>_ms` percentile key present in every point (e.g. `p99_ttft_ms`).
fn top_percentile(pts: &[Point<'_>], metric: LatencyMetric) -> Option<LatencyKey> {
    // Points without data (nothing completed) have no percentile to miss.
    let median = stat_key(Stat::Median, metric);
    let with_data: Vec<&Point<'_>> = pts.iter().filter(|x| num(&x.result, &median).is_some()).collect();
    let first = &with_data.first()?.result;
    let mut best: Option<(f64, LatencyKey)> = None;
    for k in first.latency.keys_of(metric) {
        let Stat::Percentile(p) = &k.stat else { continue };
        if let Ok(p) = p.parse::<f64>() {
            let key = MetricKey::Latency(k.clone());
            if with_data.iter().all(|x| num(&x.result, &key).is_some())
                && best.as_ref().is_none_or(|b| p > b.0)
            {
                best = Some((p, k.clone()));
            }
        }
    }
    best.map(|b| b.1)
}

/// Throughput–latency curve of `metric`: x = achieved throughput (`x_key`), y = its median
/// (solid) and highest saved percentile (dashed), one point per experiment point.
fn curve(pts: &[Point<'_>], metric: LatencyMetric, x: Headline, x_label: &str, limits: &[Limit]) -> Chart {
    let x_key = &MetricKey::Headline(x);
    let mut series = Vec::new();
    let mut keys = vec![(stat_key(Stat::Median, metric), "median".to_string(), Style::Solid)];
    if let Some(k) = top_percentile(pts, metric) {
        let name = k.stat.to_string();
        keys.push((MetricKey::Latency(k), name, Style::Dashed));
    }
    let metric = metric.name();
    let mut xs = Vec::new();
    for (key, name, style) in &keys {
        let line: Vec<(f64, f64)> =
            pts.iter().filter_map(|p| Some((num(&p.result, x_key)?, num(&p.result, key)?))).collect();
        xs.extend(line.iter().map(|p| p.0));
        if line.is_empty() {
            continue;
        }
        let upper = metric.to_uppercase();
        let kind = if *style == Style::Solid {
            let labeled = pts
                .iter()
                .filter_map(|p| Some((num(&p.result, x_key)?, num(&p.result, key)?, p.label.clone())))
                .collect();
            Kind::Labeled(declutter(labeled))
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
        pts.iter().filter_map(|p| num(&p.result, x_key).map(|x| format!("{} ({x:.1})", p.label))).collect();
    let upper = metric.to_uppercase();
    Chart {
        id: format!("sweep-{metric}-{}", if x == Headline::OutputThroughput { "tok" } else { "req" }),
        title: format!("{upper} vs {x_label}"),
        note: format!(
            "One point per experiment point, in order of the swept value: achieved {x_label} against \
             {upper} (service view). Points: {}.",
            order.join(", ")
        ),
        x: AxisSpec::new(x_label).starting_at_zero(),
        y: AxisSpec::new(format!("{upper} (ms)")).starting_at_zero(),
        series,
    }
}

/// The HTML report of an experiment document; `goodput` adds per-request SLO lines (the saved
/// sweep document does not keep the `--goodput` bounds).
pub fn sweep_report(doc: &ExperimentDocument, goodput: &[Slo]) -> Result<String, ExperimentError> {
    let kind = doc.kind().unwrap_or_default();
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
        if let Some(v) = doc.settings.get(key).filter(|v| !v.is_null()) {
            rows.push((key.into(), v.text()));
        }
    }
    for p in &pts {
        let mut parts = Vec::new();
        for (key, unit, name) in [
            (MetricKey::Headline(Headline::OutputThroughput), "tok/s", ""),
            (MetricKey::Headline(Headline::RequestThroughput), "req/s", ""),
            (stat_key(Stat::Median, LatencyMetric::Ttft), "ms", "TTFT median "),
            (stat_key(Stat::Median, LatencyMetric::Tpot), "ms", "TPOT median "),
            (stat_key(Stat::Median, LatencyMetric::E2el), "ms", "E2EL median "),
        ] {
            match num(&p.result, &key) {
                Some(v) => parts.push(format!("{name}{v:.1} {unit}")),
                // Reported without data (nothing completed): "–", not vLLM's 0.0 placeholder.
                None if !name.is_empty() && num(p.written, &key).is_some() => parts.push(format!("{name}–")),
                None => {}
            }
        }
        if let Some((step, passed)) = p.step {
            parts.insert(0, format!("step {step}, {}", if passed { "pass" } else { "fail" }));
        }
        rows.push((p.label.clone(), parts.join(", ")));
    }
    if pts.iter().any(|p| p.interrupted) {
        let (mark, meaning) = INTERRUPTED_LEGEND.split_once(' ').unwrap_or(("*", INTERRUPTED_LEGEND));
        rows.push((mark.to_owned(), meaning.to_owned()));
    }
    let mut tok = Vec::new();
    let mut req = Vec::new();
    for metric in LatencyMetric::ALL {
        if pts.iter().any(|p| num(&p.result, &stat_key(Stat::Median, metric)).is_some()) {
            tok.push(curve(&pts, metric, Headline::OutputThroughput, "output tokens/s", &lim));
            req.push(curve(&pts, metric, Headline::RequestThroughput, "requests/s", &lim));
        }
    }
    let model = doc.settings.model_id.as_ref().and_then(|m| m.as_str()).unwrap_or("?");
    let title = format!("servebench {}: {model}", kind.replace('_', " "));
    let mut sections = Vec::new();
    let search = super::search::search_charts(doc);
    if !search.is_empty() {
        sections.push(("Search criterion", search));
    }
    sections.push(("Throughput–latency (output tokens/s)", tok));
    sections.push(("Throughput–latency (requests/s)", req));
    Ok(render_experiment(&title, &rows, &sections))
}
