//! Every completed request's token events in one time order, merged on the fly: the peak output
//! rate's sliding window needs the run's events sorted, and holding them (16 bytes per token,
//! twice while sorting) was most of the end-of-run memory of a long run (docs/performance.md,
//! "Memory at the end of a run"). Each request's events are already in time order (its gaps
//! are non-negative), so a k-way merge over the requests gives the same order from one cursor
//! per request.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::peaks::peak_rate_sorted;
use super::request::EventWeights;
use crate::record::RequestRecord;

/// The peak output token rate of the requests in `timelines` (docs/metrics.md, "Peak output
/// token throughput"): [`super::peak_rate`] over their token events, without collecting them.
pub(crate) fn peak_output_rate(timelines: &EventTimelines, window_us: u64, span_us: u64) -> f64 {
    // Summed in record order, event order, as the collected events were.
    let total = (0..timelines.len())
        .map(|i| timelines.weights(i))
        .fold(0.0, |a, w| (0..w.events).fold(a, |a, i| a + w.at(i)));
    peak_rate_sorted(total, || MergedEvents::new(timelines), window_us, span_us)
}

/// The token events of the completed requests, flattened: per request its first token time and
/// weight rule (32 bytes), its gaps and per-event token counts in two shared lists. What the
/// peak rate's merge walks, held without the records (a run's records are decoded one at a
/// time, `compact_records`).
#[derive(Debug, Default)]
pub(crate) struct EventTimelines {
    requests: Vec<Timeline>,
    gaps_us: Vec<u32>,
    tokens: Vec<u32>,
}

#[derive(Debug, Clone, Copy)]
struct Timeline {
    first_us: u64,
    /// `T / E` when the events carry no token counts of their own.
    spread: f64,
    /// Where the request's gaps and per-event token counts (none when spread) end.
    gaps_end: usize,
    tokens_end: usize,
}

impl EventTimelines {
    /// Room for `n` requests.
    pub(crate) fn with_capacity(n: usize) -> Self {
        EventTimelines { requests: Vec::with_capacity(n), ..EventTimelines::default() }
    }

    /// Adds `r`'s events (nothing without a first token).
    pub(crate) fn push(&mut self, r: &RequestRecord) {
        let (Some(first_us), Some(w)) = (r.first_token_us, EventWeights::of(r)) else { return };
        let per_event = w.per_event_counts();
        self.gaps_us.extend_from_slice(&r.token_events.gaps_us);
        self.tokens.extend_from_slice(per_event.unwrap_or_default());
        let spread = if per_event.is_some() { 0.0 } else { w.at(0) };
        self.requests.push(Timeline {
            first_us,
            spread,
            gaps_end: self.gaps_us.len(),
            tokens_end: self.tokens.len(),
        });
    }

    fn len(&self) -> usize {
        self.requests.len()
    }

    /// Request `i`'s gaps.
    fn gaps(&self, i: usize) -> &[u32] {
        let start = i.checked_sub(1).map_or(0, |p| self.requests[p].gaps_end);
        &self.gaps_us[start..self.requests[i].gaps_end]
    }

    /// Request `i`'s event weights, by `EventWeights`' rule.
    fn weights(&self, i: usize) -> EventWeights<'_> {
        let t = self.requests[i];
        let start = i.checked_sub(1).map_or(0, |p| self.requests[p].tokens_end);
        let events = self.gaps(i).len() + 1;
        match t.tokens_end > start {
            true => EventWeights::per_event(&self.tokens[start..t.tokens_end]),
            false => EventWeights::spread(t.spread, events),
        }
    }
}

/// The events of many requests as `(time_us, weight)` in time order, then weight (ties across
/// requests ordered as a sort would; within one request, by position, which only reorders
/// equal-time events of one request — integer token counts or equal `T/E` shares, whose sums
/// do not depend on the order).
///
/// Only the requests whose events have begun and not ended are in the heap: the others wait in
/// `by_first`, sorted by their first event's key, and join when that event is the next one. So
/// the merge holds about the run's concurrency in the heap, plus 8 bytes a request for the
/// order, instead of a heap entry and a cursor for every request (40 bytes each; at a million
/// requests, most of the end of a run's peak memory).
pub(crate) struct MergedEvents<'a> {
    timelines: &'a EventTimelines,
    /// Every request, by its first event's key.
    by_first: Vec<usize>,
    /// How many of `by_first` have joined the heap.
    joined: usize,
    /// One entry per request in progress: its next event's key and index.
    heap: BinaryHeap<Reverse<(EventKey, usize)>>,
}

/// An event's place in the merge: (time, weight's bits, request); weights are never negative,
/// so their bits order as they do.
type EventKey = (u64, u64, usize);

