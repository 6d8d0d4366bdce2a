use super::*;
use crate::record::{CancelReason, ErrorKind, FailureCause, HttpPhases, Outcome, RequestError, TokenEvents};
use crate::UnreachableReason;
use proptest::prelude::*;

/// A record with every optional field set, most to values far from the common ones.
fn everything_set() -> RequestRecord {
    let mut r = RequestRecord::scheduled(u64::MAX, "bench-ü-7".into(), 5_000_000, u32::MAX, 77);
    r.server_request_id = Some("chatcmpl-123".into());
    r.conversation = Some(u64::MAX - 1);
    r.turn = Some(3);
    r.agent_depth = Some(1);
    r.agent_branch = Some(u32::MAX);
    r.agent_tool = Some(false);
    r.lora = Some("adapter-a".into());
    r.stage = Some(2);
    r.outcome = Outcome::Failed;
    r.error = Some(RequestError {
        kind: ErrorKind::RunawayStream,
        message: "[SB405] went on".into(),
        cause: Some(FailureCause::Unreachable(UnreachableReason::NoRoute)),
    });
    r.cancelled_by = Some(CancelReason::DependencyFailed);
    r.http_status = Some(503);
    r.gate_us = Some(0); // before the intended time: a negative delta
    r.prefill_wait_us = Some(u64::MAX);
    r.cancel_after_us = Some(9);
    r.dispatched_us = Some(u64::MAX);
    r.headers_us = Some(5_000_001);
    r.first_event_us = Some(5_000_002);
    r.first_token_us = Some(5_000_003);
    r.first_content_us = Some(5_000_004);
    r.last_token_us = Some(7_000_000);
    r.done_us = Some(7_000_001);
    r.token_events = TokenEvents { gaps_us: vec![0, 1, u32::MAX, 10_000], tokens: vec![1, 2, 0, 4, 5] };
    r.server_prompt_tokens = Some(0);
    r.cached_prompt_tokens = Some(16);
    r.completion_tokens = Some(5);
    r.audio_seconds = Some(-0.0);
    r.token_event_count = 5;
    r.reasoning_events = 2;
    r.content_events = 3;
    r.output_chars = u64::MAX;
    r.retokenized_tokens = Some(6);
    r.finish_reason = Some("length".into());
    r.attempts = 2;
    r.reconnects = 1;
    r.resent = true;
    r.generated_text = Some("héllo\n".into());
    r.phases = Some(HttpPhases {
        reused: true,
        dns_us: Some(1),
        connect_us: None,
        tls_us: Some(u32::MAX),
        written_us: Some(0),
        first_byte_us: None,
        last_byte_us: Some(12),
    });
    r.server_queue_time_ms = Some(1.5);
    r.server_ttft_ms = Some(f64::MAX);
    r
}

#[test]
fn a_record_with_every_field_set_round_trips() {
    let r = everything_set();
    let c = CompactRecords::from(vec![r.clone(), RequestRecord::scheduled(0, String::new(), 0, 0, 0)]);
    assert_eq!(c.get(0), r);
    assert_eq!(c.get(1), RequestRecord::scheduled(0, String::new(), 0, 0, 0));
    // The same, serialized: nothing the records file writes is lost either.
    assert_eq!(serde_json::to_string(&c.get(0)).unwrap(), serde_json::to_string(&r).unwrap());
}

#[test]
fn a_server_id_equal_to_ours_is_stored_once_and_comes_back() {
    let mut r = RequestRecord::scheduled(1, "bench-abc-1".into(), 0, 1, 1);
    let alone = CompactRecords::from(vec![r.clone()]).heap_bytes();
    r.server_request_id = Some("bench-abc-1".into());
    let c = CompactRecords::from(vec![r.clone()]);
    assert_eq!(c.get(0), r);
    assert_eq!(
        c.bytes.len(),
        CompactRecords::from(vec![RequestRecord::scheduled(1, "bench-abc-1".into(), 0, 1, 1)]).bytes.len()
    );
    assert!(c.heap_bytes() <= alone + 8);
}

