//! A store that spills ([`CompactRecords::spilling_beyond`]) walks every record in index order,
//! whatever the arrival order, the run sizes and the record sizes: the records and every
//! selection are those of a store held in memory, sorted.

use super::*;
use crate::record::{Outcome, TokenEvents};
use proptest::prelude::*;

/// Record `i`: completed, with `gaps` token gaps and an id of the run's prefix.
fn record(i: u64, gaps: usize) -> RequestRecord {
    let mut r = RequestRecord::scheduled(i, format!("run-{i}"), i * 1_000, 16 + (i % 5) as u32, 4);
    r.outcome = Outcome::Completed;
    r.dispatched_us = Some(i * 1_000 + 3);
    r.first_token_us = Some(i * 1_000 + 400 + i % 17);
    r.token_events = TokenEvents { gaps_us: (0..gaps as u32).map(|g| 90 + g * 7).collect(), tokens: vec![] };
    r.last_token_us = Some(i * 1_000 + 900);
    r
}

fn spilled(arrival: &[RequestRecord], every: usize) -> CompactRecords {
    let mut c = CompactRecords::spilling_beyond(every);
    arrival.iter().for_each(|r| c.push(r));
    c
}

fn sorted(mut v: Vec<RequestRecord>) -> Vec<RequestRecord> {
    v.sort_by_key(|r| r.index);
    v
}

proptest! {
    #[test]
    fn a_spilled_store_walks_every_record_in_index_order(
        order in Just((0..300u64).collect::<Vec<_>>()).prop_shuffle(),
        every in 1usize..70,
        gaps in prop::collection::vec(0usize..40, 300),
        sort_first in any::<bool>(),
    ) {
        let arrival: Vec<RequestRecord> = order.iter().map(|&i| record(i, gaps[i as usize])).collect();
        let mut c = spilled(&arrival, every);
        if sort_first {
            c.sort_by_index();
        }
        let want = sorted(arrival.clone());
        prop_assert_eq!(c.len(), 300);
        prop_assert_eq!(c.spilled().0, 300 / every * every);
        prop_assert!(c.heap_bytes() < every * 8 + every * 400 + 64, "{} bytes in memory", c.heap_bytes());
        prop_assert_eq!(c.iter().len(), 300);
        prop_assert_eq!(c.to_vec(), want.clone());
        prop_assert_eq!(c.get(17), want[17].clone());
        let odd = |r: &RequestRecord| r.index % 2 == 1;
        let Selection::Compact(s) = c.select(&odd) else { panic!("a compact store selects compact records") };
        prop_assert_eq!(s.to_vec(), want.iter().filter(|r| odd(r)).cloned().collect::<Vec<_>>());
        prop_assert!(c.spill_read_failure().is_none() && c.spill_write_failure().is_none());
    }
}

#[test]
fn a_record_longer_than_the_read_window_comes_back_whole() {
    // 100,000 token gaps: about 200 KB, over three times the largest window.
    let arrival = [record(2, 3), record(0, 100_000), record(1, 5), record(3, 100_000)];
    let c = spilled(&arrival, 2);
    assert_eq!(c.spilled().0, 4);
    assert!(c.spilled().1 > 400_000, "{:?}", c.spilled());
    assert_eq!(c.to_vec(), sorted(arrival.to_vec()));
}

#[test]
fn a_store_below_its_cap_keeps_its_order_and_writes_nothing() {
    let arrival = [record(3, 1), record(1, 2), record(2, 0)];
    let c = spilled(&arrival, 4);
    assert_eq!(c.spilled(), (0, 0));
    assert_eq!(c.to_vec(), arrival.to_vec());
}

#[test]
fn a_spilled_file_that_cannot_be_read_back_is_reported_not_walked_short_silently() {
    let arrival: Vec<RequestRecord> = (0..40).rev().map(|i| record(i, 2)).collect();
    let c = spilled(&arrival, 10);
    assert_eq!(c.spilled().0, 40);
    c.spilled.as_ref().unwrap().truncate_file(100);
    let walked = c.iter().count();
    assert!(walked < 40, "{walked}");
    let failure = c.spill_read_failure().expect("the failed read is kept");
    assert!(failure.contains("reading spilled records back failed"), "{failure}");
}

#[test]
fn a_failed_read_of_a_selections_runs_reaches_the_store_it_was_selected_from() {
    let arrival: Vec<RequestRecord> = (0..60).rev().map(|i| record(i, 2)).collect();
    let c = spilled(&arrival, 10);
    // Every record kept: the selection spills too, into the same file.
    let Selection::Compact(s) = c.select(&|_| true) else { panic!("compact") };
    assert_eq!(s.spilled().0, 60);
    assert_eq!(s.to_vec(), sorted(arrival.clone()));
    assert!(c.spill_read_failure().is_none());
    s.spilled.as_ref().unwrap().truncate_file(0);
    assert!(s.iter().count() < 60);
    assert!(c.spill_read_failure().is_some(), "the store's owner sees the selection's failed read");
}
