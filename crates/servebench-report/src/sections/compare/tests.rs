use serde_json::json;

use super::*;
use crate::document::{JsonFile, ResultDocument};

fn key(k: &str) -> MetricKey {
    MetricKey::parse(k).unwrap()
}

fn single(v: serde_json::Value) -> Loaded {
    let doc: ResultDocument = serde_json::from_value(v).unwrap();
    Loaded { name: "x".into(), values: doc.metrics, ..Loaded::default() }
}

#[test]
fn markers_follow_direction() {
    assert_eq!(marker(&key("p99_ttft_ms"), -1.0), "+");
    assert_eq!(marker(&key("p99_ttft_ms"), 1.0), "-");
    assert_eq!(marker(&key("request_throughput"), 1.0), "+");
    assert_eq!(marker(&key("request_throughput"), -1.0), "-");
    assert_eq!(marker(&key("max_concurrent_requests"), 5.0), "");
    assert_eq!(marker(&key("duration"), 0.0), "");
}

/// Issue 15.12: 0 → 0 is "0.00%", x → 0 and 0 → x print no inf/NaN, a null side is n/a.
#[test]
fn compare_zero_to_zero_is_zero_percent_never_inf() {
    let a = single(json!({"completed": 0, "failed": 0, "request_throughput": 2.0, "mean_ttft_ms": null,
                          "p99_ttft_ms": 0.0}));
    let b = single(json!({"completed": 5, "failed": 0, "request_throughput": 0.0, "mean_ttft_ms": 12.5,
                          "p99_ttft_ms": 3.0}));
    let rows = compare(&a, &b, 0.05);
    let row = |k: &str| rows.iter().find(|r| r.metric.to_string() == k).unwrap().clone();
    assert_eq!(row("failed").change_percent, Some(0.0));
    assert_eq!(row("completed").change_percent, None);
    assert_eq!(row("request_throughput").change_percent, Some(-100.0));
    assert_eq!(row("p99_ttft_ms").change_percent, None);
    let text = table(&a, &b, &rows, 0.05);
    assert!(!text.contains("inf") && !text.contains("NaN"), "{text}");
    let line = |k: &str| text.lines().find(|l| l.starts_with(&format!("{k} "))).unwrap().to_owned();
    assert!(line("failed").contains(" 0.00%"), "{}", line("failed"));
    // 0 → 5 completed: undefined change, still marked as an improvement, in its own column.
    assert!(line("completed").contains(" – better "), "{}", line("completed"));
    // mean_ttft_ms is null in A (no completed request): n/a, not 0.00, and no change.
    assert_eq!(row("mean_ttft_ms").a, None);
    assert_eq!(row("mean_ttft_ms").change_percent, None);
    let l = line("mean_ttft_ms");
    assert!(l.contains("n/a") && l.contains("12.50") && l.contains(" –"), "{l}");
}

#[test]
fn vllm_detailed_arrays_give_per_request_values() {
    // Request 1 failed (latency 0): skipped. TPOT = (0.5 − 0.1) / (5 − 1) s = 100 ms.
    let arrays = |v: serde_json::Value| serde_json::from_value::<ResultDocument>(v).unwrap().detailed;
    let m = per_request_from_arrays(&arrays(json!({"ttfts": [0.1, 0.0, null], "latencies": [0.5, 0.0, 1.0],
        "output_lens": [5, 0, 3], "itls": [[0.1, 0.1, 0.1, 0.1], [], null]})));
    assert_eq!(m[&LatencyMetric::Ttft], vec![100.0]);
    assert_eq!(m[&LatencyMetric::E2el], vec![500.0]);
    assert!((m[&LatencyMetric::Tpot][0] - 100.0).abs() < 1e-9);
    assert_eq!(m[&LatencyMetric::Itl].len(), 4);
    assert!(per_request_from_arrays(&arrays(json!({"latencies": [1.0]}))).is_empty());
}

