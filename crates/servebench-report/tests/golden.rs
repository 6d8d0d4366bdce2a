//! Golden tests: the console block and the result JSON of a fixed, hand-built record set must
//! match the committed snapshots in `tests/snapshots/` exactly (insta, the workspace's one snapshot
//! mechanism: `INSTA_UPDATE=always cargo test -p servebench-report` rewrites them; review the
//! diff before committing).
//!
//! Also checks the JSON against `tests/vllm_result_keys.txt` (every key vLLM writes) and against
//! `docs/result.schema.json`.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;

use serde_json::Value;
use servebench_core::metrics::{compute, MetricName, MetricsConfig, Slo};
use servebench_core::record::{ErrorKind, RequestRecord};
use servebench_core::schedule::{ArrivalSchedule, RampStrategy, RampUp, RateConfig};
use servebench_report::{
    console_block, console_block_with, default_result_filename, result_json, ClientHealth, Detail, RunInfo,
};
use servebench_testkit::records::RecordBuilder;
use time::macros::datetime;

/// The same record set as `servebench-core`'s metrics tests (see the table there).
fn records() -> Vec<RequestRecord> {
    let r = |i: u64, intended: u64, prompt: u32| {
        RecordBuilder::new(i).intended_at(intended).prompt_tokens(prompt)
    };
    let r0 = r(0, 0, 10)
        .sent_at(1_000)
        .stream(101_000, &[10_000, 20_000, 30_000])
        .done_at(162_000)
        .usage(4)
        .prompt_usage(12, Some(4))
        .text("a b c d")
        .completed();
    let r1 = r(1, 50_000, 20)
        .sent_at(60_000)
        .stream(260_000, &[40_000, 40_000])
        .event_tokens(&[1, 3, 2])
        .done_at(350_000)
        .usage(6)
        .text("é f g h i j")
        .completed();
    let r2 = r(2, 100_000, 5).sent_at(100_000).stream(150_000, &[]).done_at(151_000).text("x").completed();
    let r3 = r(3, 200_000, 8)
        .sent_at(210_000)
        .stream(400_000, &[30_000, 50_000])
        .done_at(480_000)
        .with(|r| r.retokenized_tokens = Some(5))
        .text("k l m n o")
        .completed();
    let r4 = r(4, 300_000, 7)
        .sent_at(300_000)
        .with(|r| {
            r.headers_us = Some(305_000);
            r.done_us = Some(305_000);
            r.http_status = Some(503);
        })
        .failed(ErrorKind::HttpStatus, "HTTP 503 Service Unavailable");
    let r5 = r(5, 400_000, 9)
        .sent_at(420_000)
        .stream(500_000, &[10_000])
        .failed(ErrorKind::Timeout, "stall timeout after 10 s");
    let r6 = r(6, 900_000, 3).cancelled();
    // Out of order on purpose: arrays must come out by index.
    vec![r3, r0, r1, r2, r4, r6, r5]
}

fn info() -> RunInfo {
    RunInfo {
        date: datetime!(2026-11-29 21:13:48 UTC),
        origin_wall: datetime!(2026-11-29 21:13:40.5 UTC),
        backend: "openai".into(),
        endpoint_type: "openai".into(),
        label: None,
        model_id: "meta-llama/Llama-3.1-8B-Instruct".into(),
        tokenizer_id: Some("meta-llama/Llama-3.1-8B-Instruct".into()),
        num_prompts: 7,
        request_rate: 10.0,
        burstiness: 1.0,
        max_concurrency: Some(4),
        ramp_up: None,
        trace_time_scale: None,
        rps_change_events: vec![],
        stages: vec![],
        metadata: vec![("gpu".into(), "H100".into())],
        client_health: ClientHealth {
            dispatch_lateness_p50_us: Some(180.0),
            dispatch_lateness_p99_us: Some(1_250.0),
            hiccup_p99_us: Some(6_500.0),
            client_cpu_percent: Some(37.5),
            available_cores: Some(2.0),
            peak_rss_bytes: Some(48 * 1024 * 1024),
            client_cpu_seconds: Some(0.75),
            connections_opened: Some(8),
            stale_connections: Some(1),
            ..ClientHealth::default()
        },
    }
}

