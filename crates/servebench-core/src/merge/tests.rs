//! Merging shards: the union of split records gives exactly the metrics of the whole set, and
//! mismatched or incomplete shard sets are refused with their codes.

use super::*;
use crate::error::ErrorCode;
use crate::metrics::{compute, MetricName, MetricsConfig, Slo};
use crate::record::{ErrorKind, Outcome};
use crate::shard::{ShardRunInfo, FORMAT_VERSION};

/// A deterministic, varied record set: completed streams, failures, cancellations.
fn records(n: u64) -> Vec<RequestRecord> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    (0..n)
        .map(|i| {
            let intended = 4_000_000 + i * 12_345 + next(5_000);
            let mut r =
                RequestRecord::scheduled(i, format!("bench-{i}"), intended, 10 + next(500) as u32, 64);
            match next(10) {
                0 => r.outcome = Outcome::Cancelled,
                1 => {
                    r.dispatched_us = Some(intended + next(3_000));
                    r.headers_us = Some(intended + 9_000);
                    r.done_us = Some(intended + 9_100);
                    r.http_status = Some(503);
                    r.attempts = 1;
                    r.fail(ErrorKind::HttpStatus, "HTTP 503");
                }
                _ => {
                    let d = intended + next(20_000);
                    let first = d + 20_000 + next(200_000);
                    let events = 1 + next(60) as usize;
                    let gaps: Vec<u32> = (1..events).map(|_| 1_000 + next(40_000) as u32).collect();
                    let last = first + gaps.iter().map(|&g| u64::from(g)).sum::<u64>();
                    r.dispatched_us = Some(d);
                    r.headers_us = Some(first - 500);
                    r.first_event_us = Some(first);
                    r.first_token_us = Some(first);
                    r.first_content_us = Some(first);
                    r.last_token_us = Some(last);
                    r.done_us = Some(last + 300);
                    r.token_events.gaps_us = gaps;
                    r.token_event_count = events as u32;
                    r.content_events = events as u32;
                    r.completion_tokens = (next(4) != 0).then_some(events as u32);
                    r.output_chars = 4 * events as u64;
                    r.attempts = 1;
                    r.outcome = Outcome::Completed;
                }
            }
            r
        })
        .collect()
}

fn header(index: u32, count: u32, total: u64, anchor: u64) -> ShardHeader {
    ShardHeader {
        version: FORMAT_VERSION,
        servebench_version: "test".into(),
        shard_index: index,
        num_shards: count,
        workload_fingerprint: "f00d".into(),
        seed: 7,
        total_requests: total,
        shard_requests: (index as u64..total).step_by(count as usize).count() as u64,
        wall_anchor_unix_us: anchor,
        start_at_unix_us: None,
        waited_us: None,
        merged_from: None,
        run: ShardRunInfo {
            model_id: "m".into(),
            backend: "openai".into(),
            burstiness: 1.0,
            ..Default::default()
        },
    }
}

/// Splits `all` round-robin into `count` shards; shard `i`'s origin is `skew[i]` µs after the
/// common one, so its offsets are that much smaller and its anchor that much later.
fn split(all: &[RequestRecord], count: u32, base: u64, skew: &[u64]) -> Vec<ShardInput> {
    (0..count)
        .map(|i| {
            let d = skew[i as usize];
            let recs = all
                .iter()
                .filter(|r| r.index % u64::from(count) == u64::from(i))
                .map(|r| {
                    let mut r = r.clone();
                    let back = |t: Option<u64>| t.map(|v| v - d);
                    r.intended_us -= d;
                    r.dispatched_us = back(r.dispatched_us);
                    r.headers_us = back(r.headers_us);
                    r.first_event_us = back(r.first_event_us);
                    r.first_token_us = back(r.first_token_us);
                    r.first_content_us = back(r.first_content_us);
                    r.last_token_us = back(r.last_token_us);
                    r.done_us = back(r.done_us);
                    r
                })
                .collect();
            ShardInput {
                source: format!("shard-{i}.jsonl"),
                header: header(i, count, all.len() as u64, base + d),
                summary: Some(ShardSummary { shard_index: i, ..Default::default() }),
                records: recs,
            }
        })
        .collect()
}

