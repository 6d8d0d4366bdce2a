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

/// Time-average of the level over `[a, b)` (0 for an empty interval).
pub(super) fn mean_level(steps: &[(u64, i64)], a: u64, b: u64) -> f64 {
    if b > a {
        integral(steps, a, b) / (b - a) as f64
    } else {
        0.0
    }
}
