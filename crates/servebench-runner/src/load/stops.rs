//! The stop signals of a run: when to stop releasing requests and when to cancel those in
//! flight, from the user's interrupt and an optional end time (`--duration`, the last stage).

use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// Stop signals of a run with an optional end time: `release` stops issuing requests (Ctrl-C
/// or the end time), `cancel` stops requests in flight (Ctrl-C when `cancel_on_interrupt`, the
/// end time when `cancel_at_end`).
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

/// Derives [`RunStops`] from the user's stop signal and an optional end instant.
pub fn run_stops(
    user: CancellationToken,
    cancel_on_interrupt: bool,
    end: Option<Instant>,
    cancel_at_end: bool,
) -> RunStops {
    let release = CancellationToken::new();
    let release_h = release.clone();
    let cancel = CancellationToken::new();
    let cancel_h = cancel.clone();
    let task = tokio::spawn(async move {
        let user = user;
        let mut end_done = end.is_none();
        let sleep = async {
            match end {
                Some(e) => tokio::time::sleep_until(e.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = user.cancelled() => {
                    release_h.cancel();
                    if cancel_on_interrupt {
                        cancel_h.cancel();
                    }
                    // Keep the end time armed only if it can still cancel something.
                    if end_done || !cancel_at_end || cancel_on_interrupt {
                        break;
                    }
                    (&mut sleep).await;
                    cancel_h.cancel();
                    break;
                }
                _ = &mut sleep, if !end_done => {
                    end_done = true;
                    release_h.cancel();
                    if cancel_at_end {
                        cancel_h.cancel();
                        break;
                    }
                    if !cancel_on_interrupt {
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
        let drain = run_stops(user.clone(), true, Some(end), false);
        let cancel = run_stops(user, true, Some(end), true);
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
        let keep = run_stops(user.clone(), false, None, false);
        let stop = run_stops(user, true, None, false);
        user_h.cancel();
        let c = stop.cancel.clone();
        c.cancelled().await;
        let r = keep.release.clone();
        r.cancelled().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!keep.cancel.is_cancelled());
    }
}
