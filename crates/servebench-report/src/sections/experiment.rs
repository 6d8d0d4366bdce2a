//! The experiment section: the sweep summary (console table, CSV, `summary` rows) and the
//! multi-run aggregate (`summary` of a `--num-runs` document and its console table).

use crate::document::{Aggregate, Metrics, Summary};
use crate::fmt::percentile_word;
use crate::result_keys::{Headline, MetricKey};
use servebench_core::inference::aggregate;
use servebench_core::metrics::{RunMetrics, SteadyState};

/// What a summary row reads of one experiment point.
#[derive(Debug, Clone, Copy)]
pub struct PointFigures<'a> {
    pub label: &'a str,
    pub request_rate: f64,
    pub max_concurrency: Option<usize>,
    pub num_prompts: usize,
    pub metrics: &'a RunMetrics,
    /// The point's steady-state window, when it has one.
    pub steady: Option<&'a SteadyState>,
    /// A pooling backend's point (embeddings, scoring, …): no output tokens, and its total
    /// tokens/s is its result's (`crate::sections::pooling::input_throughput`).
    pub pooling: bool,
}

/// One row of the sweep summary.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    pub columns: Vec<(String, Option<f64>)>,
    pub label: String,
    /// The point was interrupted: its figures cover part of its requests (marked `*` in the
    /// table, never the best point).
    pub interrupted: bool,
}

/// Summary columns of a point: throughputs, goodput, steady-state throughputs, and TTFT/TPOT
/// at the median, P90 and each extra summary percentile.
pub fn summary_row(p: &PointFigures<'_>, extra_percentiles: &[f64]) -> SummaryRow {
    let m = p.metrics;
    // Metrics without data are None ("n/a", empty CSV cell), never 0.
    let rate = |v: f64| (m.duration_s > 0.0).then_some(v);
    let has = |s: &servebench_core::stats::Summary, v: f64| (s.count > 0).then_some(v);
    let steady = p.steady;
    let mut columns = vec![
        // An infinite rate is `inf` (console, CSV) and "inf" in JSON, as vLLM writes it.
        ("request_rate".to_owned(), Some(p.request_rate).filter(|r| !r.is_nan())),
        ("max_concurrency".to_owned(), p.max_concurrency.map(|c| c as f64)),
        ("num_prompts".to_owned(), Some(p.num_prompts as f64)),
        ("completed".to_owned(), Some(m.completed as f64)),
        ("failed".to_owned(), Some(m.failed as f64)),
        ("request_throughput".to_owned(), rate(m.request_throughput)),
        // A pooling point has its result's figures: no output, input tokens as the server
        // counted them (the client's count where it did not).
        ("output_throughput".to_owned(), (!p.pooling).then(|| rate(m.output_throughput)).flatten()),
        (
            "total_token_throughput".to_owned(),
            match p.pooling {
                true => crate::sections::pooling::input_throughput(m).as_f64().and_then(rate),
                false => rate(m.total_token_throughput),
            },
        ),
        ("request_goodput".to_owned(), m.request_goodput.and_then(rate)),
        ("ss_request_throughput".to_owned(), steady.map(|s| s.request_throughput)),
        ("ss_output_throughput".to_owned(), steady.and_then(|s| s.output_throughput)),
        ("median_ttft_ms".to_owned(), has(&m.ttft, m.ttft.median)),
        ("median_tpot_ms".to_owned(), has(&m.tpot, m.tpot.median)),
    ];
    let mut ps = vec![90.0];
    ps.extend(extra_percentiles.iter().copied().filter(|p| *p != 90.0));
    for q in ps {
        let w = percentile_word(q);
        columns.push((format!("p{w}_ttft_ms"), m.ttft.percentile(q).and_then(|v| has(&m.ttft, v))));
        columns.push((format!("p{w}_tpot_ms"), m.tpot.percentile(q).and_then(|v| has(&m.tpot, v))));
    }
    SummaryRow { columns, label: p.label.to_owned(), interrupted: false }
}