/// Pins older vLLM's `--save-detailed` (no `latencies` key): E2EL is `ttft + Σ itls`, so
/// `compare` runs its TTFT, TPOT and E2EL tests on such a file instead of skipping them.
#[test]
fn arrays_without_latencies_rebuild_e2el_from_ttft_and_itls() {
    let arrays = |v: serde_json::Value| serde_json::from_value::<ResultDocument>(v).unwrap().detailed;
    let m = per_request_from_arrays(&arrays(json!({"ttfts": [0.1, 0.0], "output_lens": [5, 0],
        "itls": [[0.1, 0.1, 0.1, 0.1], []], "errors": ["", "HTTP 500"]})));
    assert_eq!(m[&LatencyMetric::Ttft], vec![100.0]);
    assert!((m[&LatencyMetric::E2el][0] - 500.0).abs() < 1e-9, "{:?}", m[&LatencyMetric::E2el]);
    assert!((m[&LatencyMetric::Tpot][0] - 100.0).abs() < 1e-9);
}

#[test]
fn multi_run_documents_use_welch() {
    let doc = |vals: &[f64]| {
        let runs: Vec<serde_json::Value> =
            vals.iter().map(|v| json!({"result": {"request_throughput": v}})).collect();
        let mean = vals.iter().sum::<f64>() / vals.len() as f64;
        let text = json!({"servebench_experiment": "multi_run", "runs": runs,
               "summary": {"request_throughput": {"mean": mean}}})
        .to_string();
        let JsonFile::Experiment(doc) = JsonFile::parse(&text).unwrap() else { panic!("not an experiment") };
        Loaded::multi_run("x".into(), &doc)
    };
    let (a, b, c) =
        (doc(&[10.0, 10.2, 9.9, 10.1]), doc(&[8.0, 8.1, 7.9, 8.05]), doc(&[10.1, 9.95, 10.05, 10.0]));
    let r = &compare(&a, &b, 0.05)[0];
    assert_eq!((r.test.as_deref(), r.significant, r.marker), (Some("welch_t"), Some(true), "-"));
    let r = &compare(&a, &c, 0.05)[0];
    assert_eq!(r.significant, Some(false));
}

fn with_per_request(m: LatencyMetric, v: Vec<f64>, mean: f64, std: f64) -> Loaded {
    let mut l = single(json!({"mean_ttft_ms": mean, "std_ttft_ms": std, "p99_ttft_ms": mean}));
    l.per_request.insert(m, v);
    l
}

/// Issue 23.8: `std_*` used to be tested with Mann–Whitney (a location test), so a pure shift
/// read as a significant change of spread. Means and percentiles keep Mann–Whitney; `std_*` gets
/// the Brown–Forsythe spread test, which finds no change in a shift and does find a wider spread.
#[test]
fn std_rows_are_tested_for_spread_and_location_rows_for_location() {
    let base: Vec<f64> = (0..40).map(|i| 50.0 + f64::from(i % 10)).collect();
    let shifted: Vec<f64> = base.iter().map(|x| x + 100.0).collect();
    let wider: Vec<f64> = base.iter().map(|x| 54.5 + (x - 54.5) * 4.0).collect();
    let a = with_per_request(LatencyMetric::Ttft, base, 54.5, 2.9);
    let b = with_per_request(LatencyMetric::Ttft, shifted, 154.5, 2.9);
    let rows = compare(&a, &b, 0.05);
    let row = |rows: &[CompareRow], k: &str| rows.iter().find(|r| r.metric.to_string() == k).unwrap().clone();
    for k in ["mean_ttft_ms", "p99_ttft_ms"] {
        let r = row(&rows, k);
        assert_eq!((r.test.as_deref(), r.significant), (Some("mann_whitney_u"), Some(true)), "{k}");
    }
    let r = row(&rows, "std_ttft_ms");
    assert_eq!(
        (r.test.as_deref(), r.p_value, r.significant),
        (Some("brown_forsythe"), Some(1.0), Some(false))
    );
    let c = with_per_request(LatencyMetric::Ttft, wider, 54.5, 11.6);
    let r = row(&compare(&a, &c, 0.05), "std_ttft_ms");
    assert_eq!((r.test.as_deref(), r.significant, r.marker), (Some("brown_forsythe"), Some(true), "-"));
}

