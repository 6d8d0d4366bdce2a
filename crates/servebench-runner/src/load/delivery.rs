//! A request's record reaches the sink exactly once, even when its task does not end normally:
//! a panic inside the request, or the task's abort, sends a failed record (`transport`) in place
//! of the record the request never returned, so every request still ends as completed, failed or
//! cancelled and the counts add up.

use super::release::Release;
use futures::FutureExt;
use servebench_core::{ErrorKind, RequestRecord};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Sends one request's record: the executor's, or a failed one made by `make` when there is none.
pub(crate) struct Delivery<M: Fn(Release) -> RequestRecord> {
    sink: mpsc::UnboundedSender<RequestRecord>,
    /// What the failed record is made of, until the request's own record is sent.
    lost: Option<(Release, Arc<M>)>,
}

impl<M: Fn(Release) -> RequestRecord> Delivery<M> {
    /// The delivery of `release`'s record (its facts copied: the release itself goes to the
    /// executor).
    pub(crate) fn new(sink: mpsc::UnboundedSender<RequestRecord>, release: &Release, make: Arc<M>) -> Self {
        let copy = Release {
            gate_us: release.gate_us,
            ..Release::new(release.index, release.intended_us, release.released_us, release.stage)
        };
        Delivery { sink, lost: Some((copy, make)) }
    }

    /// Runs the request to its record and sends it; a panic sends a failed record instead.
    pub(crate) async fn run(mut self, request: impl Future<Output = RequestRecord>) {
        match AssertUnwindSafe(request).catch_unwind().await {
            Ok(record) => {
                self.lost = None;
                let _ = self.sink.send(record);
            }
            Err(panic) => self.fail(&format!("it panicked: {}", panic_text(panic.as_ref()))),
        }
    }

    fn fail(&mut self, why: &str) {
        let Some((release, make)) = self.lost.take() else { return };
        let mut record = make(release);
        record.fail(
            ErrorKind::Transport,
            format!("the request's task failed before it ended ({why}); this is a servebench bug, please report it"),
        );
        let _ = self.sink.send(record);
    }
}

impl<M: Fn(Release) -> RequestRecord> Drop for Delivery<M> {
    /// The task was dropped before the request's record was sent: aborted.
    fn drop(&mut self) {
        self.fail("it was aborted");
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => s,
        (_, Some(s)) => s,
        _ => "no message",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::dispatch::tests::record_for;
    use crate::load::dispatch::{dispatch, dispatch_closed_loop, DispatchPlan};
    use servebench_core::{Outcome, RunClock};
    use tokio_util::sync::CancellationToken;

    /// The records the sink got, by workload index.
    async fn collect(rx: mpsc::UnboundedReceiver<RequestRecord>) -> Vec<RequestRecord> {
        let mut v = crate::load::dispatch::tests::collect(rx).await;
        v.sort_by_key(|r| r.index);
        v
    }

    /// Request 1 of every run panics inside its task.
    async fn second_panics(r: Release) -> RequestRecord {
        if r.index == 1 {
            panic!("overflow when adding duration to instant");
        }
        record_for(&r, Outcome::Completed)
    }

    fn assert_one_failed_record(recs: &[RequestRecord], n: usize) {
        assert_eq!(recs.len(), n, "no request vanished");
        let failed: Vec<_> = recs.iter().filter(|r| r.outcome == Outcome::Failed).collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].index, 1);
        let e = failed[0].error.as_ref().expect("an error");
        assert_eq!(e.kind, ErrorKind::Transport);
        assert!(
            e.message.contains("task failed") && e.message.contains("overflow when adding"),
            "{}",
            e.message
        );
    }

    #[tokio::test]
    async fn a_panicking_request_task_ends_as_a_failed_record_with_and_without_a_gate() {
        for max_concurrency in [None, Some(2)] {
            let plan = DispatchPlan {
                offsets_us: vec![0; 4].into(),
                max_concurrency,
                max_prefill: None,
                prefill_waiting: None,
            };
            let (tx, rx) = mpsc::unbounded_channel();
            let cancelled = |r: Release| record_for(&r, Outcome::Cancelled);
            let stats =
                dispatch(&plan, RunClock::start(), second_panics, cancelled, tx, CancellationToken::new())
                    .await;
            assert_eq!(stats.lateness_us.len(), 4);
            assert_one_failed_record(&collect(rx).await, 4);
        }
    }

    #[tokio::test]
    async fn a_panicking_request_task_in_a_closed_loop_ends_as_a_failed_record() {
        let (tx, rx) = mpsc::unbounded_channel();
        let made = |r: Release| record_for(&r, Outcome::Cancelled);
        let stats = dispatch_closed_loop(
            &[(2, 20_000)],
            (None, None),
            RunClock::start(),
            second_panics,
            made,
            tx,
            CancellationToken::new(),
        )
        .await;
        let recs = collect(rx).await;
        assert_eq!(recs.len(), stats.lateness_us.len());
        assert_one_failed_record(&recs, recs.len());
    }

    #[tokio::test]
    async fn an_aborted_request_task_ends_as_a_failed_record() {
        let (tx, rx) = mpsc::unbounded_channel();
        let release = Release::new(7, 10, 12, None);
        let d = Delivery::new(tx, &release, Arc::new(|r: Release| record_for(&r, Outcome::Cancelled)));
        let task = tokio::spawn(d.run(std::future::pending()));
        task.abort();
        let _ = task.await;
        let recs = collect(rx).await;
        assert_eq!(recs.len(), 1);
        assert_eq!((recs[0].index, recs[0].intended_us, recs[0].outcome), (7, 10, Outcome::Failed));
        assert!(recs[0].error.as_ref().is_some_and(|e| e.message.contains("aborted")));
    }
}
