//! Every result document the suite ships or produces parses; a round trip of a
//! servebench-written one keeps every value the reader reads; odd shapes read as absent.

use serde_json::{json, Value};

use super::*;
use crate::result_keys::MetricKey;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn shipped(rel: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(MANIFEST).join(rel)).expect(rel)
}

/// The JSON of an insta snapshot (the text after its `---` header).
fn snapshot_json(rel: &str) -> String {
    let text = shipped(rel);
    text.splitn(3, "---\n").nth(2).expect("an insta snapshot").to_owned()
}

/// Parses `v` as a result, writes it back and parses that: nothing read is lost, no key invented,
/// and what was written back is what the original holds.
fn round_trip(v: &Value) -> ResultDocument {
    let doc = JsonFile::single_result(&v.to_string()).expect("a single-run result");
    let back = serde_json::to_value(&doc).unwrap();
    let again: ResultDocument = serde_json::from_value(back.clone()).unwrap();
    assert_eq!(again, doc, "a round trip keeps every value read");
    for (k, w) in back.as_object().unwrap() {
        let orig = v.get(k).unwrap_or_else(|| panic!("{k} written back but not in the original"));
        if let (Some(a), Some(b)) = (orig.as_f64(), w.as_f64()) {
            assert_eq!(a, b, "{k}");
        } else if !w.is_object() && !w.is_array() {
            assert_eq!(orig, w, "{k}");
        }
    }
    doc
}

/// The value a lookup of `key` by name gives (the reader this one replaced).
fn lookup(v: &Value, key: &MetricKey) -> Option<f64> {
    let name = key.to_string();
    match name.split_once('.') {
        Some((head, rest)) if v.get(&name).is_none() => v.get(head)?.get(rest)?.as_f64(),
        _ => v.get(&name)?.as_f64(),
    }
}

/// Every metric key with a number in `v` is read with that number, in the order a
/// lookup-based reader listed them.
fn assert_metrics_match(v: &Value, m: &Metrics) {
    let keys = m.keys();
    for k in &keys {
        assert_eq!(m.get(k), lookup(v, k), "{k}");
    }
    let latency_numbers = v
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, x)| crate::result_keys::LatencyKey::parse(k).is_some() && x.is_number())
        .count();
    assert_eq!(keys.iter().filter(|k| k.latency_metric().is_some()).count(), latency_numbers);
}

#[test]
fn golden_result_snapshots_parse_and_round_trip() {
    for rel in ["tests/snapshots/result_detailed.snap", "tests/snapshots/result_ramp.snap"] {
        let v: Value = serde_json::from_str(&snapshot_json(rel)).expect(rel);
        let doc = round_trip(&v);
        assert_metrics_match(&v, &doc.metrics);
        assert_eq!(doc.run.model_id.as_ref().map(Shown::text), v["model_id"].as_str().map(String::from));
        assert!(doc.client_health.is_some(), "{rel}: client_health");
        assert_eq!(doc.metrics.completed, v["completed"].as_f64());
    }
}

#[test]
fn vllm_written_result_parses_with_null_label_inf_rate_and_null_array_entries() {
    let text = shipped("tests/fixtures/vllm_result.json");
    let v: Value = serde_json::from_str(&text).unwrap();
    let doc = round_trip(&v);
    assert_metrics_match(&v, &doc.metrics);
    assert_eq!(doc.label, None, "vLLM writes label: null");
    assert_eq!(doc.run.request_rate.as_ref().map(Shown::text).as_deref(), Some("inf"));
    assert!(doc.run.rows().contains(&("prompts".into(), "100".into())));
    assert_eq!(doc.detailed.ttfts, Some(vec![Some(0.1), Some(0.0), None]));
    assert_eq!(doc.metrics.request_goodput, None);
    // As JSONL (--append-result): the last line is the result.
    let jsonl = format!("{}\n{}\n", json!({"model_id": "old"}), text.trim());
    assert_eq!(JsonFile::single_result(&jsonl), Some(doc));
}

#[test]
fn odd_shapes_read_as_absent_never_as_errors() {
    let v = json!({"model_id": 7, "label": 3, "completed": "many", "duration": null,
        "request_rate": 2.5, "p99_ttft_ms": "slow", "p99.9_itl_ms": 4.0, "steady_state": [1, 2],
        "client_health": [1.0], "records_file": false, "server_metrics": {"samples": [[0.0], {"t_s": 1.0}]},
        "ttfts": "none", "itls": [3, [0.5, null]], "shards": [{"shard_index": 0, "missing": true}, 5]});
    let doc = JsonFile::single_result(&v.to_string()).expect("model_id is present");
    assert_eq!(doc.label, None);
    assert_eq!(doc.run.model_id.as_ref().map(Shown::text).as_deref(), Some("7"));
    assert_eq!(doc.run.request_rate.as_ref().map(Shown::text).as_deref(), Some("2.5"));
    let keys: Vec<String> = doc.metrics.keys().iter().map(ToString::to_string).collect();
    assert_eq!(keys, vec!["p99.9_itl_ms"]);
    assert_eq!((doc.metrics.steady_state, doc.client_health, doc.records_file), (None, None, None));
    let samples = doc.server_metrics.unwrap().samples.unwrap();
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[0].0, None, "a sample that is not an object");
    assert_eq!(doc.detailed.ttfts, None);
    assert_eq!(doc.detailed.itls.unwrap()[1].0.as_ref().unwrap()[1].0, None);
    let shards = doc.shards.unwrap();
    assert_eq!(shards[0].0, Some(ShardEntry::Missing(MissingShard { shard_index: 0, missing: true })));
    assert_eq!(shards[1].0, None);
}

