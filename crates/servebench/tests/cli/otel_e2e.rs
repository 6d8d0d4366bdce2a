//! OpenTelemetry export end to end (`--otlp-endpoint`): servebench against the embedded
//! simulator, exporting to the test kit's OTLP receiver. One span per request with the record's
//! values (model, tokens, TTFT, E2EL as the span's length), failures and cancellations with
//! `error.type` and their reason, the run metrics, headers never echoed, experiment points
//! tagged, and an unreachable collector that only warns (SB165) and loses no file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::{bin, fast_sim, text, tokenizer};
use serde_json::Value;
use servebench_testkit::otlp::proto::common::v1::any_value;
use servebench_testkit::otlp::proto::metrics::v1::metric;
use servebench_testkit::otlp::proto::trace::v1::Span;
use servebench_testkit::otlp::{attr, attr_f64, attr_i64, attr_str, OtlpReceiver};

/// A saved run against the simulator with export to `receiver`: (stdout, stderr, records).
/// `itl_ms` and `output_len` set the simulator's pace and the answers' length.
fn exported_run(
    receiver: &OtlpReceiver,
    itl_ms: &str,
    output_len: &str,
    extra: &[&str],
) -> (String, String, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let tok = tokenizer();
    let out = bin()
        .args(["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", itl_ms, "--disable-tqdm", "--tokenizer"])
        .arg(&tok)
        .arg("--sim-tokenizer")
        .arg(&tok)
        .args(["--random-input-len", "16", "--random-output-len", output_len, "--max-concurrency", "4"])
        .args(["--save-result", "--result-dir", d, "--result-filename", "r.json"])
        .args(["--otlp-endpoint", &receiver.base_url, "--label", "otel-test"])
        .args(extra)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20otel-secret-123")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let records = std::fs::read_to_string(dir.path().join("r.json.records.jsonl")).unwrap();
    let records = records.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let result = std::fs::read_to_string(dir.path().join("r.json")).unwrap();
    assert!(!result.contains("otel-secret-123"), "the OTLP header is a secret");
    (stdout, stderr, records)
}

/// The span of request `index`.
fn span_of(spans: &[Span], index: u64) -> &Span {
    let mut found =
        spans.iter().filter(|s| attr_i64(&s.attributes, "servebench.request.index") == Some(index as i64));
    let s = found.next().unwrap_or_else(|| panic!("no span for request {index}"));
    assert!(found.next().is_none(), "one span per request ({index})");
    s
}

fn us(r: &Value, key: &str) -> Option<i64> {
    r[key].as_i64()
}