/// Issue 23.8: the direction marker used to be glued to the change (`+0.50%-` read as a typo);
/// it is its own column, in words.
#[test]
fn direction_is_its_own_column() {
    let a = single(json!({"mean_ttft_ms": 100.0, "request_throughput": 10.0}));
    let b = single(json!({"mean_ttft_ms": 100.5, "request_throughput": 10.5}));
    let rows = compare(&a, &b, 0.05);
    let text = table(&a, &b, &rows, 0.05);
    let line = |k: &str| text.lines().find(|l| l.starts_with(&format!("{k} "))).unwrap().to_owned();
    assert!(line("mean_ttft_ms").contains(" +0.50% worse "), "{text}");
    assert!(line("request_throughput").contains(" +5.00% better "), "{text}");
    assert!(!text.contains("%-") && !text.contains("%+"), "{text}");
    assert!(text.lines().nth(3).unwrap().contains(" Dir "), "{text}");
}

/// Pins the sign of a location test: one Mann–Whitney test on the ITL samples used to mark
/// `mean_itl` (down), `median_itl` (up) and `p99_itl` as significant alike, so the same p-value
/// backed opposite conclusions. A statistic that moved against the samples' shift is not a
/// significant change of that statistic.
#[test]
fn a_statistic_moving_against_the_samples_shift_is_not_significant() {
    // A: mostly 10 ms with a 1-s tail (mean 59.5); B: 12 ms throughout. B's values are larger
    // (Mann–Whitney), its median is higher, its mean lower.
    let xa: Vec<f64> = (0..40).map(|i| if i < 38 { 10.0 } else { 1000.0 }).collect();
    let mut a = single(json!({"mean_ttft_ms": 59.5, "median_ttft_ms": 10.0}));
    a.per_request.insert(LatencyMetric::Ttft, xa);
    let mut b = single(json!({"mean_ttft_ms": 12.0, "median_ttft_ms": 12.0}));
    b.per_request.insert(LatencyMetric::Ttft, vec![12.0; 40]);
    let rows = compare(&a, &b, 0.05);
    let row = |k: &str| rows.iter().find(|r| r.metric.to_string() == k).unwrap().clone();
    let (mean, median) = (row("mean_ttft_ms"), row("median_ttft_ms"));
    assert_eq!(mean.p_value, median.p_value, "one test of the samples");
    assert!(mean.p_value.unwrap() < 0.05);
    assert_eq!((median.significant, median.marker), (Some(true), "-"));
    assert_eq!((mean.significant, mean.marker), (Some(false), "+"));
}

/// Pins one request's value read from a records file (µs) and from vLLM's arrays (s) being
/// the same number: `compare` of a run against its own `--save-detailed` copy gave
/// Mann–Whitney p = 0.82 on TTFT instead of 1 (every tie broken by a rounding error).
#[test]
fn records_and_vllm_arrays_meet_on_one_grid() {
    assert_ne!(0.100704 * 1000.0, 100_704.0 / 1000.0, "the rounding this guards against");
    assert_eq!(on_ns_grid(0.100704 * 1000.0), on_ns_grid(100_704.0 / 1000.0));
    assert_eq!(on_ns_grid(0.012_345_678_9 * 1000.0), 12.345679);
    let same: Vec<f64> = [0.100704, 0.2, 0.033333].iter().map(|s| on_ns_grid(s * 1000.0)).collect();
    let from_us: Vec<f64> =
        [100_704u64, 200_000, 33_333].iter().map(|&u| on_ns_grid(u as f64 / 1000.0)).collect();
    assert_eq!(mann_whitney_u(&same, &from_us).unwrap().p_value, 1.0);
}
