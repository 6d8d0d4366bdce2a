//! Peak output token rate (exact sliding window) and peak concurrency (exact event sweep).

/// One second in µs: the width of the peak-rate window.
pub const WINDOW_US: u64 = 1_000_000;

/// The largest total weight landing in any half-open window `[s, s + window_us)`.
///
/// `events` are `(time_us, weight)` pairs in any order. The best window can always be moved right
/// until it starts at an event, so only windows starting at event times are examined, with two
/// pointers over the sorted events: O(n log n) for the sort, O(n) for the scan.
pub fn peak_window_sum(events: &mut [(u64, f64)], window_us: u64) -> f64 {
    sort_events(events);
    peak_window_sum_sorted(|| events.iter().copied(), window_us)
}

/// The order the window sums run in: time, then weight.
fn sort_events(events: &mut [(u64, f64)]) {
    events.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
}

/// [`peak_window_sum`] over events already in time order, streamed: `sorted` gives a fresh pass
/// each call (one pass for the windows' starts, one for their ends), so the events need not be
/// held at once (`event_merge`).
pub fn peak_window_sum_sorted<I>(sorted: impl Fn() -> I, window_us: u64) -> f64
where
    I: Iterator<Item = (u64, f64)>,
{
    let mut ends = sorted().peekable();
    let mut best = 0.0_f64;
    let mut sum = 0.0_f64;
    for (start, weight) in sorted() {
        let end = start.saturating_add(window_us);
        while let Some(&(t, w)) = ends.peek() {
            if t >= end {
                break;
            }
            sum += w;
            ends.next();
        }
        best = best.max(sum);
        sum -= weight;
    }
    best
}

/// Peak rate per second over a sliding window of `window_us`, never below the mean rate over the
/// run's `span_us` (docs/metrics.md, "Peak output token throughput").
///
/// - A run shorter than the window: the window holds every event, so the rate is the total over
///   the run's span (dividing by the full window would put the "peak" below the average).
/// - Otherwise the best window's sum per window, or the mean over the span if that is larger: with
///   discrete events a 1-s window can hold less than the average second (tokens at 0 s and
///   1.0 s of a 1.9-s run), and a peak below the average is not a peak.
/// - `span_us = 0` (nothing measured): the best window's sum per window.
pub fn peak_rate(events: &mut [(u64, f64)], window_us: u64, span_us: u64) -> f64 {
    // A fold from +0.0: an empty float `sum()` is -0.0, printed "-0.00".
    let total = events.iter().fold(0.0, |a, e| a + e.1);
    sort_events(events);
    peak_rate_sorted(total, || events.iter().copied(), window_us, span_us)
}

/// [`peak_rate`] over events already in time order (streamed as in [`peak_window_sum_sorted`]),
/// with `total` their summed weight.
pub fn peak_rate_sorted<I>(total: f64, sorted: impl Fn() -> I, window_us: u64, span_us: u64) -> f64
where
    I: Iterator<Item = (u64, f64)>,
{
    // Spread weights (T/E) are inexact in binary: round sums to 1e-6 tokens.
    let round = |x: f64| (x * 1e6).round() / 1e6;
    let total = round(total);
    let per_s = |x: f64, us: u64| x * 1e6 / us as f64;
    if span_us == 0 || window_us == 0 {
        return round(peak_window_sum_sorted(sorted, window_us));
    }
    if span_us < window_us {
        return per_s(total, span_us);
    }
    per_s(round(peak_window_sum_sorted(sorted, window_us)), window_us).max(per_s(total, span_us))
}

/// The largest number of half-open intervals `[start, end)` covering one instant.
///
/// Ends are processed before starts at equal times (a request ending at `t` and one starting at
/// `t` never overlap); empty intervals (`end <= start`) are ignored.
pub fn peak_overlap(intervals: &[(u64, u64)]) -> u64 {
    LevelChanges::of(intervals).peak()
}

/// The starts and ends of non-empty half-open intervals, collected one interval at a time (in
/// a walk that does other work too), in any order: only the two lists, sorted, make the
/// [`LevelChanges`].
pub(crate) struct IntervalEnds {
    starts: Vec<u64>,
    ends: Vec<u64>,
}

impl IntervalEnds {
    pub(crate) fn with_capacity(n: usize) -> IntervalEnds {
        IntervalEnds { starts: Vec::with_capacity(n), ends: Vec::with_capacity(n) }
    }

    /// Adds `[start, end)`; an empty one (`end <= start`) is left out.
    pub(crate) fn push(&mut self, (start, end): (u64, u64)) {
        if end > start {
            self.starts.push(start);
            self.ends.push(end);
        }
    }

    pub(crate) fn into_changes(self) -> LevelChanges {
        let (mut starts, mut ends) = (self.starts, self.ends);
        starts.sort_unstable();
        ends.sort_unstable();
        let (mut starts, mut ends) = (starts.into_iter(), ends.into_iter());
        let (next_start, next_end) = (starts.next(), ends.next());
        LevelChanges { starts, ends, next_start, next_end }
    }
}