#[test]
fn every_request_is_one_span_with_the_record_values() {
    let rx = OtlpReceiver::start();
    let (stdout, stderr, records) = exported_run(&rx, "1", "4", &["--num-prompts", "20"]);
    assert!(stdout.contains("OpenTelemetry: 20 spans (one per request)"), "{stdout}\n{stderr}");
    let spans: Vec<Span> = rx
        .spans()
        .into_iter()
        .map(|(res, s)| {
            assert_eq!(attr_str(&res, "service.name"), Some("servebench"));
            s
        })
        .collect();
    assert_eq!(spans.len(), records.len());
    assert_eq!(records.len(), 20);
    for r in &records {
        let s = span_of(&spans, r["index"].as_u64().unwrap());
        let a = &s.attributes;
        assert_eq!(attr_str(a, "gen_ai.operation.name"), Some("text_completion"));
        assert!(attr_str(a, "gen_ai.request.model").is_some_and(|m| !m.is_empty()));
        assert_eq!(attr_str(a, "servebench.label"), Some("otel-test"));
        assert_eq!(attr_str(a, "servebench.outcome"), Some("completed"));
        assert_eq!(attr_str(a, "server.address"), Some("127.0.0.1"));
        assert_eq!(attr_i64(a, "gen_ai.usage.output_tokens"), r["completion_tokens"].as_i64());
        let input = r["server_prompt_tokens"].as_i64().or(r["prompt_tokens"].as_i64());
        assert_eq!(attr_i64(a, "gen_ai.usage.input_tokens"), input);
        let d = us(r, "dispatched_us").unwrap();
        let ttft_us = us(r, "first_token_us").unwrap() - d;
        assert_eq!(attr_f64(a, "servebench.ttft_ms"), Some(ttft_us as f64 / 1000.0));
        // The span runs from dispatched to done: its length is the record's E2EL, to the ns.
        let e2el_ns = (us(r, "done_us").unwrap() - d) * 1000;
        assert_eq!((s.end_time_unix_nano - s.start_time_unix_nano) as i64, e2el_ns);
        // The first-token event is TTFT after the start.
        let first = s.events.iter().find(|e| e.name == "servebench.first_token").unwrap();
        assert_eq!((first.time_unix_nano - s.start_time_unix_nano) as i64, ttft_us * 1000);
        assert!(attr(a, "error.type").is_none());
    }
    // Run metrics: the GenAI client instruments and our request count, which adds up.
    let metrics = rx.metrics();
    let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
    for n in [
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk",
        "gen_ai.client.operation.time_per_output_chunk",
        "servebench.requests",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let requests = metrics.iter().find(|m| m.name == "servebench.requests").unwrap();
    let Some(metric::Data::Sum(sum)) = &requests.data else { panic!("a sum") };
    let total: i64 = sum
        .data_points
        .iter()
        .map(|p| match p.value {
            Some(servebench_testkit::otlp::proto::metrics::v1::number_data_point::Value::AsInt(v)) => v,
            _ => 0,
        })
        .sum();
    assert_eq!(total, 20);
    // The header reached the collector, and nothing servebench printed shows it.
    assert!(rx
        .headers()
        .iter()
        .all(|h| h.get("authorization").is_some_and(|v| v == "Bearer otel-secret-123")));
    assert!(!stdout.contains("otel-secret-123") && !stderr.contains("otel-secret-123"));
}

#[test]
fn failed_and_cancelled_requests_carry_error_type_and_reason() {
    let rx = OtlpReceiver::start();
    let args = [
        "--num-prompts",
        "30",
        "--sim-fault",
        "http_500=0.3",
        "--sim-fault-seed",
        "5",
        "--request-cancellation-rate",
        "30",
        "--request-cancellation-delay",
        "0.001",
        "--seed",
        "3",
    ];
    let (_, _, records) = exported_run(&rx, "20", "40", &args);
    let spans: Vec<Span> = rx.spans().into_iter().map(|(_, s)| s).collect();
    assert_eq!(spans.len(), 30);
    let (mut failed, mut cancelled) = (0, 0);
    for r in &records {
        let s = span_of(&spans, r["index"].as_u64().unwrap());
        let a = &s.attributes;
        assert_eq!(attr_str(a, "servebench.outcome"), r["outcome"].as_str());
        match r["outcome"].as_str().unwrap() {
            "failed" => {
                failed += 1;
                assert_eq!(attr_str(a, "error.type"), r["error"]["kind"].as_str());
                assert_eq!(s.status.as_ref().map(|st| st.code), Some(2), "status Error");
            }
            "cancelled" => {
                cancelled += 1;
                assert_eq!(attr_str(a, "error.type"), Some("cancelled"));
                assert_eq!(attr_str(a, "servebench.cancel_reason"), r["cancelled_by"].as_str());
            }
            _ => assert!(attr(a, "error.type").is_none()),
        }
    }
    assert!(failed > 0 && cancelled > 0, "{failed} failed, {cancelled} cancelled");
}

#[test]
fn an_unreachable_collector_warns_sb165_and_keeps_the_result() {
    let port = servebench_testkit::net::closed_port();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = fast_sim(&[
        "--otlp-endpoint",
        &endpoint,
        "--otlp-timeout-seconds",
        "2",
        "--save-result",
        "--result-dir",
        d,
        "--result-filename",
        "r.json",
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "the run's exit code is the run's: {stderr}");
    assert!(stderr.contains("warning[SB165]: OpenTelemetry export to"), "{stderr}");
    assert!(stderr.contains("traces:"), "{stderr}");
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(result["completed"], 12);
    assert!(dir.path().join("r.json.records.jsonl").exists());
}

#[test]
fn an_https_endpoint_is_refused_before_the_run() {
    let out = fast_sim(&["--otlp-endpoint", "https://127.0.0.1:4318"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("SB167"), "{}", text(&out.stderr));
}

#[test]
fn experiment_points_are_tagged_and_each_request_is_one_span() {
    let rx = OtlpReceiver::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = fast_sim(&[
        "--sweep-max-concurrency",
        "1,2",
        "--sweep-num-prompts-factor",
        "3",
        "--otlp-endpoint",
        &rx.base_url,
        "--save-result",
        "--result-dir",
        d,
        "--result-filename",
        "sweep.json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("sweep.json")).unwrap()).unwrap();
    let sent: u64 =
        doc["points"].as_array().unwrap().iter().map(|p| p["num_prompts"].as_u64().unwrap()).sum();
    let spans: Vec<Span> = rx.spans().into_iter().map(|(_, s)| s).collect();
    assert_eq!(spans.len() as u64, sent, "one span per request of every point");
    let mut points: Vec<String> = spans
        .iter()
        .map(|s| match attr(&s.attributes, "servebench.experiment.point") {
            Some(any_value::Value::StringValue(p)) => p.clone(),
            other => panic!("no point label: {other:?}"),
        })
        .collect();
    points.sort();
    points.dedup();
    assert_eq!(points.len(), 2, "{points:?}");
}
