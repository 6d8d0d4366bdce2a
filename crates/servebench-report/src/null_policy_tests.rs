//! Issue 15.2: a metric without data is `null` in the JSON and "n/a" in the console, never 0 —
//! in the run's block, per stage, per turn, TTFO and the schedule lag. Issue 23.14: except in
//! the keys vLLM defines, which keep vLLM's type (`0.0` without data, as vLLM writes it).

use serde_json::{json, Value};
use servebench_core::metrics::{compute, MetricName, MetricsConfig};
use servebench_core::record::{ErrorKind, Outcome, RequestRecord};
use time::macros::datetime;

use crate::info::{ClientHealth, RunInfo};
use crate::sections::groups::{console_groups, result_keys, GroupInfo, StageInfo};
use crate::{console_block, result_json};

fn info() -> RunInfo {
    RunInfo {
        date: datetime!(2026-11-29 21:13:48 UTC),
        origin_wall: datetime!(2026-11-29 21:13:00 UTC),
        backend: "openai".into(),
        endpoint_type: "openai".into(),
        label: None,
        model_id: "m".into(),
        tokenizer_id: None,
        num_prompts: 2,
        request_rate: 10.0,
        burstiness: 1.0,
        max_concurrency: None,
        ramp_up: None,
        trace_time_scale: None,
        rps_change_events: vec![],
        stages: vec![],
        metadata: vec![],
        client_health: ClientHealth::default(),
    }
}

/// Two requests that were sent and failed with HTTP 503 after 5 ms.
fn failed_only() -> Vec<RequestRecord> {
    (0..2u64)
        .map(|i| {
            let mut r = RequestRecord::scheduled(i, format!("r{i}"), i * 100_000, 10, 10);
            r.dispatched_us = Some(i * 100_000);
            r.headers_us = Some(i * 100_000 + 5_000);
            r.done_us = r.headers_us;
            r.http_status = Some(503);
            r.fail(ErrorKind::HttpStatus, "HTTP 503");
            r.stage = Some(0);
            r
        })
        .collect()
}

fn cfg() -> MetricsConfig {
    MetricsConfig { selected: MetricName::ALL[..4].to_vec(), ..MetricsConfig::default() }
}

#[test]
fn empty_window_latencies_are_null_in_our_keys_zero_in_vllms_and_na_in_the_console() {
    let recs = failed_only();
    let m = compute(&recs, &cfg());
    let doc = result_json(&info(), &m, &recs, false);
    // vLLM's keys: vLLM's float, 0.0 for an empty set (vLLM: `np.mean(values or 0)`).
    for k in [
        "mean_ttft_ms",
        "median_ttft_ms",
        "std_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "p99_itl_ms",
        "mean_e2el_ms",
    ] {
        assert_eq!(doc[k], json!(0.0), "{k}");
    }
    // Ours: null.
    for k in ["mean_response_ttft_ms", "p99_itl_token_view_ms"] {
        assert_eq!(doc[k], Value::Null, "{k}");
    }
    // Requests were dispatched: the duration and the (zero) throughputs are data; no "-0.00".
    assert_eq!(doc["request_throughput"], json!(0.0));
    assert!(doc["max_output_tokens_per_s"].as_f64().is_some_and(|v| v == 0.0 && v.is_sign_positive()));
    assert!(doc["mean_queue_time_ms"].is_number());
    let text = console_block(&info(), &m);
    let line = |label: &str| text.lines().find(|l| l.starts_with(label)).unwrap_or_default().to_owned();
    assert!(line("Mean TTFT (ms):").ends_with("n/a") || line("Mean TTFT (ms):").contains("n/a"), "{text}");
    assert!(line("P99 ITL (ms):").contains("n/a"));
    assert!(!line("Mean TTFT (ms):").contains("0.00"));
    assert!(!text.contains("-0.00"), "{text}");
}

#[test]
fn nothing_dispatched_makes_our_rates_null_and_vllms_zero() {
    let mut r = RequestRecord::scheduled(0, "r0".into(), 0, 10, 10);
    r.outcome = Outcome::Cancelled;
    let m = compute(&[r.clone()], &cfg());
    let doc = result_json(&info(), &m, &[r], false);
    for k in [
        "duration",
        "request_throughput",
        "output_throughput",
        "total_token_throughput",
        "max_output_tokens_per_s",
    ] {
        assert_eq!(doc[k], json!(0.0), "{k}");
    }
    for k in ["input_throughput", "mean_queue_time_ms"] {
        assert_eq!(doc[k], Value::Null, "{k}");
    }
    let text = console_block(&info(), &m);
    assert!(
        text.lines().any(|l| l.starts_with("Request throughput (req/s):") && l.contains("n/a")),
        "{text}"
    );
}