/// Pins the size the memory figures of docs/performance.md rest on: a completed one-token
/// request as the simulator answers it: 56 bytes (a `RequestRecord` is 568 plus its
/// strings).
#[test]
fn a_short_completed_request_takes_at_most_sixty_bytes() {
    let mut r = RequestRecord::scheduled(123_456, "bench-a3bc8c99-123456".into(), 150_000_000, 700, 1);
    r.server_request_id = Some(r.request_id.clone());
    r.outcome = Outcome::Completed;
    r.http_status = Some(200);
    r.gate_us = Some(150_000_990);
    r.dispatched_us = Some(150_001_275);
    r.headers_us = Some(150_002_513);
    for t in [&mut r.first_event_us, &mut r.first_token_us, &mut r.first_content_us, &mut r.last_token_us] {
        *t = Some(150_004_129);
    }
    r.done_us = Some(150_004_130);
    r.server_prompt_tokens = Some(700);
    r.completion_tokens = Some(1);
    r.token_event_count = 1;
    r.content_events = 1;
    r.output_chars = 3;
    r.finish_reason = Some("length".into());
    r.attempts = 1;
    r.phases = Some(HttpPhases {
        reused: true,
        written_us: Some(75),
        first_byte_us: Some(1_238),
        last_byte_us: Some(2_854),
        ..HttpPhases::default()
    });
    let c = CompactRecords::from(vec![r.clone()]);
    assert_eq!(c.get(0), r);
    assert!(c.bytes.len() <= 60, "{} bytes", c.bytes.len());
}

/// Pins the run's request ids (`<prefix><index>`) being rebuilt from the index, and every other
/// id (another prefix, a padded or foreign index, the first record's own) being kept as it was.
#[test]
fn request_ids_of_the_prefix_and_index_are_rebuilt_and_others_kept() {
    let ids = ["bench-x-7", "bench-x-8", "bench-x-08", "other-9", "bench-x-", "bench-x-12", "", "3"];
    let recs: Vec<RequestRecord> = ids
        .iter()
        .enumerate()
        .map(|(k, id)| RequestRecord::scheduled([7, 8, 8, 9, 10, 11, 0, 3][k], (*id).to_owned(), 0, 1, 1))
        .collect();
    let c = CompactRecords::from(recs.as_slice());
    assert_eq!(c.id_prefix.as_deref(), Some("bench-x-"));
    assert_eq!(c.to_vec(), recs);
    let plain = CompactRecords::from(vec![RequestRecord::scheduled(8, "bench-x-8".into(), 0, 1, 1)]);
    let one_more = CompactRecords::from(vec![
        RequestRecord::scheduled(7, "bench-x-7".into(), 0, 1, 1),
        RequestRecord::scheduled(8, "bench-x-8".into(), 0, 1, 1),
    ]);
    // No id costs a byte of its own (the first one's prefix is learnt from it): both records
    // are as long as one, and shorter than the id alone would make them.
    assert_eq!(one_more.bytes.len(), 2 * plain.bytes.len());
    let foreign = CompactRecords::from(vec![RequestRecord::scheduled(8, "x-8-y".into(), 0, 1, 1)]);
    assert_eq!(foreign.id_prefix.as_deref(), Some(""));
    assert_eq!(foreign.get(0).request_id, "x-8-y");
}

