//! Tests of the charts drawn only when their data is present: TTFO, per-turn lines, server
//! metrics, and the experiment (sweep/search) report.

use super::{assert_self_contained, chart_markup, fixture_records, fixture_runs, header};
use crate::document::ExperimentDocument;
use crate::html::data::RunData;
use crate::html::server_charts::ServerSeries;
use crate::html::{html_report, sweep_report, ReportRun};
use serde_json::{json, Value};
use servebench_core::metrics::{MetricName, Slo};
use servebench_core::record::RequestRecord;

/// Records of 4-turn conversations (turn = index % 4, prompt +300 tokens per turn, TTFT +10 ms
/// per turn) where every other completed request shows visible output 40 ms after its first token.
pub(crate) fn multi_turn_records(n: u64) -> Vec<RequestRecord> {
    let mut recs = fixture_records(11, n, 1.0);
    for r in &mut recs {
        let turn = (r.index % 4) as u32;
        r.conversation = Some(r.index / 4);
        r.turn = Some(turn);
        r.prompt_tokens = 200 + 300 * turn;
        if let (Some(first), Some(last)) = (r.first_token_us, r.last_token_us) {
            let shift = 10_000 * u64::from(turn);
            r.first_token_us = Some(first + shift);
            r.first_event_us = Some(first + shift);
            r.last_token_us = Some(last + shift);
            r.done_us = r.done_us.map(|d| d + shift);
            let extra = if r.index % 2 == 0 { 40_000 } else { 0 };
            r.first_content_us = Some(first + shift + extra);
        }
    }
    recs
}

/// A result JSON's `server_metrics` with four scrapes.
pub(crate) fn server_json() -> Value {
    json!({"server_metrics": {"interval_s": 1.0, "failed_scrapes": 0, "samples": [
        {"t_s": 0.0, "running": 0.0, "waiting": 0.0, "kv_cache_usage": 0.0, "prefix_cache_queries": 0.0, "prefix_cache_hits": 0.0},
        {"t_s": 1.0, "running": 4.0, "waiting": 2.0, "kv_cache_usage": 0.25, "prefix_cache_queries": 1000.0, "prefix_cache_hits": 0.0},
        {"t_s": 2.0, "running": 8.0, "waiting": 5.0, "kv_cache_usage": 0.5, "prefix_cache_queries": 3000.0, "prefix_cache_hits": 1500.0},
        {"t_s": 3.0, "running": 2.0, "waiting": 0.0, "kv_cache_usage": 0.1, "prefix_cache_queries": 3000.0, "prefix_cache_hits": 1500.0}
    ]}})
}

/// `v` read as a result document.
pub(crate) fn result_doc(v: Value) -> crate::document::ResultDocument {
    serde_json::from_value(v).expect("a result document")
}

/// One multi-turn run with TTFO and scraped server metrics.
pub(crate) fn extended_runs() -> Vec<ReportRun> {
    let mut run = ReportRun::new("multi", header("multi"), multi_turn_records(200), vec![]);
    run.server_metrics = ServerSeries::from_result(&result_doc(server_json()));
    vec![run]
}

/// A sweep document of three concurrency points, hand-built.
pub(crate) fn sweep_doc(kind: &str) -> Value {
    let point = |c: u32, tok: f64, req: f64, ttft: f64| {
        json!({"label": format!("concurrency {c}"), "request_rate": "inf", "max_concurrency": c,
               "result": {"model_id": "m", "completed": 10, "output_throughput": tok, "request_throughput": req,
                          "median_ttft_ms": ttft, "p99_ttft_ms": ttft * 2.0, "p90_ttft_ms": ttft * 1.5,
                          "median_tpot_ms": 5.0, "p99_tpot_ms": 7.0, "median_e2el_ms": ttft + 500.0}})
    };
    json!({"servebench_experiment": kind, "model_id": "m", "backend": "openai", "sweep_parameter": "max_concurrency",
           "criterion": {"slos": [{"name": "ttft_p99", "max_ms": 150.0}]},
           "points": [point(1, 100.0, 1.0, 20.0), point(8, 700.0, 7.0, 40.0), point(32, 1500.0, 12.0, 90.0)]})
}

