//! Time to first visible output (TTFO) and the split of token events into reasoning and visible
//! content. Reasoning and tool-call deltas count as generated tokens for TTFT/ITL; TTFO is when
//! the first *visible* output text arrived (`first_content − dispatched`). See docs/metrics.md.

use crate::compact_records::RecordSet;
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;

use crate::record::{Outcome, RequestRecord};
use crate::stats::Summary;

/// TTFO statistics and event counts over the completed requests of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputSplit {
    /// TTFO of completed requests that produced visible content, ms.
    pub ttfo: Summary,
    /// Completed requests with reasoning events but no visible content (no TTFO). Records
    /// without reasoning events are not counted (records written before the split existed
    /// carry no content counts either).
    pub requests_without_content: u64,
    /// Σ reasoning token events of completed requests.
    pub reasoning_events: u64,
    /// Σ visible-content token events of completed requests.
    pub content_events: u64,
}

/// TTFO of one record, µs: `first_content − dispatched`.
pub fn ttfo_us(r: &RequestRecord) -> Option<u64> {
    Some(r.first_content_us?.saturating_sub(r.dispatched_us?))
}

/// Computes the split over `records` (completed requests only) with `percentiles`.
pub fn output_split<S: RecordSet + ?Sized>(records: &S, percentiles: &[f64]) -> OutputSplit {
    let mut values = Vec::new();
    let mut out = OutputSplit::default();
    for r in records.records() {
        let r = r.borrow();
        if r.outcome != Outcome::Completed {
            continue;
        }
        out.reasoning_events += u64::from(r.reasoning_events);
        out.content_events += u64::from(r.content_events);
        match ttfo_us(r) {
            Some(v) => values.push(v as f64),
            None if r.reasoning_events > 0 => out.requests_without_content += 1,
            None => {}
        }
    }
    out.ttfo = Summary::of(&values, percentiles).scaled(1.0 / 1000.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ErrorKind;

    fn rec(
        dispatched: u64,
        first_token: u64,
        first_content: Option<u64>,
        reasoning: u32,
        content: u32,
    ) -> RequestRecord {
        let mut r = RequestRecord::scheduled(0, "r".into(), 0, 10, 10);
        r.outcome = Outcome::Completed;
        r.dispatched_us = Some(dispatched);
        r.first_token_us = Some(first_token);
        r.first_content_us = first_content;
        r.reasoning_events = reasoning;
        r.content_events = content;
        r.token_event_count = reasoning + content;
        r
    }

    #[test]
    fn ttfo_on_hand_computed_records() {
        // TTFO (ms): 40, 10, 100; one reasoning-only request; one failed request ignored.
        let mut failed = rec(0, 5_000, Some(7_000), 9, 9);
        failed.fail(ErrorKind::Timeout, "t");
        let records = vec![
            rec(1_000, 11_000, Some(41_000), 3, 2), // reasoning first: TTFT 10 ms, TTFO 40 ms
            rec(0, 10_000, Some(10_000), 0, 4),     // plain content: TTFO = TTFT = 10 ms
            rec(20_000, 30_000, Some(120_000), 8, 1), // TTFO 100 ms
            rec(0, 10_000, None, 5, 0),             // reasoning only: no TTFO
            failed,
        ];
        let s = output_split(&records, &[50.0, 99.0]);
        assert_eq!(s.ttfo.count, 3);
        assert!((s.ttfo.mean - 50.0).abs() < 1e-9);
        assert!((s.ttfo.median - 40.0).abs() < 1e-9);
        // p99 over [10, 40, 100]: index 0.99 * 2 = 1.98 → 40 + 0.98 * 60 = 98.8.
        assert!((s.ttfo.percentiles[1].1 - 98.8).abs() < 1e-9);
        assert_eq!(s.requests_without_content, 1);
        assert_eq!(s.reasoning_events, 3 + 8 + 5);
        assert_eq!(s.content_events, 2 + 4 + 1);
        assert_eq!(ttfo_us(&records[0]), Some(40_000));
    }
}
