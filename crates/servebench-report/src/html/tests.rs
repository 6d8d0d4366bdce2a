//! Tests of the HTML report on hand-built, deterministic records.

use super::*;
use crate::env::Environment;
use servebench_core::record::{ErrorKind, Outcome};

mod axes;
mod browser;
pub(crate) mod extra;
mod no_data;
mod search;

/// A small deterministic generator (SplitMix64) so fixtures need no RNG crate.
pub(super) struct Mix(u64);

impl Mix {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// `n` records at 20 req/s: prompt 100..2000 tokens, TTFT growing with the prompt, ITL 8–14 ms,
/// an overload between 40 % and 55 % of the run (queueing and slower TTFT), every 97th request
/// failing with HTTP 503 and the last 3 cancelled. `slow` scales server times (1.0 = baseline).
pub(super) fn fixture_records(seed: u64, n: u64, slow: f64) -> Vec<RequestRecord> {
    let mut rng = Mix(seed);
    let mut out = Vec::new();
    for i in 0..n {
        let intended = i * 50_000 + rng.below(20_000);
        let prompt = 100 + rng.below(1900) as u32;
        let out_tokens = 32 + rng.below(96) as u32;
        let mut r = RequestRecord::scheduled(i, format!("bench-{i}"), intended, prompt, out_tokens);
        if i + 3 >= n {
            out.push(r);
            continue;
        }
        let overload = i * 100 >= n * 40 && i * 100 < n * 55;
        let queue = rng.below(1500) + if overload { (i - n * 40 / 100) * 4_000 } else { 0 };
        let dispatched = intended + queue;
        r.dispatched_us = Some(dispatched);
        r.attempts = 1;
        if i % 97 == 50 {
            r.http_status = Some(503);
            r.headers_us = Some(dispatched + 2_000);
            r.done_us = Some(dispatched + 2_100);
            r.fail(ErrorKind::HttpStatus, "HTTP 503: overloaded");
            out.push(r);
            continue;
        }
        let base = 25_000.0 + f64::from(prompt) * 40.0 + rng.below(10_000) as f64;
        let ttft = (base * slow) as u64 + if overload { 80_000 } else { 0 };
        let gaps: Vec<u32> =
            (1..out_tokens).map(|_| ((8_000 + rng.below(6_000)) as f64 * slow) as u32).collect();
        let first = dispatched + ttft;
        let last = first + gaps.iter().map(|&g| u64::from(g)).sum::<u64>();
        r.outcome = Outcome::Completed;
        r.http_status = Some(200);
        r.headers_us = Some(dispatched + 3_000);
        r.first_event_us = Some(first);
        r.first_token_us = Some(first);
        r.last_token_us = Some(last);
        r.done_us = Some(last + 300);
        r.token_event_count = out_tokens;
        r.token_events.gaps_us = gaps;
        r.completion_tokens = Some(out_tokens);
        r.server_prompt_tokens = Some(prompt + 7);
        r.output_chars = u64::from(out_tokens) * 4;
        r.finish_reason = Some("length".into());
        out.push(r);
    }
    out
}

/// A fixed environment (tests never read the host).
pub(super) fn fixed_env() -> Environment {
    Environment {
        cpu_model: Some("Test CPU @ 3.00GHz".into()),
        cores: Some(2),
        kernel: Some("6.1.0-test".into()),
        clocksource: Some("tsc".into()),
        tool_version: "0.1.0".into(),
        os: "linux x86_64".into(),
        note: None,
    }
}

pub(super) fn header(label: &str) -> ReportHeader {
    ReportHeader {
        config: vec![
            ("model".into(), "test-model".into()),
            ("request rate (req/s)".into(), "20.0".into()),
            ("label".into(), label.into()),
        ],
        environment: Some(fixed_env()),
        client_health: vec![("dispatch lateness p99".into(), "0.80 ms".into())],
        warnings: vec![],
        notes: vec![],
        validity: None,
        pooling: false,
    }
}

/// Runs for the tests: one baseline run (with dispatch lateness) and, with `compare`, a faster one.
pub(super) fn fixture_runs(n: u64, compare: bool) -> Vec<ReportRun> {
    let mut base = ReportRun::new("baseline", header("baseline"), fixture_records(7, n, 1.0), vec![]);
    let mut rng = Mix(99);
    base.dispatch_lateness_us = Some((0..n).map(|_| rng.below(1200)).collect());
    let mut runs = vec![base];
    if compare {
        runs.push(ReportRun::new("candidate", header("candidate"), fixture_records(8, n, 0.7), vec![]));
    }
    runs
}

/// Chart titles every report has.
pub(super) const TITLES: [&str; 12] = [
    "TTFT distribution (CDF)",
    "TTFT histogram",
    "ITL distribution (CDF)",
    "ITL histogram",
    "E2EL distribution (CDF)",
    "E2EL histogram",
    "TTFT over time",
    "E2EL over time",
    "Output tokens/s over time",
    "Requests in flight over time",
    "Queue time and dispatch lateness over time",
    "TTFT vs prompt length",
];

/// Chart element ids, in page order.
pub(super) const IDS: [&str; 12] = [
    "ttft-cdf",
    "ttft-hist",
    "itl-cdf",
    "itl-hist",
    "e2el-cdf",
    "e2el-hist",
    "ttft-time",
    "e2el-time",
    "tokens-time",
    "inflight-time",
    "queue-time",
    "ttft-prompt",
];

/// Asserts the document loads nothing from elsewhere.
pub(super) fn assert_self_contained(html: &str) {
    for bad in ["http://", "https://", "//cdn", "<link", "@import", " src=", "@font-face"] {
        assert!(!html.contains(bad), "report references an external resource: {bad}");
    }
    assert_eq!(html.matches("url(").count(), html.matches("url(#clip-").count(), "only local clip-path urls");
}

/// The markup of the chart with element id `id`.
pub(super) fn chart_markup<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!("<figure class=\"chart\" id=\"{id}\"")).unwrap();
    let end = html[start..].find("</figure>").unwrap();
    &html[start..start + end]
}