/// The typed experiment document of `v` (the report reads nothing else).
pub(super) fn doc(v: Value) -> ExperimentDocument {
    ExperimentDocument::of(&v).expect("an experiment document")
}

#[test]
fn ttfo_chart_appears_only_when_content_lags_first_token() {
    let d = RunData::of(&multi_turn_records(40), None);
    assert!(d.ttfo_differs);
    assert_eq!(d.ttfo.len(), d.ttft.len());
    let html = html_report(&extended_runs());
    let c = chart_markup(&html, "ttfo-cdf");
    assert!(c.contains("TTFO distribution (CDF)") && c.contains("time to first visible output"));
    assert!(c.contains("TTFT (first token of any kind)"));
    // Same first content as first token: no TTFO chart.
    let mut same = fixture_records(7, 50, 1.0);
    for r in &mut same {
        r.first_content_us = r.first_token_us;
    }
    let d = RunData::of(&same, None);
    assert!(!d.ttfo_differs);
    let html = html_report(&[ReportRun::new("x", header("x"), same, vec![])]);
    assert!(!html.contains("id=\"ttfo-cdf\""));
    // The base fixture has none of the optional charts.
    let html = html_report(&fixture_runs(50, false));
    for id in ["ttfo-cdf", "ttft-turn", "server-requests", "server-kv"] {
        assert!(!html.contains(&format!("id=\"{id}\"")), "{id} drawn without data");
    }
}

#[test]
fn per_turn_lines_follow_the_turn_index() {
    let recs = multi_turn_records(400);
    let d = RunData::of(&recs, None);
    assert_eq!(d.turn_prompts.len(), recs.len());
    let html = html_report(&extended_runs());
    for (id, title) in [
        ("ttft-turn", "TTFT per turn"),
        ("e2el-turn", "E2EL per turn"),
        ("prompt-turn", "Input tokens per turn"),
    ] {
        let c = chart_markup(&html, id);
        assert!(c.contains(title), "{id}");
        assert!(c.contains("turn index"));
    }
    let ttft = chart_markup(&html, "ttft-turn");
    assert!(ttft.contains("TTFT median") && ttft.contains("TTFT p90"));
    // Input tokens are exact (200 + 300 × turn), so the y axis reaches 1100.
    let prompt = chart_markup(&html, "prompt-turn");
    assert!(prompt.contains("data-x0=\"0\"") && prompt.contains("data-x1=\"3\""), "{}", &prompt[..600]);
    assert!(prompt.contains(">1100<") || prompt.contains(">1200<"), "y ticks cover 1100 tokens");
}

#[test]
fn server_series_parse_and_hit_rate_per_interval() {
    let s = ServerSeries::from_result(&result_doc(server_json())).unwrap();
    assert_eq!(s.samples.len(), 4);
    assert_eq!(s.samples[2].kv_cache_usage, Some(0.5));
    // Δhits/Δqueries: 0/1000, 1500/2000; the last interval had no queries.
    assert_eq!(s.prefix_hit_rate(), vec![(1.0, 0.0), (2.0, 75.0)]);
    assert!(ServerSeries::from_result(&result_doc(json!({"server_metrics": {"samples": []}}))).is_none());
    assert!(ServerSeries::from_result(&result_doc(json!({"completed": 3}))).is_none());
    // A run's own scrape gives the series its written `server_metrics` gives (no JSON between).
    use crate::sections::server::{ScrapeSample, ServerMetrics};
    let samples = s
        .samples
        .iter()
        .map(|x| ScrapeSample {
            t_s: x.t_s,
            running: x.running,
            waiting: x.waiting,
            kv_cache_usage: x.kv_cache_usage,
            prefix_cache_queries: x.prefix_cache_queries,
            prefix_cache_hits: x.prefix_cache_hits,
            ..ScrapeSample::default()
        })
        .collect();
    let scraped = ServerMetrics { interval_s: 1.0, samples, ..ServerMetrics::default() };
    assert_eq!(ServerSeries::from_metrics(&scraped), Some(s.clone()));
    assert!(ServerSeries::from_metrics(&Default::default()).is_none());
    let html = html_report(&extended_runs());
    let q = chart_markup(&html, "server-requests");
    assert!(q.contains("running") && q.contains("waiting"));
    assert!(chart_markup(&html, "server-kv").contains("KV-cache usage (%)"));
    assert!(chart_markup(&html, "server-prefix").contains("hit rate (%)"));
    assert!(html.contains("<h2>Server metrics</h2>") && html.contains("<h2>Multi-turn</h2>"));
    // 12 base charts + TTFO + 3 per-turn + 3 server.
    assert_eq!(html.matches("<svg").count(), 19);
    assert_self_contained(&html);
}