impl<'a> MergedEvents<'a> {
    pub(crate) fn new(timelines: &'a EventTimelines) -> MergedEvents<'a> {
        let mut by_first: Vec<usize> = (0..timelines.len()).collect();
        by_first.sort_unstable_by_key(|&i| first_key(timelines, i));
        MergedEvents { timelines, by_first, joined: 0, heap: BinaryHeap::new() }
    }
}

/// The key of request `i`'s event `k`, its time given.
fn event_key(timelines: &EventTimelines, i: usize, k: usize, time: u64) -> EventKey {
    (time, timelines.weights(i).at(k).to_bits(), i)
}

/// The key of request `i`'s first event.
fn first_key(timelines: &EventTimelines, i: usize) -> EventKey {
    event_key(timelines, i, 0, timelines.requests[i].first_us)
}

impl Iterator for MergedEvents<'_> {
    type Item = (u64, f64);

    fn next(&mut self) -> Option<(u64, f64)> {
        let waiting = self.by_first.get(self.joined).map(|&i| first_key(self.timelines, i));
        let in_progress = self.heap.peek().map(|Reverse((key, _))| *key);
        // The smaller of the next waiting request's first event and the heap's next event.
        let ((time, bits, i), k) = match (waiting, in_progress) {
            (Some(w), Some(p)) if p < w => self.heap.pop().map(|Reverse(e)| e)?,
            (Some(w), _) => {
                self.joined += 1;
                (w, 0)
            }
            (None, Some(_)) => self.heap.pop().map(|Reverse(e)| e)?,
            (None, None) => return None,
        };
        if let Some(&gap) = self.timelines.gaps(i).get(k) {
            let next = event_key(self.timelines, i, k + 1, time.saturating_add(u64::from(gap)));
            self.heap.push(Reverse((next, k + 1)));
        }
        Some((time, f64::from_bits(bits)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{peak_rate, token_event_times, token_event_weights, WINDOW_US};
    use crate::record::Outcome;
    use proptest::prelude::*;

    fn record(first: u64, gaps: Vec<u32>, tokens: Vec<u32>, usage: Option<u32>) -> RequestRecord {
        let mut r = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
        r.outcome = Outcome::Completed;
        r.first_token_us = Some(first);
        r.token_event_count = gaps.len() as u32 + 1;
        r.token_events.gaps_us = gaps;
        r.token_events.tokens = tokens;
        r.completion_tokens = usage;
        r
    }

    fn timelines(rs: &[RequestRecord]) -> EventTimelines {
        let mut t = EventTimelines::with_capacity(rs.len());
        rs.iter().for_each(|r| t.push(r));
        t
    }

    fn collected(rs: &[RequestRecord]) -> Vec<(u64, f64)> {
        rs.iter().flat_map(|r| token_event_times(r).into_iter().zip(token_event_weights(r))).collect()
    }

    #[test]
    fn merged_events_are_the_collected_events_sorted() {
        // Two requests interleaved, one with per-event tokens, one spread (5 tokens over 2 events).
        let rs = [record(100, vec![50, 50], vec![1, 3, 0], None), record(120, vec![30], vec![], Some(5))];
        let got: Vec<(u64, f64)> = MergedEvents::new(&timelines(&rs)).collect();
        assert_eq!(got, vec![(100, 1.0), (120, 2.5), (150, 2.5), (150, 3.0), (200, 0.0)]);
    }

    proptest! {
        #[test]
        fn peak_rate_from_the_merge_equals_the_sorted_collection(
            reqs in prop::collection::vec(
                (0u64..3_000_000, prop::collection::vec(0u32..400_000, 0..12), prop::option::of(1u32..40), any::<bool>()),
                0..25,
            ),
            span in 0u64..5_000_000,
        ) {
            let rs: Vec<RequestRecord> = reqs
                .into_iter()
                .map(|(first, gaps, usage, per_event)| {
                    let tokens = if per_event { gaps.iter().map(|g| g % 4).chain([1]).collect() } else { vec![] };
                    record(first, gaps, tokens, usage)
                })
                .collect();
            let mut all = collected(&rs);
            let want = peak_rate(&mut all, WINDOW_US, span);
            let t = timelines(&rs);
            prop_assert_eq!(peak_output_rate(&t, WINDOW_US, span).to_bits(), want.to_bits());
            let merged: Vec<(u64, f64)> = MergedEvents::new(&t).collect();
            prop_assert_eq!(merged.len(), all.len());
            prop_assert!(merged.windows(2).all(|w| w[0].0 <= w[1].0));
        }
    }
}
