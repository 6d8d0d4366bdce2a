//! `servebench compare`: every result against the first (the baseline) — values, delta, %
//! change with a direction-aware marker, and a significance test where the data allow one
//! (docs/metrics.md, "Comparing runs"):
//!
//! - both inputs are multi-run documents (`--num-runs`): Welch's t-test on the per-run values of
//!   each metric;
//! - both inputs have per-request data (`<result>.records.jsonl` next to the result, or vLLM's
//!   `--save-detailed` arrays): on the per-request values of the latency metric a statistic
//!   belongs to (TTFT, TPOT, ITL, E2EL), a test of what the statistic measures — the Mann–Whitney
//!   U test (location) for means, medians and percentiles, the Brown–Forsythe test (spread) for
//!   `std_*`;
//! - otherwise no test (`-`).

use std::collections::HashMap;

use serde::Serialize;
use servebench_core::inference::{brown_forsythe, mann_whitney_u, welch_t_test, TestResult};
use servebench_core::metrics::{is_completed, RequestTimes};
use servebench_core::RequestRecord;

use crate::change::{change_percent, format_change};
use crate::document::{DetailedArrays, ExperimentDocument, Metrics};
use crate::result_keys::{Better, LatencyKey, LatencyMetric, MetricKey, Stat};

/// Per-request values (ms) by latency metric.
pub type PerRequest = HashMap<LatencyMetric, Vec<f64>>;

/// One input of a comparison.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub name: String,
    /// Values shown (the mean over runs for a multi-run document).
    pub values: Metrics,
    /// Per-run results of a multi-run document.
    pub runs: Vec<Metrics>,
    /// Per-request values (ms) by latency metric, when available.
    pub per_request: PerRequest,
    /// The records file the result names (`records_file`) when it is missing: the per-request
    /// values then come from the result's arrays, if any (said on the console).
    pub missing_records: Option<std::path::PathBuf>,
    /// Results the file holds one per line (`--append-result`) when more than one: the last is
    /// compared (said on the console). 0 otherwise.
    pub appended_results: usize,
}

impl Loaded {
    /// A multi-run document: its across-run means, and its runs for Welch's test.
    pub fn multi_run(name: String, doc: &ExperimentDocument) -> Loaded {
        Loaded {
            name,
            values: doc.summary_means(),
            runs: doc.run_results(),
            per_request: PerRequest::new(),
            missing_records: None,
            appended_results: 0,
        }
    }
}

/// `ms` rounded to the nanosecond: values read from records (µs) and from vLLM's arrays (s)
/// meet on one grid, so the same request is a tie in a rank test (`0.100704 s × 1000` is
/// `100.70400000000001`, not the records' `100.704`: identical runs gave p = 0.82).
fn on_ns_grid(ms: f64) -> f64 {
    (ms * 1e6).round() / 1e6
}

/// Per-request values of the completed records.
pub fn per_request_from_records(records: &[RequestRecord]) -> PerRequest {
    let mut out = PerRequest::new();
    for r in records.iter().filter(|r| is_completed(r)) {
        let t = RequestTimes::of(r);
        let ms = |us: u64| on_ns_grid(us as f64 / 1000.0);
        if let Some(v) = t.ttft_us {
            out.entry(LatencyMetric::Ttft).or_default().push(ms(v));
        }
        if let Some(v) = t.tpot_us {
            out.entry(LatencyMetric::Tpot).or_default().push(on_ns_grid(v / 1000.0));
        }
        if let Some(v) = t.e2el_us {
            out.entry(LatencyMetric::E2el).or_default().push(ms(v));
        }
        let gaps = r.token_events.gaps_us.iter().map(|&g| on_ns_grid(f64::from(g) / 1000.0));
        out.entry(LatencyMetric::Itl).or_default().extend(gaps);
    }
    out
}

/// vLLM's `--save-detailed` arrays (seconds): `ttfts`, `latencies` (rebuilt from `ttfts` and
/// `itls` when absent: [`DetailedArrays::latency`]), `itls`, `output_lens`.
/// A failed request (latency 0) and an entry that is not a number are skipped.
pub fn per_request_from_arrays(d: &DetailedArrays) -> PerRequest {
    let (ttfts, outs) =
        (d.ttfts.as_deref().unwrap_or_default(), d.output_lens.as_deref().unwrap_or_default());
    let mut out = PerRequest::new();
    if ttfts.is_empty() {
        return out;
    }
    for (i, t) in ttfts.iter().enumerate() {
        let (Some(ttft), Some(lat)) = (*t, d.latency(i)) else { continue };
        if lat <= 0.0 {
            continue;
        }
        out.entry(LatencyMetric::Ttft).or_default().push(on_ns_grid(ttft * 1000.0));
        out.entry(LatencyMetric::E2el).or_default().push(on_ns_grid(lat * 1000.0));
        if let Some(n) = outs.get(i).copied().flatten().filter(|n| *n > 1.0) {
            out.entry(LatencyMetric::Tpot).or_default().push(on_ns_grid((lat - ttft) * 1000.0 / (n - 1.0)));
        }
    }
    for gaps in d.itls.iter().flatten() {
        let gaps = gaps.0.iter().flatten().filter_map(|g| g.0).map(|g| on_ns_grid(g * 1000.0));
        out.entry(LatencyMetric::Itl).or_default().extend(gaps);
    }
    out
}