/// The starts (`+1`) and ends (`−1`) of half-open intervals in time order, ends before starts
/// at equal times, empty intervals left out: the order of the `(time, ±1)` pairs sorted, from
/// two sorted lists of times (8 bytes an event instead of 16 for the pairs).
pub(crate) struct LevelChanges {
    starts: std::vec::IntoIter<u64>,
    ends: std::vec::IntoIter<u64>,
    next_start: Option<u64>,
    next_end: Option<u64>,
}

impl LevelChanges {
    pub(crate) fn of(intervals: &[(u64, u64)]) -> LevelChanges {
        let mut ends = IntervalEnds::with_capacity(intervals.len());
        intervals.iter().for_each(|&i| ends.push(i));
        ends.into_changes()
    }

    /// The highest level the changes reach from 0 (the peak overlap).
    pub(crate) fn peak(self) -> u64 {
        let (mut cur, mut peak) = (0i64, 0i64);
        for (_, d) in self {
            cur += i64::from(d);
            peak = peak.max(cur);
        }
        peak.max(0) as u64
    }
}

impl Iterator for LevelChanges {
    type Item = (u64, i8);

    fn next(&mut self) -> Option<(u64, i8)> {
        match (self.next_start, self.next_end) {
            (Some(s), Some(e)) if s < e => {
                self.next_start = self.starts.next();
                Some((s, 1))
            }
            (_, Some(e)) => {
                self.next_end = self.ends.next();
                Some((e, -1))
            }
            (Some(s), None) => {
                self.next_start = self.starts.next();
                Some((s, 1))
            }
            (None, None) => None,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.starts.len()
            + self.ends.len()
            + usize::from(self.next_start.is_some())
            + usize::from(self.next_end.is_some());
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sliding_window_is_not_bucket_aligned() {
        // 3 tokens at 0.9 s and 3 at 1.1 s: fixed 1-s buckets see 3, the sliding window 6.
        let mut ev = vec![(900_000, 1.0), (900_000, 1.0), (900_000, 1.0), (1_100_000, 3.0)];
        assert_eq!(peak_window_sum(&mut ev, WINDOW_US), 6.0);
        // Half-open: an event exactly 1 s later is outside the window.
        let mut ev = vec![(0, 2.0), (1_000_000, 5.0)];
        assert_eq!(peak_window_sum(&mut ev, WINDOW_US), 5.0);
        assert_eq!(peak_window_sum(&mut [], WINDOW_US), 0.0);
    }

    #[test]
    fn peak_rate_of_a_sub_second_run_is_its_mean_not_its_total_per_second() {
        // 20 tokens over a 0.25-s run: the 1-s window holds all 20, i.e. 80 tok/s over the run.
        let mut ev: Vec<(u64, f64)> = (0..20).map(|i| (i * 12_500, 1.0)).collect();
        assert_eq!(peak_rate(&mut ev, WINDOW_US, 250_000), 80.0);
    }

    #[test]
    fn peak_rate_is_never_below_the_mean_at_window_edges() {
        // Tokens at 0 s and 1.0 s of a 1.9-s run: each 1-s window holds 1 token, the mean is
        // 2/1.9 tok/s; the peak is the mean.
        let mut ev = vec![(0, 1.0), (1_000_000, 1.0)];
        assert_eq!(peak_rate(&mut ev, WINDOW_US, 1_900_000), 2.0 / 1.9);
        // A burst: 5 tokens within 0.1 s of a 3-s run → the window wins.
        let mut ev = vec![(0, 1.0), (10, 1.0), (20, 1.0), (30, 1.0), (40, 1.0), (2_500_000, 1.0)];
        assert_eq!(peak_rate(&mut ev, WINDOW_US, 3_000_000), 5.0);
        assert_eq!(peak_rate(&mut [], WINDOW_US, 0), 0.0);
        // No tokens in a 0.38-s run (every request failed): +0, never "-0.00".
        assert!(peak_rate(&mut [], WINDOW_US, 380_000).is_sign_positive());
    }

    #[test]
    fn overlap_is_half_open() {
        // Back-to-back requests never overlap (vllm#56653 counted 2 here).
        assert_eq!(peak_overlap(&[(0, 10), (10, 20)]), 1);
        assert_eq!(peak_overlap(&[(0, 10), (5, 20), (9, 11), (20, 30)]), 3);
        assert_eq!(peak_overlap(&[(5, 5)]), 0);
        assert_eq!(peak_overlap(&[]), 0);
    }

    proptest::proptest! {
        /// Pins the two sorted lists' merge to the order of the `(time, ±1)` pairs sorted, which
        /// the peak concurrency and the steady state's in-flight steps were computed from.
        #[test]
        fn level_changes_are_the_sorted_start_and_end_pairs(
            intervals in proptest::collection::vec((0u64..50, 0u64..50), 0..40),
        ) {
            let mut pairs: Vec<(u64, i8)> = intervals
                .iter()
                .filter(|(s, e)| e > s)
                .flat_map(|&(s, e)| [(s, 1), (e, -1)])
                .collect();
            pairs.sort_unstable();
            let changes = LevelChanges::of(&intervals);
            proptest::prop_assert_eq!(changes.size_hint(), (pairs.len(), Some(pairs.len())));
            proptest::prop_assert_eq!(changes.collect::<Vec<_>>(), pairs);
        }
    }
}