/// Pins vLLM's types in vLLM's keys over the whole schema (issue 23.14): `rtfx` used to be
/// `null` where vLLM writes `0.0` (a consumer doing `rtfx > 0` raised a TypeError), and so were
/// the duration, throughputs and latency statistics of a run without data. Every key the schema
/// marks as vLLM's is written with a non-null value on runs without data (nothing dispatched;
/// everything failed), except the four vLLM itself writes as None; and the schema allows null
/// in no other vLLM key.
#[test]
fn vllm_keys_keep_vllms_type_on_runs_without_data() {
    const VLLM_NONE: [&str; 4] = ["label", "tokenizer_id", "max_concurrency", "request_goodput"];
    let schema = servebench_testkit::fixtures::result_schema_json();
    let props = schema["properties"].as_object().expect("properties");
    let vllm_keys: Vec<&String> = props
        .iter()
        .filter(|(_, v)| v["description"].as_str().is_some_and(|d| d.starts_with("vLLM")))
        .map(|(k, _)| k)
        .collect();
    assert!(vllm_keys.len() > 30, "{vllm_keys:?}");
    for k in &vllm_keys {
        let nullable = props[*k]["type"].as_array().is_some_and(|t| t.contains(&json!("null")));
        assert_eq!(nullable, VLLM_NONE.contains(&k.as_str()), "schema type of {k}");
    }
    let mut unsent = RequestRecord::scheduled(0, "r0".into(), 0, 10, 10);
    unsent.outcome = Outcome::Cancelled;
    let mut info = info();
    info.max_concurrency = Some(2);
    for recs in [vec![unsent], failed_only()] {
        let m =
            compute(&recs, &MetricsConfig { selected: MetricName::ALL.to_vec(), ..MetricsConfig::default() });
        let doc = result_json(&info, &m, &recs, true);
        let obj = doc.as_object().expect("object");
        for (k, v) in obj {
            let vllm = vllm_keys.contains(&k) || is_vllm_statistic(k);
            if vllm && !VLLM_NONE.contains(&k.as_str()) {
                assert!(!v.is_null(), "{k} is null");
            }
        }
        assert_eq!(doc["rtfx"], json!(0.0));
        assert_eq!(doc["p99_client_queue_time_ms"], json!(0.0));
    }
}

/// A latency statistic of one of vLLM's metrics (`mean_ttft_ms`, `p99_e2el_ms`, …).
fn is_vllm_statistic(key: &str) -> bool {
    let Some((stat, metric)) = key.strip_suffix("_ms").and_then(|rest| rest.split_once('_')) else {
        return false;
    };
    let stat_ok = ["mean", "median", "std"].contains(&stat)
        || stat.strip_prefix('p').is_some_and(|p| p.parse::<f64>().is_ok());
    stat_ok && MetricName::ALL.iter().any(|m| m.as_str() == metric)
}

#[test]
fn per_stage_and_per_turn_without_data_are_null_and_na() {
    let mut recs = failed_only();
    for r in &mut recs {
        r.conversation = Some(0);
        r.turn = Some(r.index as u32);
    }
    let stage = |rate| StageInfo { rate, seconds: 10.0, concurrency: None };
    let gi = GroupInfo { stages: vec![stage(5.0), stage(10.0)], trace: true, ..GroupInfo::default() };
    let doc = Value::Object(result_keys(&recs, &cfg(), &gi));
    assert_eq!(doc["stages"][0]["mean_ttft_ms"], Value::Null);
    // Stage 1: nobody ran in it: no duration, no rates.
    assert_eq!(doc["stages"][1]["duration"], Value::Null);
    assert_eq!(doc["stages"][1]["request_throughput"], Value::Null);
    assert_eq!(doc["per_turn_metrics"][0]["median_ttft_ms"], Value::Null);
    assert_eq!(doc["avg_conversation_duration_ms"], json!(0.0), "vLLM's key: vLLM's type");
    assert!(doc["schedule_lag"]["p99_ms"].is_number());
    let text = console_groups(&recs, &cfg(), &gi);
    assert!(text.lines().filter(|l| l.starts_with("Mean TTFT (ms):")).all(|l| l.contains("n/a")), "{text}");
    assert!(text.contains("Avg conversation duration (ms):          n/a"), "{text}");
    let lag = console_groups::<[servebench_core::RequestRecord]>(
        &[],
        &cfg(),
        &GroupInfo { trace: true, ..GroupInfo::default() },
    );
    assert!(lag.lines().filter(|l| l.starts_with("Dispatch lag")).all(|l| l.contains("n/a")), "{lag}");
    let empty = Value::Object(result_keys::<[servebench_core::RequestRecord]>(
        &[],
        &cfg(),
        &GroupInfo { trace: true, ..GroupInfo::default() },
    ));
    assert_eq!(empty["schedule_lag"]["p99_ms"], Value::Null);
    assert_eq!(empty["schedule_lag"]["max_ms"], Value::Null);
}

/// Pins vLLM 0.34's per-request server timing arrays: `server_queue_times` and `server_ttfts`
/// (seconds, from the usage chunk's `metrics`), one entry per request by index with `null`
/// where a request had none, and both keys left out when no request had any (vLLM's
/// `_get_server_metrics_results`). servebench did not read or write them.
#[test]
fn server_timing_arrays_are_aligned_by_request_with_nulls_and_absent_without_any() {
    let mut recs = failed_only();
    let m = compute(&recs, &cfg());
    let doc = result_json(&info(), &m, &recs, false);
    assert!(doc.get("server_queue_times").is_none() && doc.get("server_ttfts").is_none(), "{doc}");
    recs[1].server_ttft_ms = Some(300.0);
    recs[1].server_queue_time_ms = Some(0.0);
    let doc = result_json(&info(), &m, &recs, false);
    assert_eq!(doc["server_queue_times"], json!([null, 0.0]));
    assert_eq!(doc["server_ttfts"], json!([null, 0.3]));
}
