//! Tests of the experiment report's order and search criterion charts (issue 23.7).

use super::chart_markup;
use super::extra::{doc, sweep_doc};
use crate::html::sweep_report;
use serde_json::{json, Value};

/// A `--find-max-rate` document in search order: 30 ✓, 60 ✗, 45 ✗, 37.5 ✓ (threshold 0.95).
pub(super) fn search_doc() -> Value {
    let steps = [(30.0, 29.5, true), (60.0, 40.0, false), (45.0, 39.0, false), (37.5, 36.0, true)];
    let point = |(rate, achieved, _): (f64, f64, bool)| {
        json!({"label": format!("rate {rate:?}"), "request_rate": format!("{rate:?}"), "max_concurrency": null,
               "result": {"completed": 60, "output_throughput": achieved * 10.0, "request_throughput": achieved,
                          "median_ttft_ms": rate, "p99_ttft_ms": rate * 2.0}})
    };
    let step = |(i, (rate, achieved, passed)): (usize, (f64, f64, bool))| {
        json!({"step": i + 1, "request_rate": rate, "offered_rate": rate, "achieved_rate": achieved,
               "achieved_over_offered": achieved / rate, "completed": 60, "failed": 0, "slo_values": {},
               "passed": passed, "reasons": []})
    };
    json!({"servebench_experiment": "find_max_rate", "model_id": "m", "backend": "openai",
           "criterion": {"saturation_threshold": 0.95, "definition": "achieved_rate >= 0.95 * offered_rate"},
           "result_rate": 37.5, "lowest_failing_rate": 45.0,
           "trajectory": steps.iter().copied().enumerate().map(step).collect::<Vec<_>>(),
           "points": steps.iter().copied().map(point).collect::<Vec<_>>()})
}

/// The `M`/`L` x coordinates of the first `<path d=…>` of the series named `name`.
fn path_xs(chart: &str, name: &str) -> Vec<f64> {
    let at = chart.find(&format!("<title>{name}</title>")).unwrap();
    let d = chart[at..].split("d=\"").nth(1).unwrap().split('"').next().unwrap();
    d.split(['M', 'L'])
        .filter(|s| !s.is_empty())
        .map(|p| p.split(' ').next().unwrap().parse().unwrap())
        .collect()
}

/// Issue 23.7: a rate search's throughput–latency curve used to join its points in search order
/// (30 → 60 → 45 → 37.5, a zig-zag); they follow the offered rate, and a chart of achieved
/// against offered rate marks each step passed or failed, with the pass line.
#[test]
fn search_points_follow_the_offered_rate_and_the_criterion_is_charted() {
    let html = sweep_report(&doc(search_doc()), &[]).unwrap();
    let ttft = chart_markup(&html, "sweep-ttft-req");
    let xs = path_xs(ttft, "TTFT median");
    assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
    assert!(
        ttft.contains("rate 30.0 (29.5), rate 37.5 (36.0), rate 45.0 (39.0), rate 60.0 (40.0)"),
        "{ttft}"
    );
    let sat = chart_markup(&html, "search-saturation");
    assert_eq!(path_xs(sat, "achieved rate: step passed").len(), 2);
    assert!(
        sat.contains("achieved rate: step failed") && sat.contains("pass line: achieved = 0.95 × offered")
    );
    assert_eq!(sat.matches("l5 5m0-5l-5 5").count(), 2, "two failed steps drawn as crosses");
    assert!(chart_markup(&html, "search-saturation-ratio").contains("pass line: 0.95"));
    // Header rows in rate order, with each step's verdict.
    let r37 = html.find("step 4, fail").or_else(|| html.find("step 4, pass")).unwrap();
    assert!(html.find("step 1, pass").unwrap() < r37 && r37 < html.find("step 3, fail").unwrap());
}

/// Issue 23.7: a sweep's points are drawn in order of the swept value whatever the file's order.
#[test]
fn sweep_points_follow_the_swept_value() {
    let mut v = sweep_doc("sweep");
    v["points"].as_array_mut().unwrap().reverse();
    let html = sweep_report(&doc(v), &[]).unwrap();
    let ttft = chart_markup(&html, "sweep-ttft-tok");
    assert!(ttft.contains("concurrency 1 (100.0), concurrency 8 (700.0), concurrency 32 (1500.0)"));
    let xs = path_xs(ttft, "TTFT median");
    assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
    assert!(!html.contains("id=\"search-saturation\""), "a sweep has no search criterion");
}

/// An SLO search charts each bound's value by offered rate with the bound as a line.
#[test]
fn slo_search_charts_each_bound() {
    let mut v = search_doc();
    v["servebench_experiment"] = json!("slo_search");
    v["criterion"] = json!({"slos": [{"name": "ttft_p99", "max_ms": 80.0}]});
    for (i, s) in v["trajectory"].as_array_mut().unwrap().iter_mut().enumerate() {
        s["slo_values"] = json!({"ttft_p99": 20.0 * (i as f64 + 1.0)});
    }
    let html = sweep_report(&doc(v), &[]).unwrap();
    let c = chart_markup(&html, "search-slo-ttft_p99");
    assert!(c.contains("SLO ttft_p99 ≤ 80 ms") && c.contains("ttft_p99: step passed"), "{c}");
}
