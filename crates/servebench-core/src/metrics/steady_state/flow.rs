//! In-flight step functions and their time averages (shared by both modes).

/// Piecewise-constant in-flight count: `(time, level from this time on)`, sorted. Ends come
/// before starts at equal times; empty intervals are ignored.
pub(super) fn in_flight_steps(intervals: &[(u64, u64)]) -> Vec<(u64, i64)> {
    let changes = super::super::peaks::LevelChanges::of(intervals);
    let mut steps: Vec<(u64, i64)> = Vec::with_capacity(changes.size_hint().0);
    let mut level = 0i64;
    for (t, d) in changes {
        level += i64::from(d);
        match steps.last_mut() {
            Some(last) if last.0 == t => last.1 = level,
            _ => steps.push((t, level)),
        }
    }
    steps
}

/// [`mean_level`] of [`in_flight_steps`]`(intervals)` over `[a, b)`, walked from the level
/// changes without holding the steps (32 bytes an interval): the same terms in the same order,
/// so the same bits.
pub(super) fn mean_in_flight(intervals: &[(u64, u64)], a: u64, b: u64) -> f64 {
    if b <= a {
        return 0.0;
    }
    let mut changes = super::super::peaks::LevelChanges::of(intervals).peekable();
    let (mut level, mut total) = (0i64, 0.0);
    while let Some((t, d)) = changes.next() {
        level += i64::from(d);
        let next = changes.peek().map_or(u64::MAX, |c| c.0);
        // Changes at one instant make one step: its level is the last one's.
        if next == t {
            continue;
        }
        let (lo, hi) = (t.max(a), next.min(b));
        if hi > lo {
            total += (hi - lo) as f64 * level as f64;
        }
    }
    total / (b - a) as f64
}

/// ∫ f(level) dt over `[a, b)` of a step function (level 0 before the first step), in level·µs.
fn integral_of(steps: &[(u64, i64)], a: u64, b: u64, f: impl Fn(f64) -> f64) -> f64 {
    let mut total = 0.0;
    for (i, &(t, level)) in steps.iter().enumerate() {
        let next = steps.get(i + 1).map_or(u64::MAX, |s| s.0);
        let (lo, hi) = (t.max(a), next.min(b));
        if hi > lo {
            total += (hi - lo) as f64 * f(level as f64);
        }
    }
    total
}

/// ∫ level dt over `[a, b)`.
pub(super) fn integral(steps: &[(u64, i64)], a: u64, b: u64) -> f64 {
    integral_of(steps, a, b, |x| x)
}

/// Time-average of the level over `[a, b)` (0 for an empty interval): what
/// [`mean_in_flight`] computes without the steps, its oracle in the tests.
#[cfg(test)]
pub(super) fn mean_level(steps: &[(u64, i64)], a: u64, b: u64) -> f64 {
    if b > a {
        integral(steps, a, b) / (b - a) as f64
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn mean_in_flight_on_hand_computed_intervals() {
        // [0,10) and [5,15): level 1 on [0,5), 2 on [5,10), 1 on [10,15); over [0,20): 20/20.
        let iv = [(0, 10), (5, 15)];
        assert_eq!(mean_in_flight(&iv, 0, 20), 1.0);
        assert_eq!(mean_in_flight(&iv, 5, 10), 2.0);
        // An empty window, an empty interval (ignored), an end meeting a start (no overlap).
        assert_eq!(mean_in_flight(&iv, 7, 7), 0.0);
        assert_eq!(mean_in_flight(&[(3, 3), (0, 4), (4, 8)], 0, 8), 1.0);
    }

    proptest! {
        #[test]
        fn mean_in_flight_has_the_bits_of_the_mean_over_the_steps(
            iv in proptest::collection::vec((0u64..200, 0u64..60), 0..40),
            a in 0u64..260,
            len in 0u64..260,
        ) {
            let iv: Vec<(u64, u64)> = iv.into_iter().map(|(s, d)| (s, s + d)).collect();
            let b = a + len;
            let want = mean_level(&in_flight_steps(&iv), a, b);
            prop_assert_eq!(mean_in_flight(&iv, a, b).to_bits(), want.to_bits());
        }
    }
}
