//! Every metric pinned on a hand-built record set with known µs times.
//!
//! | rec | outcome | intended | dispatched | first_token | gaps (µs) | tokens/event | done | T (source) |
//! |-----|---------|----------|------------|-------------|-----------|--------------|------|------------|
//! | 0 | completed | 0 | 1_000 | 101_000 | 10k,20k,30k | — | 162_000 | 4 (usage) |
//! | 1 | completed | 50_000 | 60_000 | 260_000 | 40k,40k | 1,3,2 | 350_000 | 6 (usage) |
//! | 2 | completed | 100_000 | 100_000 | 150_000 | — | — | 151_000 | 1 (events) |
//! | 3 | completed | 200_000 | 210_000 | 400_000 | 30k,50k | — | 480_000 | 5 (retokenized) |
//! | 4 | failed http_status | 300_000 | 300_000 | — | — | — | 305_000 | — |
//! | 5 | failed timeout | 400_000 | 420_000 | 500_000 | 10k | — | — (last token 510_000) | — |
//! | 6 | cancelled | 900_000 | — | — | — | — | — | — |

use super::*;
use crate::record::{ErrorKind, RequestRecord};
use crate::record_builder::RecordBuilder;

/// The record set of the table above.
pub(crate) fn fixture() -> Vec<RequestRecord> {
    let r0 = RecordBuilder::new(0)
        .sent_at(1_000)
        .stream(101_000, &[10_000, 20_000, 30_000])
        .done_at(162_000)
        .usage(4)
        .prompt_usage(12, Some(4))
        .completed();
    let r1 = RecordBuilder::new(1)
        .intended_at(50_000)
        .prompt_tokens(20)
        .sent_at(60_000)
        .stream(260_000, &[40_000, 40_000])
        .event_tokens(&[1, 3, 2])
        .done_at(350_000)
        .usage(6)
        .completed();
    let r2 = RecordBuilder::new(2)
        .intended_at(100_000)
        .prompt_tokens(5)
        .sent_at(100_000)
        .stream(150_000, &[])
        .done_at(151_000)
        .completed();
    let r3 = RecordBuilder::new(3)
        .intended_at(200_000)
        .prompt_tokens(8)
        .sent_at(210_000)
        .stream(400_000, &[30_000, 50_000])
        .done_at(480_000)
        .with(|r| r.retokenized_tokens = Some(5))
        .completed();
    let r4 = RecordBuilder::new(4)
        .intended_at(300_000)
        .prompt_tokens(7)
        .sent_at(300_000)
        .done_at(305_000)
        .with(|r| {
            r.headers_us = Some(305_000);
            r.http_status = Some(503);
        })
        .failed(ErrorKind::HttpStatus, "HTTP 503");
    let r5 = RecordBuilder::new(5)
        .intended_at(400_000)
        .prompt_tokens(9)
        .sent_at(420_000)
        .stream(500_000, &[10_000])
        .failed(ErrorKind::Timeout, "stall timeout");
    let r6 = RecordBuilder::new(6).intended_at(900_000).prompt_tokens(3).cancelled();
    vec![r0, r1, r2, r3, r4, r5, r6]
}