#[test]
fn sweep_report_draws_throughput_latency_curves_with_slo_lines() {
    let html = sweep_report(&doc(sweep_doc("sweep")), &[]).unwrap();
    assert_self_contained(&html);
    for id in [
        "sweep-ttft-tok",
        "sweep-tpot-tok",
        "sweep-e2el-tok",
        "sweep-ttft-req",
        "sweep-tpot-req",
        "sweep-e2el-req",
    ] {
        assert_eq!(html.matches(&format!("id=\"{id}\"")).count(), 1, "{id}");
    }
    let ttft = chart_markup(&html, "sweep-ttft-tok");
    assert!(ttft.contains("TTFT median") && ttft.contains("TTFT p99"), "highest saved percentile");
    assert!(ttft.contains("SLO ttft_p99 ≤ 150 ms"));
    for label in ["concurrency 1", "concurrency 8", "concurrency 32"] {
        assert_eq!(ttft.matches(&format!(">{label}</text>")).count(), 1, "point label {label}");
    }
    assert!(ttft.contains("concurrency 1 (100.0), concurrency 8 (700.0), concurrency 32 (1500.0)"));
    assert!(!chart_markup(&html, "sweep-tpot-tok").contains("SLO"), "SLO lines only on their metric");
    // Goodput SLOs from the report command draw too.
    let slo = Slo { metric: MetricName::Tpot, threshold_ms: 6.0 };
    let html = sweep_report(&doc(sweep_doc("sweep")), &[slo]).unwrap();
    assert!(chart_markup(&html, "sweep-tpot-req").contains("goodput SLO: tpot ≤ 6 ms per request"));
    assert_eq!(html, sweep_report(&doc(sweep_doc("sweep")), &[slo]).unwrap(), "deterministic");
    assert!(sweep_report(&doc(sweep_doc("slo_search")), &[]).is_ok());
    assert!(sweep_report(&doc(sweep_doc("bogus")), &[]).is_err());
    assert!(sweep_report(&doc(json!({"servebench_experiment": "sweep", "points": []})), &[]).is_err());
}

/// Pins the mark of an interrupted sweep's partial point in its HTML report: the console shows
/// `rate 20.0*` with a legend line; the report showed the point unmarked.
#[test]
fn sweep_report_marks_an_interrupted_point_with_a_legend() {
    let mut v = sweep_doc("sweep");
    v["points"][2]["result"]["interrupted"] = json!(true);
    let html = sweep_report(&doc(v), &[]).unwrap();
    assert!(html.contains("<td>concurrency 32*</td><td>1500.0 tok/s"), "the row is marked");
    assert!(html.contains("<td>*</td><td>interrupted: partial figures, not a candidate for Best</td>"));
    assert!(chart_markup(&html, "sweep-ttft-tok").contains("concurrency 32* (1500.0)"), "and its dot");
    assert!(!html.contains("concurrency 8*"), "complete points are not marked");
    let html = sweep_report(&doc(sweep_doc("sweep")), &[]).unwrap();
    assert!(!html.contains("interrupted: partial figures"), "no legend without an interrupted point");
}

