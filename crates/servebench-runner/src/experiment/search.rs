//! Bisection over the request rate (pure): find the highest rate at which a monotone
//! pass/fail predicate still passes.
//!
//! 1. Bracket: try `start`; while it passes, double (up to `max`); while it fails, halve (down
//!    to `start / 1024`).
//! 2. Bisect the bracket `[low = highest pass, high = lowest fail]` at its midpoint until
//!    `(high − low) / high ≤ tolerance`.
//!
//! The answer is `low`: the true threshold lies in `[low, high)`, so `low` is within
//! `tolerance` of it (relative to `high`). `max` passing ends the search with `low = max` and
//! no `high` (the threshold is above the range searched).

/// The search state.
#[derive(Debug, Clone, PartialEq)]
pub struct Bisection {
    start: f64,
    max: f64,
    tolerance: f64,
    low: Option<f64>,
    high: Option<f64>,
    pending: Option<f64>,
}

/// Lowest rate the bracket phase goes down to, as a fraction of `start`.
const MIN_FRACTION: f64 = 1.0 / 1024.0;

impl Bisection {
    pub fn new(start: f64, max: f64, tolerance: f64) -> Self {
        Bisection { start, max, tolerance, low: None, high: None, pending: Some(start.min(max)) }
    }

    /// The next rate to try, or `None` when the search is over.
    pub fn next_rate(&self) -> Option<f64> {
        self.pending
    }

    /// Records the outcome at the rate `next_rate` gave.
    pub fn record(&mut self, rate: f64, passed: bool) {
        if passed {
            self.low = Some(self.low.map_or(rate, |l| l.max(rate)));
        } else {
            self.high = Some(self.high.map_or(rate, |h| h.min(rate)));
        }
        self.pending = match (self.low, self.high) {
            (Some(l), None) if l >= self.max => None,
            (Some(l), None) => Some((l * 2.0).min(self.max)),
            (None, Some(h)) if h <= self.start * MIN_FRACTION => None,
            (None, Some(h)) => Some(h / 2.0),
            (Some(l), Some(h)) if (h - l) / h <= self.tolerance => None,
            (Some(l), Some(h)) => Some((l + h) / 2.0),
            (None, None) => Some(self.start),
        };
    }

    /// Highest passing rate found.
    pub fn low(&self) -> Option<f64> {
        self.low
    }

    /// Lowest failing rate found.
    pub fn high(&self) -> Option<f64> {
        self.high
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(threshold: f64, start: f64, max: f64, tol: f64) -> (Bisection, usize) {
        let mut b = Bisection::new(start, max, tol);
        let mut steps = 0;
        while let Some(r) = b.next_rate() {
            b.record(r, r <= threshold);
            steps += 1;
            assert!(steps < 100);
        }
        (b, steps)
    }

    #[test]
    fn lands_within_tolerance_from_below_and_above() {
        for (threshold, start) in [(37.3, 1.0), (37.3, 500.0), (0.9, 4.0), (1.0, 1.0)] {
            let (b, _) = search(threshold, start, 10_000.0, 0.05);
            let (l, h) = (b.low().unwrap(), b.high().unwrap());
            assert!(l <= threshold && threshold < h, "{l} {threshold} {h}");
            assert!((h - l) / h <= 0.05);
            assert!((threshold - l) / threshold <= 0.05 / 0.95, "{l}");
        }
    }

    #[test]
    fn everything_passing_stops_at_max_and_nothing_passing_gives_no_low() {
        let (b, _) = search(1e9, 1.0, 100.0, 0.05);
        assert_eq!((b.low(), b.high()), (Some(100.0), None));
        let (b, steps) = search(0.0, 1.0, 100.0, 0.05);
        assert_eq!(b.low(), None);
        assert_eq!(steps, 11, "1, 1/2, …, 1/1024");
    }
}