fn cfg() -> MetricsConfig {
    MetricsConfig {
        percentiles: vec![50.0, 99.0],
        selected: vec![MetricName::Ttft, MetricName::Tpot, MetricName::Itl, MetricName::E2el],
        goodput: vec![],
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {
        assert!(close($a, $b), "{} = {} , want {}", stringify!($a), $a, $b)
    };
}

#[test]
fn counts_and_failure_kinds() {
    let recs = fixture();
    let m = compute(&recs, &cfg());
    assert_eq!((m.completed, m.failed, m.cancelled), (4, 2, 1));
    assert_eq!(m.sent + m.never_sent, recs.len() as u64);
    assert_eq!(m.sent + m.never_sent, m.completed + m.failed + m.cancelled);
    let kind = |k| m.failures_by_kind.iter().find(|(x, _)| *x == k).map(|&(_, n)| n);
    assert_eq!(kind(ErrorKind::HttpStatus), Some(1));
    assert_eq!(kind(ErrorKind::Timeout), Some(1));
    assert_eq!(m.failures_by_kind.iter().map(|&(_, n)| n).sum::<u64>(), 2);
    assert_eq!(m.failures_unclassified, 0);
}

#[test]
fn duration_tokens_and_throughputs() {
    let m = compute(&fixture(), &cfg());
    // First dispatch 1_000 µs (rec 0); last known end 510_000 µs (rec 5's last token).
    assert_close!(m.duration_s, 0.509);
    assert_eq!(m.total_input_tokens, 10 + 20 + 5 + 8);
    assert_eq!((m.server_total_input_tokens, m.server_input_tokens_reported), (12, 1));
    assert_eq!(m.cached_input_tokens, Some(4));
    assert_eq!(m.total_output_tokens, 4 + 6 + 1 + 5);
    assert_eq!(m.output_token_source, TokenSourceCounts { usage: 2, retokenized: 1, events: 1 });
    assert_close!(m.request_throughput, 4.0 / 0.509);
    assert_close!(m.input_throughput, 43.0 / 0.509);
    assert_close!(m.output_throughput, 16.0 / 0.509);
    assert_close!(m.total_token_throughput, 59.0 / 0.509);
    assert_eq!((m.good_requests, m.request_goodput), (None, None));
}

#[test]
fn service_view_latencies() {
    let m = compute(&fixture(), &cfg());
    // TTFT ms: 100, 200, 50, 190.
    assert_eq!(m.ttft.count, 4);
    assert_close!(m.ttft.mean, 135.0);
    assert_close!(m.ttft.median, 145.0);
    assert_close!(m.ttft.std, 3925.0_f64.sqrt());
    assert_close!(m.ttft.percentile(99.0).unwrap(), 199.7);
    // TPOT ms: 20 (60 ms / 3), 16 (80 ms / 5), 20 (80 ms / 4); rec 2 has one token.
    assert_eq!(m.tpot.count, 3);
    assert_close!(m.tpot.mean, 56.0 / 3.0);
    assert_close!(m.tpot.median, 20.0);
    // ITL event view ms: 10,20,30 | 40,40 | 30,50.
    assert_eq!(m.itl.count, 7);
    assert_close!(m.itl.mean, 220.0 / 7.0);
    assert_close!(m.itl.median, 30.0);
    assert_close!(m.itl.percentile(99.0).unwrap(), 49.4);
    // E2EL ms (done − dispatched): 161, 290, 51, 270.
    assert_close!(m.e2el.mean, 193.0);
    assert_close!(m.e2el.median, 215.5);
}

#[test]
fn token_view_itl_spreads_gaps_over_tokens() {
    let m = compute(&fixture(), &cfg());
    // rec 0: T = E = 4 → 10, 20, 30. rec 1: tokens 1,3,2 → 3 × 40/3, 2 × 20.
    // rec 2: one token → none. rec 3: T = 5 ≠ E = 3 → 4 × (80/4) = 4 × 20.
    assert_eq!(m.itl_token_view.count, 12);
    assert_close!(m.itl_token_view.mean, 220.0 / 12.0);
    assert_close!(m.itl_token_view.median, 20.0);
    let mut v = Vec::new();
    push_token_view_itls(&fixture()[1], &mut v);
    assert_eq!(v.len(), 2);
    assert!(close(v[0].0, 40_000.0 / 3.0) && v[0].1 == 3);
    assert_eq!(v[1], (20_000.0, 2));
}

#[test]
fn token_view_handles_first_event_bundles_and_empty_events() {
    let r = RecordBuilder::new(0).prompt_tokens(1).sent_at(0).stream(100, &[30, 60]).event_tokens(&[3, 0, 2]);
    let r = r.done_at(200).build();
    let mut v = Vec::new();
    push_token_view_itls(&r, &mut v);
    // First event's 2 extra tokens: ITL 0; empty event passes its 30 µs on: (30+60)/2 twice.
    assert_eq!(v, vec![(0.0, 2), (45.0, 2)]);
    // A request claiming 4 billion tokens costs one pair, not 4 billion values.
    let big = RecordBuilder::new(1).prompt_tokens(1).sent_at(0).stream(100, &[50, 50]).done_at(300);
    let big = big.usage(u32::MAX).completed();
    let mut v = Vec::new();
    push_token_view_itls(&big, &mut v);
    assert_eq!(v, vec![(100.0 / f64::from(u32::MAX - 1), u64::from(u32::MAX - 1))]);
    assert_eq!(compute(&[big], &cfg()).itl_token_view.count, (u32::MAX - 1) as usize);
}

#[test]
fn response_view_and_queue_time() {
    let m = compute(&fixture(), &cfg());
    // Response TTFT ms (first_token − intended): 101, 210, 50, 200.
    assert_close!(m.response_ttft.mean, 140.25);
    // Response E2EL ms (done − intended): 162, 300, 51, 280.
    assert_close!(m.response_e2el.mean, 198.25);
    // Queue ms, every dispatched request: 1, 10, 0, 10, 0 (rec 4), 20 (rec 5).
    assert_eq!(m.queue_time.count, 6);
    assert_close!(m.queue_time.mean, 41.0 / 6.0);
    // vLLM's client_queue_time: completed only.
    assert_eq!(m.client_queue_time.count, 4);
    assert_close!(m.client_queue_time.mean, 5.25);
    assert_eq!(m.summary(MetricName::E2elIncludingClientQueue), &m.response_e2el);
}

#[test]
fn a_run_shorter_than_the_peak_window_has_peak_throughput_equal_to_its_mean() {
    let m = compute(&fixture(), &cfg());
    // The run (0.509 s) is shorter than the 1-s window: the window holds every output token, and
    // the peak rate is that over the run's span (the mean), not 16 tokens per full second.
    assert_close!(m.max_output_tokens_per_s, 16.0 / 0.509);
    assert_close!(m.max_output_tokens_per_s, m.output_throughput);
    // [1k,162k) [60k,350k) [100k,151k) overlap 3 deep; failed rec 4 makes 3 again at 300k.
    assert_eq!(m.max_concurrent_requests, 3);
}

#[test]
fn peak_tokens_use_event_weights_and_a_sliding_window() {
    let a = RecordBuilder::new(0).prompt_tokens(1).sent_at(0).stream(800_000, &[300_000, 300_000]);
    let a = a.event_tokens(&[1, 4, 4]).done_at(1_400_000).usage(9).completed();
    let mut b = a.clone();
    b.index = 1;
    b.first_token_us = Some(1_850_000);
    b.token_events.tokens.clear();
    b.token_events.gaps_us = vec![100_000];
    b.last_token_us = Some(1_950_000);
    b.done_us = Some(1_960_000);
    b.completion_tokens = Some(10); // 2 events (1.85 s, 1.95 s), 5 tokens each
    let m = compute(&[a, b], &cfg());
    // Window [1.1 s, 2.1 s): 4 + 4 (rec a) + 5 + 5 (rec b) = 18; 1-s buckets would see 9 + 10.
    assert_close!(m.max_output_tokens_per_s, 18.0);
}

#[test]
fn goodput_counts_only_requests_meeting_every_slo() {
    let recs = fixture();
    let mut c = cfg();
    c.goodput = vec![
        Slo { metric: MetricName::Ttft, threshold_ms: 150.0 },
        Slo { metric: MetricName::Tpot, threshold_ms: 18.0 },
    ];
    let m = compute(&recs, &c);
    // Only rec 2 (TTFT 50, one token → TPOT 0) meets both.
    assert_eq!(m.good_requests, Some(1));
    assert_close!(m.request_goodput.unwrap(), 1.0 / 0.509);
    c.goodput = vec![Slo { metric: MetricName::E2el, threshold_ms: 270.0 }];
    // 161, 51 and 270 (equal counts as met) are good; 290 is not.
    assert_eq!(compute(&recs, &c).good_requests, Some(3));
}

#[test]
fn empty_and_degenerate_inputs_do_not_panic() {
    let m = compute::<[RequestRecord]>(&[], &cfg());
    assert_eq!((m.sent, m.duration_s, m.request_throughput), (0, 0.0, 0.0));
    assert_eq!(m.ttft.mean, 0.0);
    // Inverted timestamps clamp to 0 instead of underflowing.
    let r = RecordBuilder::new(0).intended_at(500).prompt_tokens(1).sent_at(400).stream(300, &[]);
    let r = r.done_at(350).completed();
    let m = compute(&[r], &cfg());
    assert_eq!(m.ttft.mean, 0.0);
    assert_eq!(m.response_e2el.mean, 0.0);
    // A failed record without an error kind is counted as unclassified.
    let f = RecordBuilder::new(1).prompt_tokens(1).sent_at(0).with(|r| r.outcome = Outcome::Failed).build();
    assert_eq!(compute(&[f], &cfg()).failures_unclassified, 1);
}

#[test]
fn metric_configs_with_bad_percentiles_or_slos_are_refused_and_names_parse() {
    assert!(MetricsConfig::default().validate().is_ok());
    let mut c = MetricsConfig { percentiles: vec![101.0], ..MetricsConfig::default() };
    assert!(c.validate().is_err());
    c.percentiles = vec![99.9];
    c.goodput = vec![Slo { metric: MetricName::Itl, threshold_ms: 1.0 }];
    assert!(c.validate().is_err());
    c.goodput = vec![Slo { metric: MetricName::Ttft, threshold_ms: -1.0 }];
    assert!(c.validate().is_err());
    assert_eq!(MetricName::parse(" e2el"), Some(MetricName::E2el));
    assert_eq!(MetricName::parse("client_queue_time"), Some(MetricName::ClientQueueTime));
    assert_eq!(MetricName::parse("nope"), None);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn arb_record() -> impl Strategy<Value = RequestRecord> {
        (
            0u8..3,
            0u64..2_000_000,
            prop::option::of(0u64..50_000),
            prop::option::of(0u64..500_000),
            prop::collection::vec(0u32..100_000, 0..6),
            prop::option::of(0u32..20),
            any::<bool>(),
        )
            .prop_map(|(outcome, intended, wait, ttft, gaps, usage, per_event)| {
                let mut b = RecordBuilder::new(0).intended_at(intended).prompt_tokens(3);
                if let Some(w) = wait {
                    b = b.sent_at(intended + w);
                }
                if let (Some(w), Some(t)) = (wait, ttft) {
                    let d = intended + w;
                    let done = d + t + gaps.iter().map(|&g| u64::from(g)).sum::<u64>() + 5;
                    b = b.stream(d + t, &gaps).done_at(done);
                    if per_event {
                        let tokens: Vec<u32> = (0..=gaps.len() as u32).map(|i| i % 3).collect();
                        b = b.event_tokens(&tokens);
                    }
                }
                let mut r = b.build();
                r.completion_tokens = usage;
                r.outcome = match outcome {
                    0 => Outcome::Completed,
                    1 => Outcome::Failed,
                    _ => Outcome::Cancelled,
                };
                r
            })
    }

    proptest! {
        #[test]
        fn counts_add_up_and_token_view_sums_to_span(recs in prop::collection::vec(arb_record(), 0..12)) {
            let m = compute(&recs, &cfg());
            prop_assert_eq!(m.sent + m.never_sent, recs.len() as u64);
            prop_assert_eq!(m.completed + m.failed + m.cancelled, m.sent + m.never_sent);
            prop_assert!(m.duration_s >= 0.0);
            prop_assert!(m.max_concurrent_requests <= m.sent);
            for r in &recs {
                let mut v = Vec::new();
                push_token_view_itls(r, &mut v);
                let span: u64 = r.token_events.gaps_us.iter().map(|&g| u64::from(g)).sum();
                let sum: f64 = v.iter().map(|&(x, c)| x * c as f64).sum();
                // Every gap is attributed unless no later event carries a token.
                prop_assert!(sum <= span as f64 * (1.0 + 1e-12) + 1e-6);
                prop_assert!(v.iter().all(|&(x, _)| x >= 0.0));
            }
        }

        /// The compact per-token samples (`u32` gaps, the token view merged from plain gaps and
        /// weighted pairs, or read from the ITLs when they are the same) give the bits of the
        /// plain definition: every value collected as `f64`, then summarized.
        #[test]
        fn itl_summaries_equal_the_summaries_of_every_value_collected(
            recs in prop::collection::vec(arb_record(), 0..12),
        ) {
            let m = compute(&recs, &cfg());
            let done: Vec<&RequestRecord> = recs.iter().filter(|r| r.outcome == Outcome::Completed).collect();
            let itl: Vec<f64> = done
                .iter()
                .filter(|r| r.first_token_us.is_some())
                .flat_map(|r| r.token_events.gaps_us.iter().map(|&g| f64::from(g)))
                .collect();
            let mut tv = Vec::new();
            done.iter().for_each(|r| push_token_view_itls(r, &mut tv));
            let pct = cfg().percentiles;
            prop_assert_eq!(&m.itl, &Summary::of(&itl, &pct).scaled(1.0 / 1000.0));
            prop_assert_eq!(&m.itl_token_view, &crate::stats::summary_weighted(&tv, &pct).scaled(1.0 / 1000.0));
        }

        /// A run's records are held as bytes (`CompactRecords`) and walked one decoded record
        /// at a time: every metric, group and steady-state figure has the bits it has over the
        /// records themselves.
        #[test]
        fn metrics_of_compact_records_are_the_metrics_of_the_records(
            recs in prop::collection::vec(arb_record(), 0..12),
            stages in prop::collection::vec(prop::option::of(0u32..3), 12),
        ) {
            let recs: Vec<RequestRecord> = recs.into_iter().zip(stages).enumerate().map(|(i, (mut r, s))| {
                r.index = i as u64;
                r.stage = s;
                r
            }).collect();
            let compact = crate::CompactRecords::from(recs.as_slice());
            prop_assert_eq!(format!("{:?}", compute(&compact, &cfg())), format!("{:?}", compute(&recs, &cfg())));
            prop_assert_eq!(
                format!("{:?}", super::groups::by_stage(&compact, &cfg())),
                format!("{:?}", super::groups::by_stage(&recs, &cfg()))
            );
            for mode in [LoadMode::OpenLoop, LoadMode::ClosedLoop { target_concurrency: 2 }] {
                let ss = SteadyStateConfig {
                    mode,
                    threshold: 0.5,
                    min_window_s: None,
                    percentiles: vec![50.0, 99.0],
                    selected: vec![MetricName::Ttft, MetricName::Itl, MetricName::Tpot, MetricName::E2el],
                    pooling: false,
                };
                prop_assert_eq!(
                    format!("{:?}", steady_state(&compact, &ss)),
                    format!("{:?}", steady_state(&recs, &ss))
                );
            }
        }

        /// Issue 15.3: a peak is never below the mean, whatever the run's length (sub-second
        /// runs, window edges); peak concurrency is never below the mean number in flight.
        #[test]
        fn peak_output_rate_and_peak_concurrency_are_never_below_their_means(
            recs in prop::collection::vec(arb_record(), 0..12),
            stretch in 1u64..8,
        ) {
            let recs: Vec<RequestRecord> = recs.into_iter().map(|mut r| {
                // Stretch some runs past the 1-s window.
                r.intended_us *= stretch;
                r.dispatched_us = r.dispatched_us.map(|d| d * stretch);
                r.first_token_us = r.first_token_us.map(|d| d * stretch);
                r.token_events.gaps_us.iter_mut().for_each(|g| *g = g.saturating_mul(stretch as u32));
                r.last_token_us = r.first_token_us
                    .map(|f| f + r.token_events.gaps_us.iter().map(|&g| u64::from(g)).sum::<u64>());
                r.done_us = r.last_token_us.map(|l| l + 5);
                r.headers_us = r.dispatched_us;
                r.first_event_us = r.first_token_us;
                r
            }).collect();
            let m = compute(&recs, &cfg());
            prop_assert!(m.max_output_tokens_per_s >= m.output_throughput,
                "peak {} < mean {}", m.max_output_tokens_per_s, m.output_throughput);
            let busy_s: f64 = recs.iter().filter_map(|r| {
                let t = RequestTimes::of(r);
                Some(t.last_known_us?.saturating_sub(r.dispatched_us?) as f64 / 1e6)
            }).sum();
            if m.duration_s > 0.0 {
                prop_assert!(m.max_concurrent_requests as f64 >= busy_s / m.duration_s - 1e-9);
            }
        }
    }
}

/// RTFx = Σ audio seconds of completed requests / duration (first dispatch → last end): records
/// 0 and 1 carry 2.0 s and 3.09 s of audio, failed record 4 carries 10 s (not counted); the
/// fixture's duration is 0.509 s, so RTFx = 5.09 / 0.509 = 10.0. Without audio it is `None`.
#[test]
fn rtfx_is_audio_seconds_of_completed_requests_per_second_of_duration() {
    let mut recs = fixture();
    assert_eq!(compute(&recs, &cfg()).rtfx, None, "no audio: no RTFx (never 0)");
    recs[0].audio_seconds = Some(2.0);
    recs[1].audio_seconds = Some(3.09);
    recs[4].audio_seconds = Some(10.0);
    let m = compute(&recs, &cfg());
    assert_close!(m.duration_s, 0.509);
    assert_close!(m.rtfx.unwrap(), 10.0);
    // Only a failed request with audio: nothing completed carried audio.
    let mut recs = fixture();
    recs[4].audio_seconds = Some(10.0);
    assert_eq!(compute(&recs, &cfg()).rtfx, None);
}
