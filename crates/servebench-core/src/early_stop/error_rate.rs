//! Error-rate stop: the share of failures among the last `window` finished requests, and an
//! absolute count of failures (docs/metrics.md, "Early stop: errors").

use std::collections::VecDeque;

/// `max_rate`: stop when more than this fraction of the last `window` finished requests
/// failed (tested only once `window` have finished); `max_errors`: stop when more than this
/// many failed in all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorRateConfig {
    pub max_rate: Option<f64>,
    pub window: usize,
    pub max_errors: Option<u64>,
}

/// What the test saw when it fired.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorRateEvidence {
    /// Failures among the last `window` finished (the rate test), or all failures.
    pub failed: u64,
    /// Requests the count is over: the window, or all finished.
    pub over: u64,
    /// Failed / over.
    pub rate: f64,
    /// Which limit fired: the windowed rate (`false`) or the absolute count (`true`).
    pub absolute: bool,
}

/// Fed each finished request's outcome in finishing order.
#[derive(Debug, Clone)]
pub struct ErrorRateStop {
    cfg: ErrorRateConfig,
    last: VecDeque<bool>,
    failed_in_window: u64,
    failed: u64,
    finished: u64,
}

impl ErrorRateStop {
    pub fn new(cfg: ErrorRateConfig) -> Self {
        let cap = if cfg.max_rate.is_some() { cfg.window } else { 0 };
        ErrorRateStop { cfg, last: VecDeque::with_capacity(cap), failed_in_window: 0, failed: 0, finished: 0 }
    }

    /// Adds one finished request (`failed`: it failed) and returns the evidence if a limit is
    /// now exceeded.
    pub fn observe(&mut self, failed: bool) -> Option<ErrorRateEvidence> {
        self.finished += 1;
        self.failed += u64::from(failed);
        if let Some(max) = self.cfg.max_errors {
            if self.failed > max {
                let rate = self.failed as f64 / self.finished as f64;
                let (failed, over) = (self.failed, self.finished);
                return Some(ErrorRateEvidence { failed, over, rate, absolute: true });
            }
        }
        let max = self.cfg.max_rate?;
        if self.cfg.window == 0 {
            return None;
        }
        self.last.push_back(failed);
        self.failed_in_window += u64::from(failed);
        if self.last.len() > self.cfg.window {
            self.failed_in_window -= u64::from(self.last.pop_front().unwrap_or(false));
        }
        let over = self.last.len() as u64;
        let rate = self.failed_in_window as f64 / over as f64;
        (self.last.len() == self.cfg.window && rate > max).then_some(ErrorRateEvidence {
            failed: self.failed_in_window,
            over,
            rate,
            absolute: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(cfg: ErrorRateConfig, outcomes: &[bool]) -> Option<(usize, ErrorRateEvidence)> {
        let mut s = ErrorRateStop::new(cfg);
        outcomes.iter().enumerate().find_map(|(i, &f)| s.observe(f).map(|e| (i, e)))
    }

    #[test]
    fn the_rate_is_tested_only_over_a_full_window() {
        let cfg = ErrorRateConfig { max_rate: Some(0.5), window: 4, max_errors: None };
        // 3 failures of 3: above 0.5 but the window is not full; the 4th fills it: 3/4 > 0.5.
        let (i, e) = feed(cfg, &[true, true, true, false]).unwrap();
        assert_eq!((i, e.failed, e.over, e.rate, e.absolute), (3, 3, 4, 0.75, false));
    }

    #[test]
    fn the_window_slides_and_the_rate_must_exceed_the_limit() {
        let cfg = ErrorRateConfig { max_rate: Some(0.5), window: 4, max_errors: None };
        // Windows: [T,F,T,F] 2/4 = 0.5 (not above), [F,T,F,T] 0.5, [T,F,T,T] 3/4 fires at i=5.
        let (i, e) = feed(cfg, &[true, false, true, false, true, true]).unwrap();
        assert_eq!((i, e.failed, e.rate), (5, 3, 0.75));
        assert!(feed(cfg, &[true, false, true, false, true, false, true, false]).is_none());
    }

    #[test]
    fn old_failures_leave_the_window() {
        let cfg = ErrorRateConfig { max_rate: Some(0.25), window: 4, max_errors: None };
        // A burst of 1 failure at the start then successes: 1/4 = 0.25 is not above.
        assert!(feed(cfg, &[true, false, false, false, false, false]).is_none());
    }

    #[test]
    fn the_absolute_limit_counts_all_failures() {
        let cfg = ErrorRateConfig { max_rate: None, window: 0, max_errors: Some(2) };
        let (i, e) = feed(cfg, &[true, false, true, false, false, true]).unwrap();
        assert_eq!((i, e.failed, e.over, e.rate, e.absolute), (5, 3, 6, 0.5, true));
        assert!(feed(cfg, &[true, true, false, false]).is_none());
    }
}