#[test]
fn what_a_file_holds() {
    // Not a result: no result key (even null counts as present), an array, not JSON.
    assert!(JsonFile::single_result(r#"{"hello": "world"}"#).is_none());
    assert!(JsonFile::single_result(r#"{"duration": null}"#).is_some());
    assert!(JsonFile::single_result(r#"["model_id"]"#).is_none());
    assert!(JsonFile::single_result("hello").is_none());
    assert!(JsonFile::parse("hello").is_err());
    // compare reads any JSON that is not an experiment as a (possibly empty) result.
    assert_eq!(JsonFile::parse("[1, 2]").unwrap(), JsonFile::Result(Box::default()));
    assert_eq!(JsonFile::parse(r#"["sweep"]"#).unwrap(), JsonFile::Result(Box::default()));
    let kind5 = JsonFile::parse(r#"{"servebench_experiment": 5, "completed": 1}"#).unwrap();
    assert!(matches!(kind5, JsonFile::Result(d) if d.metrics.completed == Some(1.0)));
    // An experiment is read from a whole document only for report, from a JSONL line too for compare.
    let line = json!({"servebench_experiment": "multi_run", "runs": []}).to_string();
    assert!(JsonFile::experiment(&line).is_some());
    assert!(JsonFile::experiment(&format!("{{}}\n{line}\n")).is_none());
    assert!(matches!(JsonFile::parse(&format!("{{}}\n{line}\n")).unwrap(), JsonFile::Experiment(_)));
}

#[test]
fn experiment_documents_of_the_suite_parse() {
    use crate::html::tests::extra::{multi_run_doc, sweep_doc};
    for kind in ["sweep", "slo_search", "find_max_rate"] {
        let doc = JsonFile::experiment(&sweep_doc(kind).to_string()).expect(kind);
        assert_eq!(doc.kind(), Some(kind));
    }
    let v = multi_run_doc();
    let doc = JsonFile::experiment(&v.to_string()).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(doc.run_results().len(), runs.len());
    for (r, m) in runs.iter().zip(doc.run_results()) {
        assert_metrics_match(&r["result"], &m);
    }
    let means = doc.summary_means();
    for (k, a) in v["summary"].as_object().unwrap() {
        let key = MetricKey::parse(k).unwrap();
        assert_eq!(means.get(&key), a["mean"].as_f64(), "{k}");
    }
    // A run listed in `partial_runs` (interrupted, stopped early) is not a repetition to compare.
    let mut partial = v.clone();
    partial["partial_runs"] = json!([0]);
    let doc = JsonFile::experiment(&partial.to_string()).unwrap();
    assert_eq!(doc.run_results().len(), runs.len() - 1);
    assert_metrics_match(&runs[1]["result"], &doc.run_results()[0]);
}

#[test]
fn merged_result_shards_round_trip() {
    use servebench_core::shard::ShardSummary;
    let merged = ShardEntry::Merged(Box::new(MergedShard {
        shard_index: Some(1),
        records_file: Some("run-shard1of3.json.records.jsonl".into()),
        records: Some(3),
        origin_offset_us: Some(12),
        anchor_minus_start_at_us: Some(-4),
        waited_for_start_us: None,
        client_health: Some(ShardSummary { shard_index: 1, records: 3, ..Default::default() }),
    }));
    let missing = ShardEntry::Missing(MissingShard { shard_index: 2, missing: true });
    let v = json!({"model_id": "m", "completed": 3, "shards": [merged, missing],
        "merge_warnings": ["shard 2 missing"]});
    let doc = round_trip(&v);
    let shards: Vec<ShardEntry> = doc.shards.unwrap().into_iter().filter_map(|s| s.0).collect();
    assert_eq!(shards, vec![merged, missing]);
    assert_eq!(doc.merge_warnings.unwrap()[0].0.as_deref(), Some("shard 2 missing"));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Keys a result has, and a few it does not know.
    const KEYS: &[&str] = &[
        "model_id",
        "label",
        "request_rate",
        "completed",
        "failed",
        "duration",
        "request_throughput",
        "output_throughput",
        "max_concurrent_requests",
        "p99_ttft_ms",
        "p99.9_itl_ms",
        "mean_tpot_ms",
        "median_e2el_ms",
        "std_ttft_ms",
        "mean_queue_time_ms",
        "steady_state",
        "client_health",
        "records_file",
        "server_metrics",
        "ttfts",
        "itls",
        "latencies",
        "shards",
        "unknown_key",
    ];

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            any::<u32>().prop_map(Value::from),
            "[a-z]{0,4}".prop_map(Value::from),
            Just(Value::from("inf")),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::vec(("[a-z_]{1,6}|request_throughput|t_s", inner), 0..3)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any object with any values under known and unknown keys reads without error, and
        /// every metric key with a number reads as that number.
        #[test]
        fn any_result_object_reads_leniently(
            entries in prop::collection::vec((prop::sample::select(KEYS), any_value()), 1..12)
        ) {
            let mut o = serde_json::Map::new();
            o.insert("model_id".into(), json!("m"));
            for (k, v) in entries {
                o.insert(k.to_string(), v);
            }
            // The values as a file holds them: written and read back (a float need not survive
            // that exactly without serde_json's float_roundtrip; the reader must agree with a
            // lookup of the same text, not with the value before it was written).
            let text = Value::Object(o).to_string();
            let v: Value = serde_json::from_str(&text).unwrap();
            let doc = JsonFile::single_result(&text).expect("reads");
            assert_metrics_match(&v, &doc.metrics);
            prop_assert!(JsonFile::parse(&text).is_ok());
        }
    }
}

/// Issue 23.13: a report built from a result file used to show `peak RSS (bytes)  48095232`.
#[test]
fn client_health_rows_show_peak_rss_in_mib() {
    let doc: ResultDocument = serde_json::from_value(serde_json::json!({
        "client_health": {"peak_rss_bytes": 48_095_232, "client_cpu_percent": 3.81}
    }))
    .unwrap();
    let rows = doc.client_health.unwrap().rows();
    assert!(rows.contains(&("peak RSS".into(), "45.9 MiB".into())), "{rows:?}");
    assert!(rows.contains(&("client CPU (% of one core)".into(), "3.81 %".into())), "{rows:?}");
}

/// A result's `early_stop` block is read (and shown as a warning in the report's run card);
/// `null` or a wrong shape reads as absent.
#[test]
fn early_stop_block_is_read_and_becomes_a_report_warning() {
    let stop = json!({"reason": "error_rate", "detected_at_s": 1.5, "stopped_at_s": 1.5, "window_s": 0.5,
        "arrival_rate": null, "finish_rate": null, "in_flight_start": null, "in_flight_end": null,
        "in_flight_growth_per_s": null, "error_limit": "count", "failed": 2, "finished_in_window": 2,
        "error_rate": 1.0, "requests_not_sent": 4, "in_flight": "drained", "cancelled_in_flight": 0});
    let doc = round_trip(&json!({"model_id": "m", "completed": 3, "early_stop": stop}));
    let e = doc.early_stop.as_ref().unwrap();
    assert_eq!((e.stopped_at_s, e.requests_not_sent), (1.5, 4));
    let header = crate::html::ReportHeader::from_result(&doc);
    assert!(header
        .warnings
        .iter()
        .any(|w| w.starts_with("Early stop (error_rate)") && w.contains("4 requests not sent")));
    for odd in [json!(null), json!("soon"), json!({"reason": "bored"})] {
        let doc = JsonFile::single_result(&json!({"model_id": "m", "early_stop": odd}).to_string()).unwrap();
        assert!(doc.early_stop.is_none(), "{odd}");
    }
}

/// Pins the lean reader (`lean.rs`: per-request arrays read straight into numbers, the rest as
/// a JSON value; a 50 MB vLLM `--save-detailed` result took 791 MB read whole as a JSON value)
/// to the derived reader: the same document for every shape an array can have.
#[test]
fn the_lean_reader_reads_what_the_derived_reader_reads() {
    let docs = [
        json!({"model_id": "m", "ttfts": [0.1, null, "x", 2, -1e-3], "latencies": [1.0, 2.0, 3.0, 4.0, 5.0],
               "itls": [[0.01, 0.02], [], null, [0.5, null, "y", [1]], {"a": 1}],
               "errors": ["", "boom", null, 3, ["e"]], "input_lens": [10, 20, 30, 40, 50],
               "output_lens": [3, 0, 0, 4, 1], "start_times": [0.0, 0.5, 1.0, 1.5, 2.0],
               "generated_texts": ["a", "b"], "completed": 2, "p99_ttft_ms": 5.0}),
        json!({"completed": 1, "ttfts": {"not": "an array"}, "itls": "none", "errors": 7, "latencies": null}),
        json!({"duration": 1.0, "itls": [[{"nested": [1, 2]}, 0.25]], "ttfts": [[0.1]]}),
    ];
    for v in docs {
        let text = v.to_string();
        let lean = JsonFile::single_result(&text).expect("a result");
        let derived: ResultDocument = serde_json::from_str(&text).unwrap();
        assert_eq!(lean, derived, "{text}");
        // JSONL (--append-result): the last line, read the same way.
        assert_eq!(JsonFile::single_result(&format!("{{\"completed\": 9}}\n{text}\n")), Some(derived));
    }
    assert_eq!(JsonFile::single_result("[1, 2]"), None);
    assert!(matches!(JsonFile::parse("[1, 2]"), Ok(JsonFile::Result(d)) if *d == ResultDocument::default()));
}
