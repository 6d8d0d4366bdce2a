//! The report of a `--num-runs` document (docs/reports.md): one chart per metric with each run's
//! value and the across-run mean and 95 % confidence interval, and a row per run and per metric.
//!
//! The document's `runs` are points (`{label, seed, result}`); `summary` holds the across-run
//! aggregate of every metric key (`{n, mean, std, min, max, ci95_low, ci95_high}`).

use super::experiment_error::ExperimentError;
use super::page::render_experiment;
use super::svg::{AxisSpec, Chart, Kind, Series, Style};
use crate::document::{ExperimentDocument, Metrics};
use crate::result_keys::MetricKey;

/// Throughput keys drawn (when present), then latency statistics per metric.
const THROUGHPUT: [(&str, &str); 6] = [
    ("request_throughput", "requests/s"),
    ("output_throughput", "output tokens/s"),
    ("total_token_throughput", "total tokens/s"),
    ("max_output_tokens_per_s", "peak output tokens/s"),
    ("steady_state.request_throughput", "steady-state requests/s"),
    ("steady_state.output_throughput", "steady-state output tokens/s"),
];
const LATENCY_METRICS: [&str; 4] = ["ttft", "tpot", "itl", "e2el"];
const LATENCY_STATS: [&str; 3] = ["mean", "median", "p99"];

/// The number of metric `key` (`steady_state.x` reaches into `steady_state`); `None` for null,
/// missing or not a metric key.
fn value_at(v: &Metrics, key: &str) -> Option<f64> {
    v.get(&MetricKey::parse(key)?).filter(|x| x.is_finite())
}

/// One run: its label and result, vLLM's `0.0` placeholders read as no data
/// ([`Metrics::vllm_placeholders_as_none`]: a run where nothing completed has no TTFT).
struct Run {
    label: String,
    result: Metrics,
}

fn runs(doc: &ExperimentDocument) -> Vec<Run> {
    let list = doc.runs.as_deref().unwrap_or_default();
    list.iter()
        .enumerate()
        .filter_map(|(i, r)| {
            // A point `{label, seed, result}`; a bare result is accepted too.
            let r = r.0.as_ref()?;
            let result = r.result.as_ref().unwrap_or(&r.bare).clone().vllm_placeholders_as_none();
            let label =
                r.seed.map_or_else(|| format!("run {}", i + 1), |s| format!("run {} (seed {s})", i + 1));
            Some(Run { label, result })
        })
        .collect()
}

/// The across-run aggregate of a metric: mean, 95 % CI (absent for one run), runs with data.
type Aggregate = (f64, Option<(f64, f64)>, u64);

/// The across-run aggregate of `key`.
fn aggregate(doc: &ExperimentDocument, key: &str) -> Option<Aggregate> {
    let key = MetricKey::parse(key)?;
    let a = &doc.summary.as_ref()?.0.iter().find(|(k, _)| *k == key)?.1;
    let f = |v: Option<f64>| v.filter(|x| x.is_finite());
    Some((f(a.mean)?, f(a.ci95_low).zip(f(a.ci95_high)), a.n.unwrap_or(0)))
}

/// A value with its unit, "–" without data (docs/metrics.md, "Metrics without data").
fn fmt(v: Option<f64>, unit: &str) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.2} {unit}"))
}

