//! Tests of the report's axes (issue 23.6, 23.13): every time chart of a page shares the run's
//! time range, and distribution axes fit their data.

use super::extra::extended_runs;
use super::{chart_markup, fixture_runs, header};
use crate::html::data::RunData;
use crate::html::{html_report, ReportRun};
use servebench_testkit::records::RecordBuilder;

/// The `data-<attr>` number of a chart's `<svg>`.
fn svg_attr(html: &str, id: &str, attr: &str) -> f64 {
    let chart = chart_markup(html, id);
    let at = chart.find(&format!(" data-{attr}=\"")).unwrap() + attr.len() + 8;
    chart[at..].split('"').next().unwrap().parse().unwrap()
}

/// Issue 23.6: the output-rate chart's axis used to run to the end of its last 1-s bin (3.5 s
/// for a 2.5-s run) while the in-flight chart stopped at 3 s and the latency charts at 2.5 s.
/// Every time chart, the server's included, now spans the same seconds: the run's.
#[test]
fn time_charts_share_the_run_time_range() {
    for runs in [fixture_runs(60, true), extended_runs()] {
        let html = html_report(&runs);
        let span = runs.iter().map(|r| RunData::of(&r.records, None).span_s).fold(0.0, f64::max);
        let mut ids = vec!["ttft-time", "e2el-time", "tokens-time", "inflight-time", "queue-time"];
        if html.contains("id=\"server-requests\"") {
            ids.extend(["server-requests", "server-kv", "server-prefix"]);
        }
        for id in ids {
            assert_eq!((svg_attr(&html, id, "x0"), svg_attr(&html, id, "x1")), (0.0, span), "{id}");
        }
    }
}

/// Issue 23.13: a CDF's x axis used to start at 0, so a 50–52 ms TTFT was a vertical line at the
/// right edge. It is fitted to the data with a little padding.
#[test]
fn cdf_axis_fits_a_narrow_distribution() {
    let recs: Vec<_> = (0..20u64)
        .map(|i| {
            let t0 = i * 100_000;
            let ttft = 50_000 + i * 100;
            RecordBuilder::new(i)
                .intended_at(t0)
                .sent_at(t0)
                .stream(t0 + ttft, &[10_000])
                .done_at(t0 + ttft + 10_000)
                .completed()
        })
        .collect();
    let html = html_report(&[ReportRun::new("r", header("r"), recs, vec![])]);
    let (x0, x1) = (svg_attr(&html, "ttft-cdf", "x0"), svg_attr(&html, "ttft-cdf", "x1"));
    assert!((45.0..50.0).contains(&x0) && (51.9..55.0).contains(&x1), "{x0}..{x1}");
}