#[test]
fn single_run_report_has_every_chart_and_header() {
    let runs = fixture_runs(400, false);
    let html = html_report(&runs);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<svg").count(), 12);
    for t in TITLES {
        assert!(html.contains(&format!("<h3>{}</h3>", esc_test(t))), "missing chart {t}");
    }
    for id in IDS {
        assert_eq!(html.matches(&format!("id=\"{id}\"")).count(), 1, "chart id {id}");
    }
    assert_self_contained(&html);
    // Header: configuration, environment, client health; metric-derived warnings.
    for text in ["Configuration", "Environment", "Client health", "Test CPU @ 3.00GHz", "tsc", "test-model"] {
        assert!(html.contains(text), "header lacks {text}");
    }
    assert!(html.contains("requests failed (http_status 4)"), "failure warning");
    assert!(html.contains("3 requests of the workload were never sent"), "cancelled before dispatch");
    // Axis labels carry units.
    for label in
        ["TTFT (ms)", "ITL (ms)", "E2EL (ms)", "output tokens/s", "prompt length (tokens)", "delay (ms)"]
    {
        assert!(html.contains(label), "axis label {label}");
    }
    // Lateness was supplied, so the queue chart has a second (cross) series.
    assert!(chart_markup(&html, "queue-time").contains("dispatch lateness (released"));
    // No script or style tags beyond the inline ones.
    assert_eq!(html.matches("<script>").count(), 1);
    assert_eq!(html.matches("<style>").count(), 1);
    assert!(html.contains("data-ok"));
}

fn esc_test(s: &str) -> String {
    svg::esc(s)
}

#[test]
fn report_is_deterministic() {
    let runs = fixture_runs(300, true);
    assert_eq!(html_report(&runs), html_report(&runs));
}

#[test]
fn comparison_overlays_runs_with_legend_and_deltas() {
    let runs = fixture_runs(300, true);
    let html = html_report(&runs);
    assert_eq!(html.matches("<svg").count(), 12);
    assert!(html.contains("servebench comparison: baseline vs candidate"));
    let cdf = chart_markup(&html, "ttft-cdf");
    assert_eq!(cdf.matches("class=\"s run-0\"").count(), 2);
    assert_eq!(cdf.matches("class=\"s run-1\"").count(), 2);
    assert!(cdf.contains("baseline: service view") && cdf.contains("candidate: response view"));
    assert_eq!(html.matches("class=\"run-toggle\"").count(), 2);
    // The candidate is faster: its TTFT deltas are marked better.
    assert!(html.contains("<span class=\"delta better\">-"));
    assert_self_contained(&html);
}