fn full_config() -> MetricsConfig {
    MetricsConfig {
        percentiles: vec![1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 100.0],
        selected: MetricName::ALL.to_vec(),
        goodput: vec![
            Slo { metric: MetricName::Ttft, threshold_ms: 150.0 },
            Slo { metric: MetricName::E2el, threshold_ms: 900.0 },
        ],
    }
}

#[test]
fn merged_shards_give_exactly_the_metrics_of_the_whole_record_set() {
    let all = records(1_000);
    let cfg = full_config();
    let whole = compute(&all, &cfg);
    // Shards anchored on the same instant (`--start-at`), listed out of order.
    let mut shards = split(&all, 4, 1_790_000_000_000_000, &[0, 0, 0, 0]);
    shards.reverse();
    let merged = merge_shards(shards, false).unwrap();
    assert_eq!(merged.records, all, "the union is the record set itself");
    assert_eq!(compute(&merged.records, &cfg), whole);
    assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
    assert_eq!(merged.shards.iter().map(|s| s.records).sum::<usize>(), 1_000);
}

#[test]
fn anchors_align_shards_that_started_at_different_instants() {
    let all = records(301);
    let cfg = full_config();
    let skew = [0, 1_500, 250_000, 7];
    let merged = merge_shards(split(&all, 4, 1_000_000_000, &skew), false).unwrap();
    assert_eq!(merged.origin_unix_us, 1_000_000_000);
    assert_eq!(merged.records, all);
    assert_eq!(compute(&merged.records, &cfg), compute(&all, &cfg));
    let offsets: Vec<u64> = merged.shards.iter().map(|s| s.anchor_offset_us).collect();
    assert_eq!(offsets, skew.to_vec());
}

#[test]
fn shards_of_different_workloads_or_seeds_are_refused() {
    let all = records(40);
    let mut shards = split(&all, 2, 0, &[0, 0]);
    shards[1].header.workload_fingerprint = "beef".into();
    let e = merge_shards(shards, false).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ShardMismatch);
    assert!(e.to_string().contains("fingerprint"), "{e}");

    let mut shards = split(&all, 2, 0, &[0, 0]);
    shards[0].header.seed = 8;
    assert_eq!(merge_shards(shards, false).unwrap_err().code(), ErrorCode::ShardMismatch);

    let mut shards = split(&all, 2, 0, &[0, 0]);
    shards[1].header.start_at_unix_us = Some(5);
    assert_eq!(merge_shards(shards, false).unwrap_err().code(), ErrorCode::ShardMismatch);

    // A record in the wrong shard's file.
    let mut shards = split(&all, 2, 0, &[0, 0]);
    let stray = shards[1].records[0].clone();
    shards[0].records.push(stray);
    assert_eq!(merge_shards(shards, false).unwrap_err().code(), ErrorCode::ShardMismatch);
}

#[test]
fn duplicate_and_missing_shards_are_refused_unless_allowed() {
    let all = records(40);
    let mut shards = split(&all, 3, 0, &[0, 0, 0]);
    let dup = shards[1].clone();
    shards.push(dup);
    let e = merge_shards(shards, false).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ShardSet);
    assert!(e.to_string().contains("twice"), "{e}");

    let mut shards = split(&all, 3, 0, &[0, 0, 0]);
    shards.remove(1);
    let e = merge_shards(shards.clone(), false).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ShardSet);
    assert!(e.to_string().contains("missing shard(s) 1"), "{e}");
    let partial = merge_shards(shards, true).unwrap();
    assert_eq!(partial.missing, vec![1]);
    assert_eq!(partial.records.len(), 40 - 13);
    assert!(partial.warnings[0].contains("2 of 3 shards"));

    assert_eq!(merge_shards(Vec::new(), false).unwrap_err().code(), ErrorCode::ShardSet);
}

