//! A run's records as bytes (`CompactRecords`) against the records themselves: storing 10,000
//! records (what the collector does per finished request), walking them (one decode each), and
//! the run's metrics over both (`metrics::compute`, which walks them several times). Two
//! shapes: a one-token request (a short-request trace replay) and a 100-token stream. The
//! allocator is mimalloc, as in the `servebench` binary.
#![allow(clippy::unwrap_used)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use servebench_core::metrics::{compute, MetricsConfig};
use servebench_core::{CompactRecords, HttpPhases, Outcome, RecordSet, RequestRecord};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const N: u64 = 10_000;

/// Request `i` as the simulator answers it: `tokens` output tokens 1 ms apart.
fn record(i: u64, tokens: u32) -> RequestRecord {
    let intended = i * 200;
    let mut r = RequestRecord::scheduled(i, format!("bench-a3bc8c99-{i}"), intended, 700, tokens);
    r.server_request_id = Some(r.request_id.clone());
    r.outcome = Outcome::Completed;
    r.http_status = Some(200);
    r.gate_us = Some(intended + 40);
    r.dispatched_us = Some(intended + 90);
    r.headers_us = Some(intended + 1_300);
    let first = intended + 2_900 + i % 97;
    (r.first_event_us, r.first_token_us, r.first_content_us) = (Some(first), Some(first), Some(first));
    r.token_events.gaps_us = (1..tokens).map(|k| 1_000 + (k * 37 + i as u32) % 200).collect();
    let last = first + r.token_events.gaps_us.iter().map(|&g| u64::from(g)).sum::<u64>();
    (r.last_token_us, r.done_us) = (Some(last), Some(last + 20));
    r.server_prompt_tokens = Some(700);
    r.completion_tokens = Some(tokens);
    (r.token_event_count, r.content_events, r.output_chars) = (tokens, tokens, u64::from(tokens) * 4);
    r.finish_reason = Some("length".into());
    r.attempts = 1;
    r.phases = Some(HttpPhases {
        reused: true,
        written_us: Some(60),
        first_byte_us: Some(1_200),
        last_byte_us: Some((last - intended) as u32),
        ..HttpPhases::default()
    });
    r
}

fn bench(c: &mut Criterion) {
    let cfg = MetricsConfig::default();
    for (shape, tokens) in [("1_token", 1), ("100_tokens", 100)] {
        let records: Vec<RequestRecord> = (0..N).map(|i| record(i, tokens)).collect();
        let compact = CompactRecords::from(records.as_slice());
        let mut group = c.benchmark_group(format!("compact_records_{shape}_10k"));
        group.sample_size(20);
        group.bench_function("push", |b| {
            b.iter_batched(
                || records.clone(),
                |rs| {
                    let mut c = CompactRecords::with_capacity(rs.len());
                    rs.into_iter().for_each(|r| c.push(&r));
                    c
                },
                BatchSize::LargeInput,
            )
        });
        group.bench_function("hold_in_vec", |b| {
            b.iter_batched(
                || records.clone(),
                |rs| {
                    let mut v = Vec::with_capacity(rs.len());
                    rs.into_iter().for_each(|r| v.push(r));
                    v
                },
                BatchSize::LargeInput,
            )
        });
        group.bench_function("walk_compact", |b| {
            b.iter(|| compact.records().map(|r| r.done_us.unwrap_or(0)).sum::<u64>())
        });
        group.bench_function("walk_slice", |b| {
            b.iter(|| records.records().map(|r| r.done_us.unwrap_or(0)).sum::<u64>())
        });
        group.bench_function("metrics_compact", |b| b.iter(|| compute(&compact, &cfg)));
        group.bench_function("metrics_slice", |b| b.iter(|| compute(&records, &cfg)));
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