/// A `--num-runs` document of three runs in the shape `servebench --num-runs` writes: runs are
/// points (`{label, seed, result}`), `summary` the across-run aggregates. Run 3 has no
/// steady-state window.
pub(crate) fn multi_run_doc() -> Value {
    let run = |seed: u64, req: f64, ttft: f64, steady: Option<f64>| {
        json!({"label": "rate 10", "request_rate": 10.0, "max_concurrency": null, "num_prompts": 100, "seed": seed,
               "result": {"model_id": "m", "completed": 100, "request_throughput": req, "output_throughput": req * 10.0,
                          "mean_ttft_ms": ttft, "median_ttft_ms": ttft, "p99_ttft_ms": ttft * 2.0,
                          "median_tpot_ms": 5.0, "mean_tpot_ms": null,
                          "steady_state": steady.map(|s| json!({"request_throughput": s}))}})
    };
    let agg = |mean: f64, lo: f64, hi: f64, n: u64| {
        json!({"n": n, "mean": mean, "std": 1.0, "min": lo, "max": hi,
                                                          "ci95_low": lo, "ci95_high": hi})
    };
    json!({"servebench_experiment": "multi_run", "model_id": "m", "backend": "openai", "num_runs": 3,
           "same_seed": false, "request_rate": "10", "max_concurrency": null,
           "summary": {"request_throughput": agg(11.0, 8.515_9, 13.484_1, 3),
                       "output_throughput": agg(110.0, 85.159, 134.841, 3),
                       "median_ttft_ms": agg(30.0, 17.58, 42.42, 3),
                       "steady_state.request_throughput": agg(10.5, 4.147, 16.853, 2)},
           "runs": [run(0, 10.0, 25.0, Some(10.0)), run(1, 11.0, 30.0, Some(11.0)), run(2, 12.0, 35.0, None)]})
}

/// Issue 15.11: the report of a `--num-runs` document draws per-run values with the across-run
/// mean and CI per metric, and has a row per run (it drew nothing: runs are points, not results).
#[test]
fn multi_run_report_draws_per_run_and_across_run_charts_with_rows() {
    let html = sweep_report(&doc(multi_run_doc()), &[]).unwrap();
    assert_eq!(html.matches("<figure class=\"chart\"").count(), MULTI_RUN_IDS.len(), "{html}");
    for id in MULTI_RUN_IDS {
        let c = chart_markup(&html, id);
        assert!(c.contains("<path d=\"M"), "{id} has no drawn series");
    }
    let req = chart_markup(&html, "runs-request_throughput");
    for text in ["per run", "mean 11.00", "95% CI low 8.52", "95% CI high 13.48"] {
        assert!(req.contains(text), "request_throughput chart lacks {text}");
    }
    let dot_labels = |c: &str| c.matches("font-size=\"10.5\"").count();
    assert_eq!(dot_labels(req), 3, "one labelled dot per run");
    // Run 3 has no steady-state window: 2 dots, and its row says "–".
    let ss = chart_markup(&html, "runs-steady_state-request_throughput");
    assert_eq!(dot_labels(ss), 2, "{ss}");
    assert!(html.contains("run 1 (seed 0)</td><td>10.00 req/s, 100.00 tok/s, TTFT median 25.00 ms"));
    assert!(html.contains("run 3 (seed 2)</td><td>12.00 req/s, 120.00 tok/s, TTFT median 35.00 ms, TPOT median 5.00 ms, steady-state –"));
    assert!(html.contains("request_throughput across runs</td><td>mean 11.00, 95% CI [8.52, 13.48] (n = 3)"));
    assert!(!html.contains("runs-mean_tpot_ms"), "a metric every run has null for is not drawn");
    assert_eq!(html, sweep_report(&doc(multi_run_doc()), &[]).unwrap(), "deterministic");
    assert!(sweep_report(&doc(json!({"servebench_experiment": "multi_run", "runs": []})), &[]).is_err());
}

/// The charts of [`multi_run_doc`]'s report.
pub(crate) const MULTI_RUN_IDS: [&str; 7] = [
    "runs-request_throughput",
    "runs-output_throughput",
    "runs-steady_state-request_throughput",
    "runs-mean_ttft_ms",
    "runs-median_ttft_ms",
    "runs-p99_ttft_ms",
    "runs-median_tpot_ms",
];