#[test]
fn stopped_shards_and_spread_origins_are_warned_about() {
    let all = records(40);
    let mut shards = split(&all, 2, 0, &[0, 3_000_000]);
    shards[0].records.truncate(5);
    shards[0].summary = None;
    let merged = merge_shards(shards, false).unwrap();
    let w = merged.warnings.join("\n");
    assert!(w.contains("5 of its 20 records"), "{w}");
    assert!(w.contains("no summary line"), "{w}");
    assert!(w.contains("3.000 s apart"), "{w}");
}

/// Pins shards run with other reporting settings: the merged result took the lowest shard's
/// `--metadata`, label and statistics without a word. They are compared, and a difference is
/// a warning naming the flags and the shard whose settings the result keeps.
#[test]
fn shards_with_other_reporting_settings_are_warned_about() {
    let all = records(20);
    let shards = split(&all, 2, 0, &[0, 0]);
    assert!(merge_shards(shards.clone(), false).unwrap().warnings.is_empty());
    let mut shards = shards;
    shards[1].header.run.metadata = vec![("gpu".into(), "h100".into())];
    shards[1].header.run.label = Some("other".into());
    let w = merge_shards(shards, false).unwrap().warnings.join("\n");
    assert!(
        w.contains("shard 1 (shard-1.jsonl) was run with another --label, --metadata than shard 0")
            && w.contains("takes shard 0's"),
        "{w}"
    );
}

/// Issue 23.13: the merged result had no `interrupted`; a run is interrupted when any shard was
/// (its summary says so) or did not end normally (no summary line).
#[test]
fn merged_run_is_interrupted_when_any_shard_was_or_did_not_end() {
    let all = records(40);
    let merged = merge_shards(split(&all, 2, 0, &[0, 0]), false).unwrap();
    assert!(!merged.interrupted());
    let mut shards = split(&all, 2, 0, &[0, 0]);
    if let Some(s) = shards[1].summary.as_mut() {
        s.interrupted = true;
    }
    assert!(merge_shards(shards, false).unwrap().interrupted());
    let mut shards = split(&all, 2, 0, &[0, 0]);
    shards[0].summary = None;
    assert!(merge_shards(shards, false).unwrap().interrupted());
}

/// An error-rate stop of a shard at `at_s` on its own clock, `not_sent` requests kept back.
fn error_stop(at_s: f64, not_sent: u64) -> crate::early_stop::EarlyStopReport {
    let ev = crate::early_stop::ErrorRateEvidence { failed: 5, over: 10, rate: 0.5, absolute: false };
    crate::early_stop::EarlyStopReport {
        requests_not_sent: not_sent,
        ..crate::early_stop::EarlyStopReport::errors(&ev, at_s, 2.0)
    }
}

#[test]
fn merged_early_stop_is_the_first_shard_to_stop_on_the_merged_clock_with_counts_summed() {
    let all = records(60);
    // Shard 1 anchored 1.5 s after shard 0; shard 2 ran to its end.
    let mut shards = split(&all, 3, 1_000_000_000, &[0, 1_500_000, 0]);
    shards[0].summary.as_mut().unwrap().early_stop = Some(error_stop(4.0, 7));
    shards[1].summary.as_mut().unwrap().early_stop = Some(error_stop(2.0, 3));
    let merged = merge_shards(shards, false).unwrap();
    let e = merged.early_stop().unwrap();
    // Shard 1 stopped at 2.0 s on its clock = 3.5 s on the merged one, before shard 0's 4.0 s.
    assert_eq!((e.stopped_at_s, e.detected_at_s), (3.5, 3.5));
    assert_eq!(e.requests_not_sent, 10, "summed over the stopped shards");
    let w = merged.warnings.iter().find(|w| w.contains("stopped early")).unwrap();
    assert!(w.contains("shard(s) 0, 1 stopped early and shard(s) 2 ran to their end"), "{w}");
    // No shard stopped: no early stop, no warning.
    let merged = merge_shards(split(&all, 3, 0, &[0, 0, 0]), false).unwrap();
    assert!(merged.early_stop().is_none());
    assert!(!merged.warnings.iter().any(|w| w.contains("stopped early")));
}
