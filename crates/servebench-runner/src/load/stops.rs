//! The stop signals of a run: when to stop releasing requests and when to cancel those in
//! flight, from the user's interrupts and an optional end time (`--duration`, the last stage),
//! and why (each cancelled record says it: `RequestRecord::cancelled_by`).

use servebench_core::{CancelReason, Outcome, RequestRecord};
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// The user's stop signals: `stop` (the first Ctrl-C/SIGTERM: stop sending, in-flight requests
/// per `--on-interrupt`) and `abandon` (a second one while draining: cancel every request in
/// flight now, so the run still writes every record and its result at once).
#[derive(Debug, Clone, Default)]
pub struct Interrupts {
    pub stop: CancellationToken,
    pub abandon: CancellationToken,
}

impl From<CancellationToken> for Interrupts {
    /// Only the first stop signal (the second never comes).
    fn from(stop: CancellationToken) -> Self {
        Interrupts { stop, abandon: CancellationToken::new() }
    }
}

/// Why a run stopped releasing requests and why it cancelled those in flight; each set once,
/// before its signal is raised, so every record cancelled by a signal finds its reason.
#[derive(Debug, Clone, Default)]
pub struct StopReasons {
    release: Arc<OnceLock<CancelReason>>,
    cancel: Arc<OnceLock<CancelReason>>,
}

impl StopReasons {
    /// Sets `cancelled_by` of a cancelled record that has none: why its request was cancelled
    /// in flight (sent) or not sent at all.
    pub fn explain(&self, r: &mut RequestRecord) {
        if r.outcome != Outcome::Cancelled || r.cancelled_by.is_some() {
            return;
        }
        let (first, second) = if r.dispatched_us.is_some() {
            (&self.cancel, &self.release)
        } else {
            (&self.release, &self.cancel)
        };
        r.cancelled_by = first.get().or(second.get()).copied();
    }

    fn raise(lock: &OnceLock<CancelReason>, token: &CancellationToken, reason: CancelReason) {
        let _ = lock.set(reason);
        token.cancel();
    }
}

/// Stop signals of a run with an optional end time: `release` stops issuing requests (Ctrl-C
/// or the end time), `cancel` stops requests in flight (Ctrl-C when `cancel_on_interrupt`, the
/// end time when `cancel_at_end`, always a second Ctrl-C).
#[derive(Debug, Clone)]
pub struct RunStops {
    pub release: CancellationToken,
    pub cancel: CancellationToken,
    /// The task raising the signals; aborted when the last copy is dropped (the run ended).
    _task: std::sync::Arc<AbortOnDrop>,
}