/// The test for `key` between `a` and `b`, if the data allow one.
pub fn test_for(a: &Loaded, b: &Loaded, key: &MetricKey) -> Option<TestResult> {
    if !a.runs.is_empty() && !b.runs.is_empty() {
        let xa: Vec<f64> = a.runs.iter().filter_map(|r| r.get(key)).collect();
        let xb: Vec<f64> = b.runs.iter().filter_map(|r| r.get(key)).collect();
        return welch_t_test(&xa, &xb);
    }
    let m = key.latency_metric()?;
    let (xa, xb) = (a.per_request.get(&m)?, b.per_request.get(&m)?);
    match key {
        // A spread statistic: a test of spread, not of location.
        MetricKey::Latency(LatencyKey { stat: Stat::Std, .. }) => brown_forsythe(xa, xb),
        _ => mann_whitney_u(xa, xb),
    }
}

/// The direction column: `better` (improvement), `worse` (regression), blank otherwise.
pub fn direction(marker: &str) -> &'static str {
    match marker {
        "+" => "better",
        "-" => "worse",
        _ => "",
    }
}

/// `+` when the change is an improvement, `-` when a regression, blank otherwise.
pub fn marker(key: &MetricKey, delta: f64) -> &'static str {
    match (key.better(), delta) {
        (_, d) if d == 0.0 || d.is_nan() => "",
        (Better::Higher, d) if d > 0.0 => "+",
        (Better::Lower, d) if d < 0.0 => "+",
        (Better::Neither, _) => "",
        _ => "-",
    }
}

/// One metric of a comparison (a row of the table and of `--output-json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareRow {
    pub metric: MetricKey,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// b − a (finite values only).
    pub delta: Option<f64>,
    /// (b − a) / a × 100; `None` when undefined (a = 0 with b ≠ 0, or a side without data).
    pub change_percent: Option<f64>,
    /// `+` improvement, `-` regression, empty otherwise.
    pub marker: &'static str,
    /// `welch_t`, `mann_whitney_u` or `brown_forsythe`, when the data allow a test.
    pub test: Option<String>,
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
}

/// One comparison of `--output-json`: `b` against the baseline `a`.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison<'a> {
    pub a: &'a str,
    pub b: &'a str,
    pub alpha: f64,
    pub rows: Vec<CompareRow>,
}

/// Compares `b` against the baseline `a`: one row per metric key either reports.
pub fn compare(a: &Loaded, b: &Loaded, alpha: f64) -> Vec<CompareRow> {
    // A's keys in A's order, then keys only B reports (A has no data for them).
    let mut keys = a.values.keys();
    for k in b.values.keys() {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter().filter_map(|k| row(a, b, k, alpha)).collect()
}

fn row(a: &Loaded, b: &Loaded, key: MetricKey, alpha: f64) -> Option<CompareRow> {
    // A metric one side has no data for (null) stays in the table as n/a.
    let (va, vb) = (a.values.get(&key), b.values.get(&key));
    if va.is_none() && vb.is_none() {
        return None;
    }
    let delta = va.zip(vb).map(|(va, vb)| vb - va).filter(|d| d.is_finite());
    let change = va.zip(vb).and_then(|(va, vb)| change_percent(va, vb));
    let test = test_for(a, b, &key);
    Some(CompareRow {
        marker: delta.map_or("", |d| marker(&key, d)),
        metric: key,
        a: va,
        b: vb,
        delta,
        change_percent: change,
        test: test.as_ref().map(|t| t.test.clone()),
        p_value: test.as_ref().map(|t| t.p_value),
        significant: test.as_ref().map(|t| t.significant(alpha) && agrees_with_shift(t, delta)),
    })
}

/// Whether a row's change goes the way its test found the samples moved. Mann–Whitney tests
/// one shift of the whole distribution (its `z` > 0: B's values are larger), so a statistic
/// that moved the other way (a mean down while the values shifted up, as a tail can make it)
/// is not a significant change of that statistic. Other tests test the statistic itself.
fn agrees_with_shift(test: &TestResult, delta: Option<f64>) -> bool {
    if test.test != "mann_whitney_u" {
        return true;
    }
    delta.is_some_and(|d| d != 0.0 && d.signum() == test.statistic.signum())
}

/// The console table of one comparison.
pub fn table(a: &Loaded, b: &Loaded, rows: &[CompareRow], alpha: f64) -> String {
    let mut out = format!("{:=^117}\n", " Benchmark Comparison ");
    out.push_str(&format!("A: {}\nB: {}\n", a.name, b.name));
    out.push_str(&format!(
        "{:<34} {:>12} {:>12} {:>12} {:>10} {:<6} {:>16} {:>9} {:>5}\n",
        "Metric", "A", "B", "Delta", "Change", "Dir", "Test", "p", "Sig"
    ));
    for r in rows {
        out.push_str(&table_line(r));
    }
    out.push_str(&format!(
        "Dir: B better or worse than A (by the metric's direction). Sig: p < {alpha} (welch_t: Welch's \
         t-test on per-run values; mann_whitney_u: Mann-Whitney U on per-request values, two-sided, for \
         means and percentiles; brown_forsythe: Brown-Forsythe test of spread on per-request values, for \
         std).\n"
    ));
    out
}

fn table_line(r: &CompareRow) -> String {
    let change = match r.change_percent {
        Some(c) => format_change(Some(c), 2),
        None => "–".to_owned(),
    };
    let num = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}"));
    format!(
        "{:<34} {:>12} {:>12} {:>12} {:>10} {:<6} {:>16} {:>9} {:>5}\n",
        r.metric.to_string(),
        num(r.a),
        num(r.b),
        num(r.delta),
        change,
        direction(r.marker),
        r.test.as_deref().unwrap_or("-"),
        r.p_value.map_or("-".into(), |p| format!("{p:.4}")),
        match r.significant {
            Some(true) => "yes",
            Some(false) => "no",
            None => "-",
        }
    )
}

#[cfg(test)]
mod tests;