#[test]
fn scatter_charts_are_downsampled() {
    let runs = fixture_runs(12_000, false);
    let html = html_report(&runs);
    for id in ["ttft-time", "e2el-time", "ttft-prompt"] {
        let dots = chart_markup(&html, id).matches("h0").count();
        assert!(dots <= MAX_SCATTER_POINTS + 1, "{id}: {dots} points");
        assert!(dots > 1000, "{id}: {dots} points");
    }
    let q = chart_markup(&html, "queue-time");
    assert!(q.matches("h0").count() + q.matches("l5 5").count() <= MAX_SCATTER_POINTS + 2);
    assert!(html.len() < 3_000_000, "report is {} bytes", html.len());
}

#[test]
fn empty_inputs_do_not_panic() {
    let none = html_report(&[]);
    assert!(none.contains("No runs to report"));
    assert_self_contained(&none);
    let empty = ReportRun::new("empty", ReportHeader::default(), vec![], vec![]);
    let html = html_report(&[empty]);
    assert_eq!(html.matches("<svg").count(), 12);
    assert!(html.contains("no data"));
    assert!(!html.contains("NaN"));
    // Only failures: charts exist, no latency curves.
    let mut r = RequestRecord::scheduled(0, "x".into(), 0, 10, 10);
    r.dispatched_us = Some(10);
    r.done_us = Some(20);
    r.fail(ErrorKind::Connect, "refused");
    let html = html_report(&[ReportRun::new("failing", ReportHeader::default(), vec![r], vec![])]);
    assert!(html.contains("1 of 1 requests failed (connect 1)"));
}

#[test]
fn labels_and_values_are_escaped() {
    let mut runs = fixture_runs(50, false);
    runs[0].label = "<b>x</b> & \"y\"".into();
    runs[0].header.config.push(("note".into(), "<script>alert(1)</script>".into()));
    let html = html_report(&runs);
    assert!(!html.contains("<b>x</b>"));
    assert!(html.contains("&lt;b&gt;x&lt;/b&gt; &amp; &quot;y&quot;"));
    assert_eq!(html.matches("<script>").count(), 1);
}

#[test]
fn header_from_run_info_lists_config_health_and_warnings() {
    use crate::info::ClientHealth;
    use time::macros::datetime;
    let info = RunInfo {
        date: datetime!(2026-11-29 21:13:48 UTC),
        origin_wall: datetime!(2026-11-29 21:13:00 UTC),
        backend: "openai".into(),
        endpoint_type: "openai".into(),
        label: Some("l".into()),
        model_id: "m".into(),
        tokenizer_id: None,
        num_prompts: 10,
        request_rate: f64::INFINITY,
        burstiness: 1.0,
        max_concurrency: Some(8),
        ramp_up: None,
        trace_time_scale: None,
        rps_change_events: vec![],
        stages: vec![],
        metadata: vec![("gpu".into(), "H100".into())],
        client_health: ClientHealth {
            dispatch_lateness_p99_us: Some(20_000.0),
            client_cpu_percent: Some(50.0),
            available_cores: Some(2.0),
            ..ClientHealth::default()
        },
    };
    let h = ReportHeader::from_run_info(&info, Some(fixed_env()));
    let get = |k: &str| h.config.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("request rate (req/s)").as_deref(), Some("inf"));
    assert_eq!(get("max concurrency").as_deref(), Some("8"));
    assert_eq!(get("gpu").as_deref(), Some("H100"));
    assert_eq!(h.client_health.len(), 3);
    assert_eq!(h.warnings.len(), 1);
}

/// Snapshot of a small comparison report (`tests/snapshots/small_comparison_report.snap`, insta;
/// `INSTA_UPDATE=always cargo test -p servebench-report snapshot` rewrites it).
#[test]
fn snapshot_of_small_comparison_report() {
    let html = html_report(&fixture_runs(40, true));
    insta::with_settings!({snapshot_path => "../../tests/snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!("small_comparison_report", html);
    });
}