/// The best point: the highest `request_goodput` when goodput SLOs are given (the most
/// requests per second meeting them), else the highest `request_throughput`. Each point comes
/// with whether it is excluded: an interrupted or stopped-early point's figures cover part of
/// its requests, an invalid one's (run validity) another load than asked, so it is never the
/// best.
pub fn best<'a>(
    points: impl IntoIterator<Item = (&'a RunMetrics, bool)>,
    with_slos: bool,
) -> Option<(usize, &'static str, f64)> {
    let key = if with_slos { "request_goodput" } else { "request_throughput" };
    points
        .into_iter()
        .enumerate()
        .filter(|(_, (_, interrupted))| !interrupted)
        // A point where nothing completed served nothing: not a best (0.00 req/s was named).
        .filter(|(_, (m, _))| m.completed > 0)
        .filter_map(|(i, (m, _))| {
            let v = if with_slos { m.request_goodput } else { Some(m.request_throughput) };
            v.map(|v| (i, key, v))
        })
        // A goodput of 0 met no SLO: not a best either ("Best (request_goodput): 0.00" was named).
        .filter(|(_, _, v)| !with_slos || *v > 0.0)
        .max_by(|a, b| a.2.total_cmp(&b.2))
}

/// Columns that count requests (or cap them): integers in every format.
fn is_count(key: &str) -> bool {
    matches!(key, "max_concurrency" | "num_prompts" | "completed" | "failed")
}

/// A cell as the console and CSV show it: counts as integers, an infinite rate as `inf`,
/// other numbers with two decimals, no data as "n/a".
fn cell_text(key: &str, v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_infinite() => crate::info::python_float(x),
        Some(x) if is_count(key) => format!("{}", x as u64),
        other => crate::fmt::f2_or_na(other),
    }
}

/// A cell in the JSON `summary`: counts as integers, an infinite rate as "inf" (vLLM's
/// `request_rate`), no data as null.
fn cell_json(key: &str, v: Option<f64>) -> serde_json::Value {
    match v {
        Some(x) if x.is_infinite() => crate::fmt::number_or_inf(x),
        Some(x) if is_count(key) => serde_json::Value::from(x as u64),
        Some(x) => serde_json::Value::from(x),
        None => serde_json::Value::Null,
    }
}

/// What the `*` after a point's label means (the console table's and the HTML report's legend).
pub const INTERRUPTED_LEGEND: &str = "* interrupted: partial figures, not a candidate for Best";

/// A point's label as the console table and the HTML report show it: `*` after an interrupted
/// point's (see [`INTERRUPTED_LEGEND`]).
pub fn marked_label(label: &str, interrupted: bool) -> String {
    if interrupted {
        format!("{label}*")
    } else {
        label.to_owned()
    }
}

/// The console table.
pub fn table(rows: &[SummaryRow]) -> String {
    let Some(first) = rows.first() else { return String::new() };
    let mut out = format!("{:=^100}\n", " Sweep Summary ");
    out.push_str(&format!("{:<18}", "point"));
    for (k, _) in &first.columns {
        out.push_str(&format!(" {:>12}", short(k)));
    }
    out.push('\n');
    for r in rows {
        let label = marked_label(&r.label, r.interrupted);
        out.push_str(&format!("{label:<18}"));
        for (k, v) in &r.columns {
            out.push_str(&format!(" {:>12}", cell_text(k, *v)));
        }
        out.push('\n');
    }
    if rows.iter().any(|r| r.interrupted) {
        out.push_str(INTERRUPTED_LEGEND);
        out.push('\n');
    }
    out
}

fn short(k: &str) -> String {
    k.replace("_throughput", "_tput").replace("max_concurrency", "concurrency").replace("request_", "req_")
}

/// The CSV summary: a header and one line per point, its last column `interrupted` (`true` for
/// a partial point, the console's `*`).
pub fn csv(rows: &[SummaryRow]) -> String {
    let Some(first) = rows.first() else { return String::new() };
    let mut out = String::from("label");
    for (k, _) in &first.columns {
        out.push(',');
        out.push_str(k);
    }
    out.push_str(",interrupted\n");
    for r in rows {
        out.push_str(&format!("\"{}\"", r.label.replace('"', "\"\"")));
        for (k, v) in &r.columns {
            out.push(',');
            match v {
                Some(v) if is_count(k) || v.is_infinite() => out.push_str(&cell_text(k, Some(*v))),
                Some(v) => out.push_str(&v.to_string()),
                None => {}
            }
        }
        out.push_str(if r.interrupted { ",true\n" } else { ",false\n" });
    }
    out
}

