//! Metrics without data in the HTML report are "–" (docs/metrics.md, "Metrics without data"),
//! never vLLM's `0.0` placeholder shown as a measurement.

use super::extra::{doc, multi_run_doc, sweep_doc};
use super::{chart_markup, fixture_records, header, summary_cell};
use crate::html::{html_report, sweep_report, ReportRun};
use serde_json::json;

/// Pins a sweep point where nothing completed: its latency keys are vLLM's `0.0` placeholders,
/// shown as "TTFT median 0.0 ms" and drawn at 0 ms; they are "–" and left out of the curves.
/// A metric the run did not report (`null`) stays left out of the row.
#[test]
fn sweep_point_without_completions_shows_dashes_not_zero_ms() {
    let mut v = sweep_doc("sweep");
    v["points"][0]["result"] = json!({"model_id": "m", "completed": 0, "failed": 5, "duration": 0.5,
        "output_throughput": 0.0, "request_throughput": 0.0, "median_ttft_ms": 0.0, "p99_ttft_ms": 0.0,
        "p90_ttft_ms": 0.0, "median_tpot_ms": 0.0, "p99_tpot_ms": 0.0, "median_e2el_ms": null});
    let html = sweep_report(&doc(v), &[]).unwrap();
    assert!(
        html.contains("<td>concurrency 1</td><td>0.0 tok/s, 0.0 req/s, TTFT median –, TPOT median –</td>"),
        "{}",
        html.split("concurrency 1</td>").nth(1).unwrap_or_default().get(..120).unwrap_or_default()
    );
    // The curve has the two points with data, and keeps its highest percentile line.
    let ttft = chart_markup(&html, "sweep-ttft-tok");
    assert!(ttft.contains("TTFT p99"), "the point without data does not drop the p99 line");
    assert!(!ttft.contains(">concurrency 1<"), "no labelled dot at 0 ms for the point without data");
    assert!(ttft.contains(">concurrency 8<"), "the points with data are labelled");
}

/// Pins a `--num-runs` run where nothing completed: its row said "TTFT median 0.00 ms" (and
/// "steady-state n/a req/s" for a run without a window).
#[test]
fn multi_run_row_without_completions_shows_dashes() {
    let mut v = multi_run_doc();
    let r = &mut v["runs"][1]["result"];
    (r["completed"], r["median_ttft_ms"], r["mean_ttft_ms"], r["p99_ttft_ms"], r["median_tpot_ms"]) =
        (json!(0), json!(0.0), json!(0.0), json!(0.0), json!(0.0));
    let html = sweep_report(&doc(v), &[]).unwrap();
    assert!(html.contains("run 2 (seed 1)</td><td>11.00 req/s, 110.00 tok/s, TTFT median –, TPOT median –, steady-state 11.00 req/s</td>"));
    assert!(html.contains("steady-state –</td>"), "run 3 has no steady-state window");
}

/// Pins the failure line of a run whose failures have no kind (a result without records): it
/// read "10 of 10 requests failed ()".
#[test]
fn failures_without_kinds_have_no_empty_parentheses() {
    let mut run = ReportRun::new("vzero", header("vzero"), Vec::new(), vec![]);
    (run.metrics.failed, run.metrics.sent) = (10, 10);
    let html = html_report(&[run]);
    assert!(
        html.contains("10 of 10 requests failed<"),
        "{}",
        html.split("requests failed").nth(1).unwrap_or("")
    );
    assert!(!html.contains("failed ()"));
    // With records the kinds are named as before.
    let html = html_report(&[ReportRun::new("r", header("r"), fixture_records(7, 200, 1.0), vec![])]);
    assert!(html.contains("requests failed (http_status "), "kinds still named");
    assert_eq!(summary_cell(&html, "completed"), "195");
}