#[test]
fn sorting_by_index_orders_the_records_and_the_set_walks_them_in_order() {
    let recs: Vec<RequestRecord> = [5u64, 0, 3, 1, 4, 2]
        .iter()
        .map(|&i| RequestRecord::scheduled(i, format!("r{i}"), i * 7, 1, 1))
        .collect();
    let mut c = CompactRecords::from(recs.clone());
    c.sort_by_index();
    let mut sorted = recs.clone();
    sorted.sort_by_key(|r| r.index);
    assert_eq!(c.to_vec(), sorted);
    assert_eq!(c.records().map(|r| r.index).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(c.record_count(), 6);
    let odd = Filtered::new(&c, |r: &RequestRecord| r.index % 2 == 1);
    assert_eq!(odd.records().map(|r| r.index).collect::<Vec<_>>(), vec![1, 3, 5]);
    assert_eq!(odd.record_count(), 3);
    let from_slice = Filtered::new(sorted.as_slice(), |r: &RequestRecord| r.index < 2);
    assert_eq!(from_slice.records().map(|r| r.request_id.clone()).collect::<Vec<_>>(), ["r0", "r1"]);
}

/// A group is selected once and walked alone: a run's compact records copy the group's bytes
/// (ids still rebuilt from the shared prefix), a slice gives references, a filtered view
/// selects within its own records; all in the set's order.
#[test]
fn a_selection_holds_the_kept_records_in_order_whatever_the_set() {
    let recs: Vec<RequestRecord> =
        (0..9u64).map(|i| RequestRecord::scheduled(i, format!("run-{i}"), i * 3, 1, 1)).collect();
    let odd = |r: &RequestRecord| r.index % 2 == 1;
    let want: Vec<RequestRecord> = recs.iter().filter(|r| odd(r)).cloned().collect();
    let walk = |s: &Selection<'_>| s.records().map(|r| r.into_owned()).collect::<Vec<_>>();
    let compact = CompactRecords::from(recs.as_slice());
    let from_compact = compact.select(&odd);
    assert!(matches!(from_compact, Selection::Compact(_)));
    assert_eq!((walk(&from_compact), from_compact.record_count()), (want.clone(), 4));
    let from_slice = recs.select(&odd);
    assert!(matches!(from_slice, Selection::Refs(_)));
    assert_eq!(walk(&from_slice), want);
    let low = Filtered::new(&compact, |r: &RequestRecord| r.index < 6);
    let both: Vec<u64> = walk(&low.select(&odd)).iter().map(|r| r.index).collect();
    assert_eq!(both, [1, 3, 5]);
    assert_eq!(walk(&from_compact.select(&|r| r.index > 4)).len(), 2);
}

fn arb_opt_u64() -> impl Strategy<Value = Option<u64>> {
    prop::option::of(prop_oneof![any::<u64>(), 0u64..10_000_000])
}

fn arb_opt_u32() -> impl Strategy<Value = Option<u32>> {
    prop::option::of(any::<u32>())
}

fn arb_opt_text() -> impl Strategy<Value = Option<String>> {
    prop::option::of(".{0,12}")
}

prop_compose! {
    fn arb_times()(v in prop::collection::vec(arb_opt_u64(), 10), intended in any::<u64>()) -> (u64, Vec<Option<u64>>) {
        (intended, v)
    }
}

prop_compose! {
    fn arb_record()(
        (index, id, server_id, conversation, small) in (any::<u64>(), ".{0,24}", arb_opt_text(), arb_opt_u64(),
            prop::collection::vec(arb_opt_u32(), 9)),
        (tool, lora, outcome, error, cancel, status) in (prop::option::of(any::<bool>()), arb_opt_text(), 0u8..3,
            prop::option::of((0usize..11, ".{0,20}", prop::option::of(0u8..3))), prop::option::of(0usize..6),
            prop::option::of(any::<u16>())),
        (intended, times) in arb_times(),
        (gaps, tokens) in (prop::collection::vec(any::<u32>(), 0..8), prop::collection::vec(any::<u32>(), 0..8)),
        counts in prop::collection::vec(any::<u32>(), 7),
        (chars, audio, queue, finish, text, resent) in (any::<u64>(), prop::option::of(-1e9f64..1e9),
            prop::option::of(any::<f64>().prop_filter("comparable", |f| !f.is_nan())), arb_opt_text(), arb_opt_text(),
            any::<bool>()),
        phases in prop::option::of((any::<bool>(), prop::collection::vec(arb_opt_u32(), 6))),
    ) -> RequestRecord {
        let mut r = RequestRecord::scheduled(index, id, intended, counts[0], counts[1]);
        r.server_request_id = server_id;
        r.conversation = conversation;
        r.turn = small[0];
        r.agent_depth = small[1];
        r.agent_branch = small[2];
        r.agent_tool = tool;
        r.lora = lora;
        r.stage = small[3];
        r.outcome = [Outcome::Completed, Outcome::Failed, Outcome::Cancelled][usize::from(outcome)];
        r.error = error.map(|(k, message, cause)| RequestError {
            kind: ErrorKind::ALL[k],
            message,
            cause: cause.map(|c| [FailureCause::Proxy, FailureCause::NotHttp1,
                FailureCause::Unreachable(UnreachableReason::Refused)][usize::from(c)]),
        });
        r.cancelled_by = cancel.map(|c| CANCEL[c]);
        r.http_status = status;
        [r.gate_us, r.prefill_wait_us, r.cancel_after_us, r.dispatched_us, r.headers_us, r.first_event_us,
            r.first_token_us, r.first_content_us, r.last_token_us, r.done_us] =
            times.try_into().unwrap_or_default();
        r.token_events = TokenEvents { gaps_us: gaps, tokens };
        r.server_prompt_tokens = small[4];
        r.cached_prompt_tokens = small[5];
        r.completion_tokens = small[6];
        r.audio_seconds = audio;
        (r.token_event_count, r.reasoning_events, r.content_events) = (counts[2], counts[3], counts[4]);
        r.output_chars = chars;
        r.retokenized_tokens = small[7];
        r.finish_reason = finish;
        (r.attempts, r.reconnects) = (counts[5], counts[6]);
        r.resent = resent;
        r.generated_text = text;
        r.phases = phases.map(|(reused, p)| HttpPhases {
            reused, dns_us: p[0], connect_us: p[1], tls_us: p[2], written_us: p[3], first_byte_us: p[4],
            last_byte_us: p[5],
        });
        r.server_queue_time_ms = queue;
        r.server_ttft_ms = small[8].map(f64::from);
        r
    }
}

use super::codec::CANCEL_REASONS as CANCEL;

proptest! {
    #[test]
    fn any_record_round_trips(records in prop::collection::vec(arb_record(), 0..6)) {
        let c = CompactRecords::from(records.as_slice());
        prop_assert_eq!(c.len(), records.len());
        prop_assert_eq!(c.to_vec(), records);
    }
}