/// The value cell of the summary row `name` (first run), as written.
pub(super) fn summary_cell(html: &str, name: &str) -> String {
    let row = format!("<tr><td>{name}</td><td>");
    let at = html.find(&row).unwrap_or_else(|| panic!("no row {name}")) + row.len();
    html[at..].split(['<', ' ']).next().unwrap_or_default().to_owned()
}

/// Pins a pooling run's total tokens/s in the HTML report to the console's and the result
/// JSON's (docs/metrics.md, "Pooling input tokens": the server's count first, from
/// `pooling::input_throughput`): the HTML showed the client count's (2451.5 for 2911.21).
#[test]
fn pooling_total_tokens_per_s_is_the_server_counted_input_rate() {
    let mut h = header("emb");
    h.pooling = true;
    // fixture_records' server counts are the client's + 7 per request.
    let run = ReportRun::new("emb", h, fixture_records(7, 40, 1.0), vec![]);
    let expected = crate::sections::pooling::input_throughput(&run.metrics).as_f64().unwrap();
    assert!((expected - run.metrics.total_token_throughput).abs() > 1.0, "the two counts differ");
    let html = html_report(&[run]);
    assert_eq!(summary_cell(&html, "total tokens/s"), format!("{expected:.1}"));
    // Pins no output tokens/s row for a pooling run with records (it showed 0.0): no data.
    assert!(!html.contains("<tr><td>output tokens/s</td>"), "a pooling run has no output");
    // Nor a peak output rate (it showed "peak output tokens/s (1-s window) 0.0").
    assert!(!html.contains("<tr><td>peak output tokens/s (1-s window)</td>"), "no output, no peak");
    // The backend of a result says it is a pooling run.
    let doc: crate::document::ResultDocument =
        serde_json::from_value(serde_json::json!({"backend": "openai-embeddings", "completed": 1})).unwrap();
    assert!(ReportHeader::from_result(&doc).pooling);
    let doc: crate::document::ResultDocument =
        serde_json::from_value(serde_json::json!({"backend": "openai-chat", "completed": 1})).unwrap();
    assert!(!ReportHeader::from_result(&doc).pooling);
}

/// Pins a result without records whose file lacks run-level keys (an older vLLM result has no
/// `max_output_tokens_per_s` or `max_concurrent_requests`; a pooling result no
/// `output_throughput`): those rows are "–", no data, not the 0 its metrics keep for vLLM's type.
#[test]
fn a_result_without_records_shows_the_figures_it_lacks_as_no_data_not_zero() {
    let doc: crate::document::ResultDocument = serde_json::from_value(serde_json::json!({
        "backend": "vllm", "completed": 10, "failed": 0, "duration": 5.0,
        "request_throughput": 2.0, "total_token_throughput": 300.0, "mean_ttft_ms": 12.5,
    }))
    .unwrap();
    let mut run = ReportRun::new("old", ReportHeader::from_result(&doc), vec![], vec![]);
    run.source = RecordSource::SummaryOnly;
    run.lacks = crate::vllm_arrays::use_result_figures(&mut run.metrics, &doc.metrics);
    const LACKING: [&str; 3] =
        ["output tokens/s", "peak output tokens/s (1-s window)", "peak requests in flight"];
    let alone = html_report(std::slice::from_ref(&run));
    assert_eq!(summary_cell(&alone, "requests/s"), "2.00");
    assert_eq!(summary_cell(&alone, "total tokens/s"), "300.0");
    for lacking in LACKING {
        assert!(
            !alone.contains(&format!("<tr><td>{lacking}</td>")),
            "{lacking}: a row without data for any run"
        );
    }
    // Beside a run that has them, its cells are "–".
    let with_records = ReportRun::new("new", header("new"), fixture_records(3, 40, 1.0), vec![]);
    let both = html_report(&[run, with_records]);
    for lacking in LACKING {
        assert_eq!(summary_cell(&both, lacking), "–", "{lacking}");
    }
}