/// The experiment reports, byte for byte: a sweep with goodput lines, an SLO search with its
/// criterion, and a multi-run document.
#[test]
fn snapshot_of_experiment_reports() {
    let slo = Slo { metric: MetricName::Ttft, threshold_ms: 40.0 };
    let sweep = sweep_report(&doc(sweep_doc("sweep")), &[slo]).unwrap();
    let search = sweep_report(&doc(sweep_doc("slo_search")), &[]).unwrap();
    let multi = sweep_report(&doc(multi_run_doc()), &[]).unwrap();
    insta::with_settings!({snapshot_path => "../../../tests/snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!("experiment_report_sweep", sweep);
        insta::assert_snapshot!("experiment_report_slo_search", search);
        insta::assert_snapshot!("experiment_report_multi_run", multi);
    });
}

#[test]
fn endpoint_and_gpu_power_charts_share_the_client_time_axis() {
    let ep = |url: &str, q: f64| {
        json!({"url": url, "engines": ["sglang"], "scrapes": 3, "failed_scrapes": 0, "last_error": null, "series_count": 9,
               "prefix_cache_hit_rate": null, "histograms": [], "meanings": {
                 "queue": {"metric": "sglang:num_queue_reqs", "kind": "gauge", "series": [[0.0, 0.0], [1.0, q], [2.0, 0.0]]},
                 "ttft": {"metric": "sglang:time_to_first_token_seconds", "kind": "histogram", "series": [[1.0, 0.05], [2.0, 0.08]],
                          "series_p99": [[1.0, 0.2], [2.0, 0.3]]}}})
    };
    let doc = json!({"server_metrics": {"interval_s": 1.0, "failed_scrapes": 0, "samples": [],
                                         "endpoints": [ep("http://a:1/metrics", 3.0), ep("http://b:2/metrics", 5.0)]},
                     "gpu_energy": {"method": "energy_counter", "total_energy_j": 900.0, "avg_power_w": 300.0, "output_tokens": 10,
                                    "joules_per_output_token": 90.0, "output_tokens_per_joule": 0.0111,
                                    "gpus": [{"host": "n1", "gpu": "0", "uuid": null, "energy_j": 900.0, "method": "energy_counter",
                                              "avg_power_w": 300.0, "window_s": 3.0, "mean_util_pct": null, "max_fb_used_mib": null,
                                              "mean_sm_clock_mhz": null, "samples": 2, "power_series": [[0.0, 100.0], [3.0, 500.0]]}]}});
    let s = ServerSeries::from_result(&result_doc(doc)).unwrap();
    assert_eq!((s.endpoints.len(), s.gpus.len(), s.samples.len()), (2, 1, 0));
    let mut run = ReportRun::new("r", header("r"), fixture_records(3, 20, 1.0), vec![]);
    run.server_metrics = Some(s);
    let html = html_report(&[run]);
    let load = chart_markup(&html, "endpoints-load");
    assert!(load.contains("a:1/metrics queue") && load.contains("b:2/metrics queue"), "{load}");
    let lat = chart_markup(&html, "endpoints-latency");
    assert!(lat.contains("TTFT p50") && lat.contains("TTFT p99"));
    assert!(chart_markup(&html, "gpu-power").contains("GPU 0 @ n1"));
    // The run card's energy table: the result's figures, one row per GPU.
    let card = &html[html.find("<h4>GPU energy</h4>").expect("energy table")..];
    let card = &card[..card.find("</table>").unwrap()];
    for cell in ["<td>energy (J)</td><td>900.0</td>", "<td>average power (W)</td><td>300.0</td>"] {
        assert!(card.contains(cell), "{cell} in {card}");
    }
    for cell in [
        "<td>energy per output token (J/token)</td><td>90.0000</td>",
        "<td>output tokens per joule</td><td>0.011</td>",
    ] {
        assert!(card.contains(cell), "{cell} in {card}");
    }
    assert!(card.contains("<td>GPU 0 @ n1</td><td>900.0 J, 300.0 W average over 3.0 s</td>"), "{card}");
    assert!(chart_markup(&html, "gpu-power").contains("time since the start of the measured phase (s)"));
    // No fixed-name samples: the older server charts are left out.
    assert!(!html.contains("id=\"server-requests\""));
    assert_self_contained(&html);
}