fn cfg() -> MetricsConfig {
    MetricsConfig {
        percentiles: vec![50.0, 99.0, 99.9],
        selected: MetricName::ALL.to_vec(),
        goodput: vec![Slo { metric: MetricName::E2el, threshold_ms: 270.0 }],
    }
}

/// A ramp-up run with an infinite request rate, default metric selection, no `--save-detailed`.
fn ramp_case() -> (RunInfo, MetricsConfig) {
    let rate = RateConfig {
        request_rate: f64::INFINITY,
        burstiness: f64::INFINITY,
        ramp_up: Some(RampUp { strategy: RampStrategy::Linear, start_rps: 1.0, end_rps: 4.0 }),
    };
    let schedule = ArrivalSchedule::generate(7, &rate, 0);
    let mut i = info();
    i.request_rate = f64::INFINITY;
    i.max_concurrency = None;
    i.label = Some("ramp".into());
    i.ramp_up = rate.ramp_up;
    i.rps_change_events = schedule.rps_change_events(&rate);
    i.metadata.clear();
    i.client_health = ClientHealth::default();
    (i, MetricsConfig::default())
}

/// The committed snapshot `tests/snapshots/NAME.snap`, the crate's one snapshot directory
/// (insta; `INSTA_UPDATE=always cargo test -p servebench-report --test golden` rewrites, or
/// `cargo insta review`).
fn check_golden(name: &str, actual: &str) {
    insta::with_settings!({snapshot_path => "snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!(name, actual);
    });
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

#[test]
fn console_matches_golden() {
    let m = compute(&records(), &cfg());
    check_golden("console", &console_block(&info(), &m));
    let (ri, rc) = ramp_case();
    check_golden("console_ramp", &console_block(&ri, &compute(&records(), &rc)));
}

/// `--verbose` adds the full detail after the captioned additions.
#[test]
fn verbose_console_matches_golden() {
    let m = compute(&records(), &cfg());
    check_golden("console_verbose", &console_block_with(&info(), &m, Detail::Verbose));
}

/// A closed loop (rate inf, a cap): the schedule-anchored figures are the batch's own client
/// queue, so the default console names them as such in one captioned row instead of showing
/// "Response TTFT" seconds beside a TTFT of milliseconds (issue 23, item 11); `--verbose`
/// shows them, captioned as client-queue-inclusive.
#[test]
fn closed_loop_console_matches_golden() {
    let mut i = info();
    i.request_rate = f64::INFINITY;
    i.max_concurrency = Some(2);
    let m = compute(&records(), &cfg());
    let text = console_block(&i, &m);
    assert!(!text.contains("Response TTFT"), "{text}");
    assert!(text.contains("Load mode:                               closed loop, 2 in flight"), "{text}");
    check_golden("console_closed_loop", &text);
    let verbose = console_block_with(&i, &m, Detail::Verbose);
    assert!(verbose.contains("client-queue-inclusive"), "{verbose}");
    assert!(verbose.contains("Mean Response TTFT (ms):"), "{verbose}");
    // A burst (rate inf, no cap): every request is sent at once; the schedule-anchored figures
    // repeat TTFT/E2EL, so the default console shows neither them nor a client queue.
    i.max_concurrency = None;
    let burst = console_block(&i, &m);
    assert!(burst.contains("Load mode:                               burst, all "), "{burst}");
    assert!(!burst.contains("Response TTFT") && !burst.contains("client queue"), "{burst}");
}

#[test]
fn json_matches_golden() {
    let m = compute(&records(), &cfg());
    check_golden("result_detailed", &pretty(&result_json(&info(), &m, &records(), true)));
    let (ri, rc) = ramp_case();
    let rm = compute(&records(), &rc);
    check_golden("result_ramp", &pretty(&result_json(&ri, &rm, &records(), false)));
}

/// A pooling backend's result (vLLM's reduced shape: no generation keys, `total_input_tokens`
/// from the server's usage, `input_lens` and `errors` always), with and without
/// `--save-detailed`: the keys and their order are pinned.
#[test]
fn pooling_json_matches_golden() {
    let mut i = info();
    i.backend = "openai-embeddings".into();
    i.endpoint_type = "openai-embeddings".into();
    let m = compute(&records(), &cfg());
    check_golden("result_pooling_detailed", &pretty(&result_json(&i, &m, &records(), true)));
    check_golden("result_pooling", &pretty(&result_json(&i, &m, &records(), false)));
}

/// Pins a pooling result's `input_lens` being the server's counts (the client's where the
/// server gave none) with `--save-detailed` as without it: with it they were the client's
/// (rerank: 96 where the run without it wrote the server's 93).
#[test]
fn pooling_input_lens_are_the_servers_counts_with_or_without_save_detailed() {
    let mut i = info();
    i.backend = "openai-embeddings".into();
    i.endpoint_type = "openai-embeddings".into();
    let mut recs = records();
    for (k, r) in recs.iter_mut().enumerate() {
        r.server_prompt_tokens = (k % 2 == 0).then_some(r.prompt_tokens + 3);
    }
    let mut by_index: Vec<_> = recs.iter().collect();
    by_index.sort_by_key(|r| r.index);
    let want: Vec<u64> =
        by_index.iter().map(|r| u64::from(r.server_prompt_tokens.unwrap_or(r.prompt_tokens))).collect();
    let m = compute(&recs, &cfg());
    for detailed in [false, true] {
        let v = result_json(&i, &m, &recs, detailed);
        let got: Vec<u64> = v["input_lens"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        assert_eq!(got, want, "detailed: {detailed}");
    }
}

#[test]
fn file_names() {
    assert_eq!(
        default_result_filename(&info()),
        "openai-10.0qps-concurrency4-Llama-3.1-8B-Instruct-20261129-211348.json"
    );
    assert_eq!(
        default_result_filename(&ramp_case().0),
        "ramp-ramp-up-linear-1qps-4qps-Llama-3.1-8B-Instruct-20261129-211348.json"
    );
}

fn vllm_keys() -> Vec<String> {
    let text =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vllm_result_keys.txt"))
            .unwrap();
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
}

/// Pins vLLM's TPOT on our arrays (issue 23.13): `latencies` used to end at `done`, so
/// vLLM's per-request TPOT `(latency − ttft) / (output_len − 1)` recomputed from the arrays
/// differed from `mean_tpot_ms`. `latencies` is vLLM's latency (dispatched → last token event):
/// the recomputation gives our TPOT exactly, `Σ itls = latency − ttft` for every completed
/// request, and the mean of `latencies` is below `mean_e2el_ms` (which ends at `done`) by
/// exactly the mean gap `done − last token` (docs/metrics.md, "Per-request arrays").
#[test]
fn vllm_tpot_and_e2el_recomputed_from_the_arrays() {
    let cfg = MetricsConfig { selected: MetricName::ALL[..4].to_vec(), ..MetricsConfig::default() };
    let recs = records();
    let m = compute(&recs, &cfg);
    let v = result_json(&info(), &m, &recs, true);
    let f = |k: &str, i: usize| v[k][i].as_f64().unwrap();
    let completed: Vec<usize> = (0..recs.len()).filter(|&i| v["errors"][i] == "").collect();
    assert_eq!(completed, vec![0, 1, 2, 3]);
    let mut tpots = Vec::new();
    for &i in &completed {
        let itl_sum: f64 = v["itls"][i].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).sum();
        assert!((f("latencies", i) - f("ttfts", i) - itl_sum).abs() < 1e-9, "request {i}");
        let n = v["output_lens"][i].as_u64().unwrap();
        if n > 1 {
            tpots.push((f("latencies", i) - f("ttfts", i)) / (n - 1) as f64 * 1000.0);
        }
    }
    let mean_tpot = tpots.iter().sum::<f64>() / tpots.len() as f64;
    assert!(
        (mean_tpot - v["mean_tpot_ms"].as_f64().unwrap()).abs() < 1e-9,
        "{mean_tpot} vs {}",
        v["mean_tpot_ms"]
    );
    let mean_latency_ms = completed.iter().map(|&i| f("latencies", i)).sum::<f64>() / 4.0 * 1000.0;
    // done − last token: 1, 10, 1 and 0 ms.
    let mean_tail_ms = (1.0 + 10.0 + 1.0 + 0.0) / 4.0;
    assert!((v["mean_e2el_ms"].as_f64().unwrap() - mean_latency_ms - mean_tail_ms).abs() < 1e-9);
}

#[test]
fn json_has_every_vllm_key_in_vllm_order() {
    let m = compute(&records(), &MetricsConfig::default());
    let v = result_json(&info(), &m, &records(), true);
    let obj = v.as_object().unwrap();
    let keys = vllm_keys();
    assert_eq!(keys.len(), 43);
    for k in &keys {
        assert!(obj.contains_key(k), "missing vLLM key {k}");
    }
    // Same relative order as vLLM.
    let pos: Vec<usize> = keys.iter().map(|k| obj.keys().position(|x| x == k).unwrap()).collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "vLLM keys out of order: {pos:?}");
    // Units: seconds for duration and arrays, ms for statistics.
    assert_eq!(obj["duration"], Value::from(0.509));
    assert_eq!(obj["ttfts"][0], Value::from(0.1));
    // vLLM's latency ends at the last token event (340 ms), not at `done` (350 ms).
    assert_eq!(obj["latencies"][1], Value::from(0.28));
    assert_eq!(obj["itls"][0], serde_json::json!([0.01, 0.02, 0.03]));
    assert_eq!(obj["mean_ttft_ms"], Value::from(135.0));
    assert_eq!(obj["request_rate"], Value::from(10.0));
    assert_eq!(obj["request_goodput"], Value::Null);
    // No request carried audio: RTFx is vLLM's 0.0 (vLLM's key keeps vLLM's type).
    assert_eq!(obj["rtfx"], Value::from(0.0));
    assert!(obj["max_concurrent_requests"].is_u64());
    // Not selected by default: no E2EL statistics, as vLLM.
    assert!(!obj.contains_key("mean_e2el_ms"));
}