/// Each run's value of `key` (x = run number), its mean and its confidence interval.
fn chart(doc: &ExperimentDocument, rs: &[Run], key: &str, label: &str) -> Option<Chart> {
    let points: Vec<(f64, f64, String)> = rs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some(((i + 1) as f64, value_at(&r.result, key)?, format!("{}", i + 1))))
        .collect();
    if points.is_empty() {
        return None;
    }
    let (x0, x1) = (1.0, rs.len().max(2) as f64);
    let mut series =
        vec![Series { run: 0, name: "per run".into(), style: Style::Solid, kind: Kind::Labeled(points) }];
    let agg = aggregate(doc, key);
    if let Some((mean, ci, _)) = agg {
        series.push(Series {
            run: 1,
            name: format!("mean {mean:.2}"),
            style: Style::Bold,
            kind: Kind::Line(vec![(x0, mean), (x1, mean)]),
        });
        if let Some((lo, hi)) = ci {
            for (name, y) in [(format!("95% CI low {lo:.2}"), lo), (format!("95% CI high {hi:.2}"), hi)] {
                series.push(Series {
                    run: 2,
                    name,
                    style: Style::Dashed,
                    kind: Kind::Line(vec![(x0, y), (x1, y)]),
                });
            }
        }
    }
    let across = match agg {
        Some((mean, Some((lo, hi)), n)) => format!("mean {mean:.2}, 95% CI [{lo:.2}, {hi:.2}] over {n} runs"),
        Some((mean, None, n)) => format!("mean {mean:.2} over {n} run(s), no CI"),
        None => "no across-run aggregate".into(),
    };
    let mut x = AxisSpec::new("run");
    x.integer = true;
    Some(Chart {
        id: format!("runs-{}", key.replace('.', "-")),
        title: format!("{label} per run"),
        note: format!(
            "Dots: each run's {label} ({key}); lines: the mean across runs and its 95% confidence interval \
             (Student's t). {across}."
        ),
        x,
        y: AxisSpec::new(label).starting_at_zero(),
        series,
    })
}

/// The HTML report of a `--num-runs` document.
pub(super) fn multi_run_report(doc: &ExperimentDocument) -> Result<String, ExperimentError> {
    let rs = runs(doc);
    if rs.is_empty() {
        return Err(ExperimentError::NoPoints("multi_run".into()));
    }
    let mut rows: Vec<(String, String)> = vec![("experiment".into(), "multi_run".into())];
    for key in ["model_id", "backend", "date", "num_runs", "same_seed", "request_rate", "max_concurrency"] {
        if let Some(v) = doc.settings.get(key).filter(|v| !v.is_null()) {
            rows.push((key.into(), v.text()));
        }
    }
    for r in &rs {
        let g = |k: &str| value_at(&r.result, k);
        rows.push((
            r.label.clone(),
            format!(
                "{}, {}, TTFT median {}, TPOT median {}, steady-state {}",
                fmt(g("request_throughput"), "req/s"),
                fmt(g("output_throughput"), "tok/s"),
                fmt(g("median_ttft_ms"), "ms"),
                fmt(g("median_tpot_ms"), "ms"),
                fmt(g("steady_state.request_throughput"), "req/s"),
            ),
        ));
    }
    let mut thr: Vec<(String, Chart)> = Vec::new();
    for (key, label) in THROUGHPUT {
        thr.extend(chart(doc, &rs, key, label).map(|c| (key.to_owned(), c)));
    }
    let mut lat: Vec<(String, Chart)> = Vec::new();
    for m in LATENCY_METRICS {
        for s in LATENCY_STATS {
            let key = format!("{s}_{m}_ms");
            lat.extend(chart(doc, &rs, &key, &format!("{} {s} (ms)", m.to_uppercase())).map(|c| (key, c)));
        }
    }
    for (key, _) in thr.iter().chain(&lat) {
        if let Some((mean, ci, n)) = aggregate(doc, key) {
            let ci = ci.map_or_else(|| "no CI".to_owned(), |(lo, hi)| format!("95% CI [{lo:.2}, {hi:.2}]"));
            rows.push((format!("{key} across runs"), format!("mean {mean:.2}, {ci} (n = {n})")));
        }
    }
    let (thr, lat): (Vec<Chart>, Vec<Chart>) =
        (thr.into_iter().map(|c| c.1).collect(), lat.into_iter().map(|c| c.1).collect());
    let title = format!(
        "servebench multi run: {} ({} runs)",
        doc.settings.model_id.as_ref().and_then(|m| m.as_str()).unwrap_or("?"),
        rs.len()
    );
    Ok(render_experiment(
        &title,
        &rows,
        &[
            ("Throughput per run (mean and 95% CI across runs)", thr),
            ("Latency per run (mean and 95% CI across runs)", lat),
        ],
    ))
}