/// Aborts a task when dropped.
#[derive(Debug)]
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Derives [`RunStops`] from the user's stop signals, an optional end instant and an optional
/// early stop (`early`: raised by `crate::load::early_stop`, handled as an interrupt is, per
/// `--on-interrupt`), noting in `reasons` why each signal was raised.
pub fn run_stops(
    user: Interrupts,
    cancel_on_interrupt: bool,
    end: Option<Instant>,
    cancel_at_end: bool,
    reasons: StopReasons,
    early: Option<CancellationToken>,
) -> RunStops {
    let release = CancellationToken::new();
    let cancel = CancellationToken::new();
    let (release_h, cancel_h) = (release.clone(), cancel.clone());
    let task = tokio::spawn(async move {
        let Interrupts { stop: user, abandon } = user;
        let r = &reasons;
        let raise_release = |why| StopReasons::raise(&r.release, &release_h, why);
        let raise_cancel = |why| StopReasons::raise(&r.cancel, &cancel_h, why);
        let mut end_done = end.is_none();
        let mut interrupted = false;
        let sleep = async {
            match end {
                Some(e) => tokio::time::sleep_until(e.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(sleep);
        let early_stop = async {
            match &early {
                Some(t) => t.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(early_stop);
        let mut early_done = early.is_none();
        loop {
            tokio::select! {
                _ = abandon.cancelled() => {
                    raise_release(CancelReason::Interrupt);
                    raise_cancel(CancelReason::SecondInterrupt);
                    break;
                }
                _ = user.cancelled(), if !interrupted => {
                    interrupted = true;
                    raise_release(CancelReason::Interrupt);
                    if cancel_on_interrupt {
                        raise_cancel(CancelReason::Interrupt);
                        break;
                    }
                }
                _ = &mut early_stop, if !early_done => {
                    early_done = true;
                    raise_release(CancelReason::EarlyStop);
                    if cancel_on_interrupt {
                        raise_cancel(CancelReason::EarlyStop);
                        break;
                    }
                }
                _ = &mut sleep, if !end_done => {
                    end_done = true;
                    raise_release(CancelReason::DurationEnd);
                    if cancel_at_end {
                        raise_cancel(CancelReason::DurationEnd);
                        break;
                    }
                }
            }
        }
        // Dropping the handles leaves the signals as they are (raised or not).
    });
    RunStops { release, cancel, _task: std::sync::Arc::new(AbortOnDrop(task)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn end_time_stops_release_and_cancels_only_when_asked() {
        let user = CancellationToken::new();
        let _user_h = user.clone();
        let end = Instant::now() + Duration::from_millis(20);
        let drain = run_stops(user.clone().into(), true, Some(end), false, StopReasons::default(), None);
        let cancel = run_stops(user.into(), true, Some(end), true, StopReasons::default(), None);
        let r = drain.release.clone();
        r.cancelled().await;
        let c = cancel.cancel.clone();
        c.cancelled().await;
        assert!(!drain.cancel.is_cancelled());
        assert!(cancel.release.is_cancelled());
    }

    #[tokio::test]
    async fn interrupt_cancels_per_its_mode() {
        let user = CancellationToken::new();
        let user_h = user.clone();
        let keep = run_stops(user.clone().into(), false, None, false, StopReasons::default(), None);
        let stop = run_stops(user.into(), true, None, false, StopReasons::default(), None);
        user_h.cancel();
        let c = stop.cancel.clone();
        c.cancelled().await;
        let r = keep.release.clone();
        r.cancelled().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!keep.cancel.is_cancelled());
    }

    /// Pins the second interrupt: while draining (`--on-interrupt drain`) a second signal used
    /// to exit the process at once; now it cancels what is in flight, and every cancelled
    /// record says why — never sent after the first interrupt, abandoned at the second.
    #[tokio::test]
    async fn a_second_interrupt_while_draining_cancels_in_flight_with_its_reason() {
        let user = Interrupts::default();
        let reasons = StopReasons::default();
        let stops = run_stops(user.clone(), false, None, false, reasons.clone(), None);
        user.stop.cancel();
        stops.release.clone().cancelled().await;
        tokio::task::yield_now().await;
        assert!(!stops.cancel.is_cancelled(), "draining: in-flight requests go on");
        user.abandon.cancel();
        stops.cancel.clone().cancelled().await;
        let mut sent = RequestRecord::scheduled(0, "a".into(), 0, 1, 1);
        sent.dispatched_us = Some(5);
        let mut unsent = RequestRecord::scheduled(1, "b".into(), 0, 1, 1);
        reasons.explain(&mut sent);
        reasons.explain(&mut unsent);
        assert_eq!(sent.cancelled_by, Some(CancelReason::SecondInterrupt));
        assert_eq!(unsent.cancelled_by, Some(CancelReason::Interrupt));
        let mut done = RequestRecord::scheduled(2, "c".into(), 0, 1, 1);
        done.outcome = Outcome::Completed;
        reasons.explain(&mut done);
        assert_eq!(done.cancelled_by, None, "only cancelled records get a reason");
    }

    /// An early stop is handled as an interrupt is: it stops releasing, and cancels in flight
    /// only with `--on-interrupt cancel`; what it stops says `early_stop`.
    #[tokio::test]
    async fn an_early_stop_stops_release_and_cancels_per_the_interrupt_mode() {
        let (early, reasons) = (CancellationToken::new(), StopReasons::default());
        let drain =
            run_stops(Interrupts::default(), false, None, false, reasons.clone(), Some(early.clone()));
        let cancel =
            run_stops(Interrupts::default(), true, None, false, StopReasons::default(), Some(early.clone()));
        early.cancel();
        cancel.cancel.clone().cancelled().await;
        drain.release.clone().cancelled().await;
        tokio::task::yield_now().await;
        assert!(!drain.cancel.is_cancelled(), "drain: in-flight requests go on");
        let mut unsent = RequestRecord::scheduled(0, "a".into(), 0, 1, 1);
        reasons.explain(&mut unsent);
        assert_eq!(unsent.cancelled_by, Some(CancelReason::EarlyStop));
    }

    #[tokio::test]
    async fn the_end_time_is_the_reason_of_what_it_cancels() {
        let reasons = StopReasons::default();
        let end = Instant::now() + Duration::from_millis(5);
        let stops = run_stops(Interrupts::default(), false, Some(end), true, reasons.clone(), None);
        stops.cancel.clone().cancelled().await;
        let mut r = RequestRecord::scheduled(0, "a".into(), 0, 1, 1);
        r.dispatched_us = Some(1);
        reasons.explain(&mut r);
        assert_eq!(r.cancelled_by, Some(CancelReason::DurationEnd));
    }
}
