//! The one timer of a request: the request deadline (`--request-timeout`) and the stall bound
//! (`--stall-timeout`, no byte for that long), armed as a single sleep.

use std::pin::Pin;
use std::time::{Duration, Instant};

use tokio::time::Sleep;

use super::ExecOptions;

/// One timer for both timeouts. Progress only notes the time; the sleep is moved forward when
/// it fires early ([`Timer::rearm`]), so a streamed event never touches the timer wheel.
pub(super) struct Timer {
    sleep: Option<Pin<Box<Sleep>>>,
    request_deadline: Option<tokio::time::Instant>,
    request_timeout: Option<Duration>,
    stall: Option<Duration>,
    last_progress: tokio::time::Instant,
    /// A drain cap is in force: the sleep is final.
    capped: bool,
}

impl Timer {
    pub(super) fn new(opts: &ExecOptions) -> Self {
        let now = tokio::time::Instant::now();
        // A deadline beyond what the clock can hold is no deadline (the flags refuse such
        // timeouts; the library does not panic on them either).
        let request_deadline = opts.request_timeout.and_then(|d| now.checked_add(d));
        let mut t = Timer {
            sleep: None,
            request_deadline,
            request_timeout: opts.request_timeout,
            stall: opts.stall_timeout,
            last_progress: now,
            capped: false,
        };
        if let Some(when) = t.next(now) {
            t.sleep = Some(Box::pin(tokio::time::sleep_until(when)));
        }
        t
    }

    fn next(&self, now: tokio::time::Instant) -> Option<tokio::time::Instant> {
        match (self.request_deadline, self.stall.and_then(|s| now.checked_add(s))) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Progress was made at `at`: the stall deadline moves (lazily, see [`Timer::rearm`]).
    pub(super) fn progress_at(&mut self, at: Instant) {
        self.last_progress = tokio::time::Instant::from_std(at);
    }

    /// Progress was made now.
    pub(super) fn progress(&mut self) {
        self.last_progress = tokio::time::Instant::now();
    }

    /// The sleep fired: if progress since it was armed moved the real deadline later, re-arms
    /// it there and returns true (keep going); false means the deadline really passed.
    pub(super) fn rearm(&mut self) -> bool {
        if self.capped {
            return false;
        }
        let now = tokio::time::Instant::now();
        match (self.next(self.last_progress), self.sleep.as_mut()) {
            (Some(when), Some(s)) if when > now => {
                s.as_mut().reset(when);
                true
            }
            _ => false,
        }
    }

    /// Limits the remaining wait to `d` (drain after `[DONE]`).
    pub(super) fn cap(&mut self, d: Duration) {
        let Some(when) = tokio::time::Instant::now().checked_add(d) else { return };
        self.capped = true;
        match self.sleep.as_mut() {
            Some(s) if s.deadline() <= when => {}
            Some(s) => s.as_mut().reset(when),
            None => self.sleep = Some(Box::pin(tokio::time::sleep_until(when))),
        }
    }

    pub(super) fn get(&mut self) -> Option<&mut Pin<Box<Sleep>>> {
        self.sleep.as_mut()
    }

    /// Which bound fired: the whole request's (`Timeout`) or the stall bound (`Stall`).
    pub(super) fn kind(&self) -> servebench_core::ErrorKind {
        if self.request_passed() {
            servebench_core::ErrorKind::Timeout
        } else {
            servebench_core::ErrorKind::Stall
        }
    }

    fn request_passed(&self) -> bool {
        self.request_deadline.is_some_and(|d| tokio::time::Instant::now() >= d)
    }

    /// What fired, naming the flag that bounds it (a stall is `--stall-timeout`, the whole
    /// request `--request-timeout`): the fix a run without success quotes.
    pub(super) fn message(&self) -> String {
        if self.request_passed() {
            format!(
                "request timeout: not done within {:?} (--request-timeout)",
                self.request_timeout.unwrap_or_default()
            )
        } else {
            format!("stall timeout: no data for {:?} (--stall-timeout)", self.stall.unwrap_or_default())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn timeouts_beyond_the_clock_are_no_deadline_not_a_panic() {
        let huge = Duration::from_secs(u64::MAX);
        let opts =
            ExecOptions { request_timeout: Some(huge), stall_timeout: Some(huge), ..Default::default() };
        let mut t = Timer::new(&opts);
        assert!(t.get().is_none(), "no deadline the clock can hold: no sleep");
        t.progress();
        assert!(!t.rearm());
        t.cap(huge);
        assert!(t.get().is_none() && !t.capped, "an endless cap changes nothing");
        // One bound the clock can hold still arms the timer.
        let opts = ExecOptions { stall_timeout: Some(Duration::from_secs(5)), ..opts };
        assert!(Timer::new(&opts).get().is_some());
    }
}
