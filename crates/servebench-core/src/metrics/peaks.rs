//! Peak output token rate (exact sliding window) and peak concurrency (exact event sweep).

/// One second in µs: the width of the peak-rate window.
pub const WINDOW_US: u64 = 1_000_000;

/// The largest total weight landing in any half-open window `[s, s + window_us)`.
///
/// `events` are `(time_us, weight)` pairs in any order. The best window can always be moved right
/// until it starts at an event, so only windows starting at event times are examined, with two
/// pointers over the sorted events: O(n log n) for the sort, O(n) for the scan.
pub fn peak_window_sum(events: &mut [(u64, f64)], window_us: u64) -> f64 {
    events.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut best = 0.0_f64;
    let mut sum = 0.0_f64;
    let mut j = 0;
    for i in 0..events.len() {
        let start = events[i].0;
        let end = start.saturating_add(window_us);
        while j < events.len() && events[j].0 < end {
            sum += events[j].1;
            j += 1;
        }
        best = best.max(sum);
        sum -= events[i].1;
    }
    best
}

/// The largest number of half-open intervals `[start, end)` covering one instant.
///
/// Ends are processed before starts at equal times (a request ending at `t` and one starting at
/// `t` never overlap); empty intervals (`end <= start`) are ignored.
pub fn peak_overlap(intervals: &[(u64, u64)]) -> u64 {
    let mut events: Vec<(u64, i8)> = Vec::with_capacity(intervals.len() * 2);
    for &(s, e) in intervals {
        if e > s {
            events.push((s, 1));
            events.push((e, -1));
        }
    }
    events.sort_unstable();
    let (mut cur, mut peak) = (0i64, 0i64);
    for (_, d) in events {
        cur += i64::from(d);
        peak = peak.max(cur);
    }
    peak.max(0) as u64
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
    fn overlap_is_half_open() {
        // Back-to-back requests never overlap (vllm#56653 counted 2 here).
        assert_eq!(peak_overlap(&[(0, 10), (10, 20)]), 1);
        assert_eq!(peak_overlap(&[(0, 10), (5, 20), (9, 11), (20, 30)]), 3);
        assert_eq!(peak_overlap(&[(5, 5)]), 0);
        assert_eq!(peak_overlap(&[]), 0);
    }
}
