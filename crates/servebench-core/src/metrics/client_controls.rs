//! What the client's own load controls did to the requests (docs/metrics.md, "Prefill wait"
//! and "Cancelled by design"): the time requests waited for a prefill slot
//! (`--max-prefill-concurrency`) and the requests cancelled by design
//! (`--request-cancellation-rate`).

use crate::compact_records::RecordSet;
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;

use crate::record::{CancelReason, Outcome};
use crate::stats::Summary;

/// The requests the workload chose for cancellation by design, by how they ended. `selected =
/// cancelled + completed + failed + other` (`other`: cancelled for another reason, e.g. an
/// interrupt, before the delay ran out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesignedCancellation {
    /// Records with `cancel_after_us`.
    pub selected: u64,
    /// Of those, cancelled by design (`cancelled_by = by_design`): still running at the delay.
    pub cancelled: u64,
    /// Of those, completed before the delay ran out.
    pub completed: u64,
    /// Of those, failed before the delay ran out.
    pub failed: u64,
}

impl DesignedCancellation {
    /// Tallies `records`; `None` when no request was chosen for cancellation.
    pub fn of<S: RecordSet + ?Sized>(records: &S) -> Option<Self> {
        let mut d = DesignedCancellation::default();
        for r in records.records() {
            let r = r.borrow();
            if r.cancel_after_us.is_none() {
                continue;
            }
            d.selected += 1;
            match r.outcome {
                Outcome::Completed => d.completed += 1,
                Outcome::Failed => d.failed += 1,
                Outcome::Cancelled if r.cancelled_by == Some(CancelReason::ByDesign) => d.cancelled += 1,
                Outcome::Cancelled => {}
            }
        }
        (d.selected > 0).then_some(d)
    }
}

/// `prefill_wait_us` of every request that got a prefill slot (any outcome: the wait happened
/// before the outcome was known), ms; `None` when no record carries one (no prefill cap).
pub fn prefill_wait_ms<S: RecordSet + ?Sized>(records: &S, percentiles: &[f64]) -> Option<Summary> {
    let waits: Vec<f64> =
        records.records().filter_map(|r| r.borrow().prefill_wait_us).map(|w| w as f64).collect();
    (!waits.is_empty()).then(|| Summary::of(&waits, percentiles).scaled(1.0 / 1000.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestRecord;

    fn rec(outcome: Outcome) -> RequestRecord {
        let mut r = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
        r.outcome = outcome;
        r
    }

    #[test]
    fn prefill_wait_is_the_summary_of_every_recorded_wait_in_ms() {
        // Waits 0, 1000, 3000, 8000 µs over all outcomes; one record without a wait is left out.
        let mut recs = Vec::new();
        for (w, o) in [
            (0, Outcome::Completed),
            (1000, Outcome::Failed),
            (3000, Outcome::Cancelled),
            (8000, Outcome::Completed),
        ] {
            let mut r = rec(o);
            r.prefill_wait_us = Some(w);
            recs.push(r);
        }
        recs.push(rec(Outcome::Completed));
        let s = prefill_wait_ms(&recs, &[50.0, 99.0]).expect("waits recorded");
        assert_eq!(s.count, 4);
        assert!((s.mean - 3.0).abs() < 1e-12, "(0 + 1 + 3 + 8) / 4 = 3 ms: {}", s.mean);
        assert!((s.median - 2.0).abs() < 1e-12, "midpoint of 1 and 3 ms: {}", s.median);
        // p99 by linear interpolation between the two largest: 3 + 0.97 × (8 − 3) = 7.85 ms.
        assert!((s.percentiles[1].1 - 7.85).abs() < 1e-9, "{:?}", s.percentiles);
    }

    #[test]
    fn prefill_wait_is_none_without_a_prefill_cap() {
        assert_eq!(prefill_wait_ms(&[rec(Outcome::Completed)], &[99.0]), None);
    }

    #[test]
    fn designed_cancellation_counts_the_chosen_requests_by_how_they_ended() {
        let chosen = |o: Outcome, by: Option<CancelReason>| {
            let mut r = rec(o);
            r.cancel_after_us = Some(500_000);
            r.cancelled_by = by;
            r
        };
        let recs = vec![
            chosen(Outcome::Cancelled, Some(CancelReason::ByDesign)),
            chosen(Outcome::Cancelled, Some(CancelReason::ByDesign)),
            chosen(Outcome::Completed, None),
            chosen(Outcome::Failed, None),
            chosen(Outcome::Cancelled, Some(CancelReason::Interrupt)),
            rec(Outcome::Completed),
            rec(Outcome::Cancelled),
        ];
        let d = DesignedCancellation::of(&recs).expect("some were chosen");
        assert_eq!(d, DesignedCancellation { selected: 5, cancelled: 2, completed: 1, failed: 1 });
        assert_eq!(DesignedCancellation::of(&recs[5..]), None);
    }
}