/// A row as a JSON object (the sweep document's `summary`): `label`, then each column.
impl serde::Serialize for SummaryRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("label", &self.label)?;
        if self.interrupted {
            map.serialize_entry("interrupted", &true)?;
        }
        for (k, v) in &self.columns {
            map.serialize_entry(k, &cell_json(k, *v))?;
        }
        map.end()
    }
}

/// Per-metric aggregate over runs: `{key: {n, mean, std, min, max, ci95_low, ci95_high}}` for
/// every metric key any run's result has data for (a run without data — `null`, e.g. no
/// steady-state window — is left out of that key's `n`).
pub fn multi_run_summary(results: &[Metrics]) -> Summary {
    let mut keys: Vec<MetricKey> = Vec::new();
    for k in results.iter().flat_map(Metrics::keys) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    for key in keys {
        let values: Vec<f64> = results.iter().filter_map(|r| r.get(&key)).collect();
        if let Some(a) = aggregate(&values) {
            out.push((key, Aggregate::from(a)));
        }
    }
    Summary(out)
}

/// The console table of a multi-run summary.
pub fn multi_run_table(summary: &Summary, runs: usize) -> String {
    let noun = if runs == 1 { "run" } else { "runs" };
    let mut out = format!("{:=^100}\n", format!(" Multi-Run Summary ({runs} {noun}) "));
    out.push_str(&format!(
        "{:<36} {:>12} {:>12} {:>12} {:>12} {:>25}\n",
        "Metric", "Mean", "Std", "Min", "Max", "95% CI"
    ));
    for (k, a) in &summary.0 {
        let ci = match (a.ci95_low, a.ci95_high) {
            (Some(l), Some(h)) => format!("[{l:.2}, {h:.2}]"),
            _ => "-".into(),
        };
        out.push_str(&format!(
            "{:<36} {:>12} {:>12} {:>12} {:>12} {:>25}\n",
            k.to_string(),
            crate::fmt::f2_or_na(a.mean),
            crate::fmt::f2_or_na(a.std),
            crate::fmt::f2_or_na(a.min),
            crate::fmt::f2_or_na(a.max),
            ci
        ));
    }
    let throughput = MetricKey::Headline(Headline::RequestThroughput);
    if let Some((_, a)) = summary.0.iter().find(|(k, _)| *k == throughput) {
        if let (Some(m), Some(s)) = (a.mean, a.std) {
            if m > 0.0 {
                out.push_str(&format!("Throughput CV: {:.2}%\n", s / m * 100.0));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::metrics::{compute, MetricsConfig};
    use servebench_core::record::{ErrorKind, RequestRecord};

    /// The metrics of a point whose one request failed (HTTP 503 after 5 ms).
    fn one_failed_request() -> RunMetrics {
        let mut r = RequestRecord::scheduled(0, "r0".into(), 0, 10, 10);
        r.dispatched_us = Some(0);
        r.done_us = Some(5_000);
        r.fail(ErrorKind::HttpStatus, "HTTP 503");
        compute(&[r], &MetricsConfig::default())
    }

    /// Pins a pooling point's row carrying its result's figures: total tokens/s from the
    /// server-counted input tokens (it was the client's count), and no output throughput.
    /// Pins a multi-run summary left with one run (an interrupt or a stop in run 2 of 3): every
    /// key's `std` was 0.0 ("0.00"), a spread the data cannot tell; it is `null` ("n/a").
    #[test]
    fn a_summary_of_one_run_has_no_spread() {
        let doc: crate::document::ResultDocument =
            serde_json::from_value(serde_json::json!({"request_throughput": 12.5, "mean_ttft_ms": 40.0}))
                .unwrap();
        let one = multi_run_summary(std::slice::from_ref(&doc.metrics));
        let (_, a) =
            one.0.iter().find(|(k, _)| *k == MetricKey::Headline(Headline::RequestThroughput)).unwrap();
        assert_eq!((a.n, a.mean, a.std, a.ci95_low), (Some(1), Some(12.5), None, None));
        let table = multi_run_table(&one, 1);
        assert!(table.contains("n/a") && !table.contains("Throughput CV"), "{table}");
        let two = multi_run_summary(&[doc.metrics.clone(), doc.metrics]);
        let (_, a) =
            two.0.iter().find(|(k, _)| *k == MetricKey::Headline(Headline::RequestThroughput)).unwrap();
        assert_eq!(a.std, Some(0.0), "two equal runs: a spread of 0");
    }

    #[test]
    fn a_pooling_point_has_its_results_total_tokens_and_no_output() {
        let mut metrics = one_failed_request();
        metrics.duration_s = 2.0;
        metrics.total_token_throughput = 64.0; // 128 client-counted tokens
        metrics.output_throughput = 0.0;
        metrics.server_first_input_tokens = 152;
        let figures = |pooling| PointFigures {
            label: "concurrency 1",
            request_rate: f64::INFINITY,
            max_concurrency: Some(1),
            num_prompts: 1,
            metrics: &metrics,
            steady: None,
            pooling,
        };
        let col = |row: &SummaryRow, k: &str| row.columns.iter().find(|c| c.0 == k).and_then(|c| c.1);
        let pooled = summary_row(&figures(true), &[]);
        assert_eq!(
            (col(&pooled, "total_token_throughput"), col(&pooled, "output_throughput")),
            (Some(76.0), None)
        );
        let generated = summary_row(&figures(false), &[]);
        assert_eq!(col(&generated, "total_token_throughput"), Some(64.0));
    }

    /// Issue 15.2: a sweep point where every request failed shows n/a (empty CSV cells), not
    /// 0.00, for its latencies and steady state; `--num-runs` aggregates keep a key that only a
    /// later run has data for.
    #[test]
    fn sweep_summary_and_multi_run_aggregates_without_data_are_na_not_zero() {
        let metrics = one_failed_request();
        // The point has no steady-state window (NoSteadyState): `steady` is None.
        let p = PointFigures {
            label: "rate 10",
            request_rate: 10.0,
            max_concurrency: None,
            num_prompts: 1,
            metrics: &metrics,
            steady: None,
            pooling: false,
        };
        let row = summary_row(&p, &[]);
        let col = |k: &str| row.columns.iter().find(|c| c.0 == k).map(|c| c.1);
        assert_eq!(col("median_ttft_ms"), Some(None));
        assert_eq!(col("p90_tpot_ms"), Some(None));
        assert_eq!(col("ss_request_throughput"), Some(None));
        assert_eq!(col("request_throughput"), Some(Some(0.0)), "requests were sent: 0 req/s is data");
        let text = table(std::slice::from_ref(&row));
        assert!(text.contains("n/a") && !text.contains(" -\n"), "{text}");
        assert!(csv(&[row]).lines().nth(1).is_some_and(|l| l.contains(",,")));
        let a = serde_json::json!({"completed": 1, "steady_state": null});
        let b = serde_json::json!({"completed": 1, "steady_state": {"request_throughput": 4.0}});
        let runs: Vec<Metrics> =
            [a, b].into_iter().map(|v| serde_json::from_value(v).unwrap_or_default()).collect();
        let s = serde_json::to_value(multi_run_summary(&runs)).unwrap_or_default();
        assert_eq!(s["steady_state.request_throughput"]["n"], 1);
        assert_eq!(s["completed"]["n"], 2);
    }

    /// Issue 23 item 13: counts used to print as floats (`completed 60.00`, `"num_prompts":
    /// 60.0`), the infinite-rate point's rate as "n/a", and an interrupted point unmarked.
    #[test]
    fn sweep_summary_counts_are_integers_inf_rate_is_inf_and_interrupted_points_are_marked() {
        let metrics = one_failed_request();
        let p = PointFigures {
            label: "rate inf",
            request_rate: f64::INFINITY,
            max_concurrency: Some(8),
            num_prompts: 60,
            metrics: &metrics,
            steady: None,
            pooling: false,
        };
        let row = SummaryRow { interrupted: true, ..summary_row(&p, &[]) };
        let j = serde_json::to_value(&row).unwrap_or_default();
        assert_eq!(j["num_prompts"], serde_json::json!(60));
        assert!(j["num_prompts"].is_u64() && j["completed"].is_u64() && j["failed"].is_u64());
        assert_eq!(j["max_concurrency"], serde_json::json!(8));
        assert_eq!(j["request_rate"], serde_json::json!("inf"));
        assert_eq!(j["interrupted"], serde_json::json!(true));
        let text = table(std::slice::from_ref(&row));
        let line = text.lines().find(|l| l.starts_with("rate inf*")).unwrap_or_default();
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(&cells[2..7], &["inf", "8", "60", "0", "1"], "{text}");
        assert!(text.contains("* interrupted: partial figures, not a candidate for Best"), "{text}");
        let csv_line = csv(&[row]).lines().nth(1).unwrap_or_default().to_owned();
        assert!(csv_line.starts_with("\"rate inf\",inf,8,60,0,1,"), "{csv_line}");
        // A complete point has no `interrupted` key and no mark.
        let whole = serde_json::to_value(summary_row(&p, &[])).unwrap_or_default();
        assert!(whole.get("interrupted").is_none());
    }

    /// Pins the sweep CSV's `interrupted` column: an interrupted sweep's partial point was
    /// marked `*` in the console only; its CSV row could not be told from a complete one.
    #[test]
    fn sweep_csv_has_an_interrupted_column() {
        let metrics = one_failed_request();
        let p = PointFigures {
            label: "rate 20.0",
            request_rate: 20.0,
            max_concurrency: None,
            num_prompts: 60,
            metrics: &metrics,
            steady: None,
            pooling: false,
        };
        let rows = [summary_row(&p, &[]), SummaryRow { interrupted: true, ..summary_row(&p, &[]) }];
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("label,request_rate,") && lines[0].ends_with(",interrupted"), "{text}");
        assert!(lines[1].starts_with("\"rate 20.0\",20,") && lines[1].ends_with(",false"), "{text}");
        assert!(lines[2].starts_with("\"rate 20.0\",20,") && lines[2].ends_with(",true"), "{text}");
        let cells = |l: &str| l.split(',').count();
        assert_eq!((cells(lines[1]), cells(lines[2])), (cells(lines[0]), cells(lines[0])));
    }

    /// An interrupted sweep's partial point used to be announced as "Best" unmarked.
    #[test]
    fn best_point_skips_interrupted_points() {
        let done = |n: u64| {
            let recs: Vec<RequestRecord> = (0..n)
                .map(|i| {
                    let mut r = RequestRecord::scheduled(i, format!("r{i}"), 0, 10, 1);
                    r.outcome = servebench_core::record::Outcome::Completed;
                    r.dispatched_us = Some(0);
                    r.first_token_us = Some(1_000);
                    r.last_token_us = Some(1_000);
                    r.done_us = Some(1_000_000);
                    r.completion_tokens = Some(1);
                    r
                })
                .collect();
            compute(&recs, &MetricsConfig::default())
        };
        let (slow, fast) = (done(2), done(6));
        assert_eq!(best([(&slow, false), (&fast, false)], false).map(|b| b.0), Some(1));
        assert_eq!(best([(&slow, false), (&fast, true)], false).map(|b| b.0), Some(0));
        assert_eq!(best([(&fast, true)], false), None);
        // Pins a sweep where no point completed anything having no best ("Best
        // (request_throughput): 0.00 at concurrency 1" was printed and saved).
        let nothing = one_failed_request();
        assert_eq!(best([(&nothing, false), (&nothing, false)], false), None);
        assert_eq!(best([(&nothing, false), (&slow, false)], false).map(|b| b.0), Some(1));
        // Pins a goodput best of 0 (no request met the SLOs anywhere) being no best: "Best
        // (request_goodput): 0.00 at rate inf" was named.
        let (mut missed, mut met) = (done(4), done(4));
        (missed.request_goodput, met.request_goodput) = (Some(0.0), Some(2.0));
        assert_eq!(best([(&missed, false), (&missed, false)], true), None);
        assert_eq!(best([(&missed, false), (&met, false)], true).map(|b| (b.0, b.2)), Some((1, 2.0)));
    }
}
