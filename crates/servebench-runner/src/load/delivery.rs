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
        fail_lost(&mut record, why);
        let _ = self.sink.send(record);
    }
}

/// Marks `record` failed for a task that ended without returning it (`why`: how it ended).
pub(crate) fn fail_lost(record: &mut RequestRecord, why: &str) {
    record.fail(
        ErrorKind::Transport,
        format!(
            "the request's task failed before it ended ({why}); this is a servebench bug, please report it"
        ),
    );
}

/// The records of one task's requests sent in order (a conversation's turns): every request the
/// task did not record — it panicked or was aborted — is recorded when the sink is dropped:
/// the one in flight as failed ([`fail_lost`]), the others as never sent because the
/// conversation did not go on (`dependency_failed`), so a conversation's turns still add up.
pub(crate) struct OrderedSink<M: Fn(usize) -> RequestRecord> {
    sink: mpsc::UnboundedSender<RequestRecord>,
    /// Requests recorded so far (the first `sent` of the task's `len`).
    sent: usize,
    /// The next request is being sent (between [`OrderedSink::dispatching`] and its record).
    in_flight: bool,
    len: usize,
    /// The record of request `k` as scheduled (not sent).
    make: M,
}

impl<M: Fn(usize) -> RequestRecord> OrderedSink<M> {
    pub(crate) fn new(sink: mpsc::UnboundedSender<RequestRecord>, len: usize, make: M) -> Self {
        OrderedSink { sink, sent: 0, in_flight: false, len, make }
    }

    /// The next request is about to be sent: lost from here on, it failed (before, it was never
    /// sent).
    pub(crate) fn dispatching(&mut self) {
        self.in_flight = true;
    }

    /// Sends the record of the next request in order.
    pub(crate) fn send(&mut self, record: RequestRecord) {
        self.sent += 1;
        self.in_flight = false;
        let _ = self.sink.send(record);
    }
}

impl<M: Fn(usize) -> RequestRecord> Drop for OrderedSink<M> {
    fn drop(&mut self) {
        for k in self.sent..self.len {
            let mut record = (self.make)(k);
            if k == self.sent && self.in_flight {
                fail_lost(&mut record, "it panicked or was aborted");
            } else {
                record.cancelled_by = Some(servebench_core::CancelReason::DependencyFailed);
            }
            let _ = self.sink.send(record);
        }
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

    /// Pins a conversation task that panics after its first turn: the turn in flight is failed
    /// (naming the bug) and the later turns never sent (`dependency_failed`); the three turns
    /// had left one record.
    #[tokio::test]
    async fn a_conversation_that_panics_still_records_every_turn() {
        let (tx, rx) = mpsc::unbounded_channel();
        let make = |k: usize| RequestRecord::scheduled(10 + k as u64, format!("r{k}"), 0, 5, 5);
        let task = tokio::spawn(async move {
            let mut turns = OrderedSink::new(tx, 3, make);
            let mut first = make(0);
            first.outcome = Outcome::Completed;
            turns.send(first);
            turns.dispatching();
            tokio::task::yield_now().await;
            panic!("turn 1 broke");
        });
        assert!(task.await.unwrap_err().is_panic());
        let got = collect(rx).await;
        assert_eq!(got.iter().map(|r| r.index).collect::<Vec<_>>(), [10, 11, 12]);
        assert_eq!(got[0].outcome, Outcome::Completed);
        assert_eq!(got[1].outcome, Outcome::Failed);
        assert!(got[1].error.as_ref().unwrap().message.contains("servebench bug"), "{:?}", got[1].error);
        assert_eq!(got[2].outcome, Outcome::Cancelled);
        assert_eq!(got[2].cancelled_by, Some(servebench_core::CancelReason::DependencyFailed));

        // A panic between turns (after a record, before the next send): the rest never sent.
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let mut turns = OrderedSink::new(tx, 2, make);
            turns.send(make(0));
            panic!("the history broke");
        });
        assert!(task.await.unwrap_err().is_panic());
        let got = collect(rx).await;
        assert_eq!(got[1].outcome, Outcome::Cancelled, "never sent, not failed: {:?}", got[1]);

        // A conversation that ends normally adds nothing.
        let (tx, rx) = mpsc::unbounded_channel();
        let mut turns = OrderedSink::new(tx, 2, make);
        turns.send(make(0));
        turns.send(make(1));
        drop(turns);
        assert_eq!(collect(rx).await.len(), 2);
    }

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