#[test]
fn json_validates_against_the_committed_schema() {
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let m = compute(&records(), &cfg());
    let (ri, rc) = ramp_case();
    let rm = compute(&records(), &rc);
    for doc in [result_json(&info(), &m, &records(), true), result_json(&ri, &rm, &records(), false)] {
        let errors: Vec<String> =
            validator.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path)).collect();
        assert!(errors.is_empty(), "schema errors: {errors:#?}");
    }
    // The schema describes every vLLM key with a type, and requires each one vLLM always writes;
    // the --save-detailed arrays are required together (dependentRequired on input_lens) and the
    // statistics depend on --percentile-metrics.
    // Generation runs: the top-level `required` plus the `else` branch (pooling backends write
    // vLLM's reduced result, the `then` branch).
    let required: Vec<&str> = [&schema["required"], &schema["else"]["required"]]
        .into_iter()
        .flat_map(|r| r.as_array().unwrap().iter().filter_map(Value::as_str))
        .collect();
    let detailed = ["input_lens", "output_lens", "ttfts", "itls", "start_times", "generated_texts", "errors"];
    let together: Vec<&str> = schema["else"]["dependentRequired"]["input_lens"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for k in vllm_keys() {
        assert!(schema["properties"][&k].is_object(), "schema does not describe {k}");
        if detailed.contains(&k.as_str()) {
            assert!(k == "input_lens" || together.contains(&k.as_str()), "{k} not required with input_lens");
        } else if !k.ends_with("_ms") {
            assert!(required.contains(&k.as_str()), "schema does not require {k}");
        }
    }
}
