//! The dispatcher: releases every arrival that is due at each wake-up, records how late each
//! release was, and hands the request to a task that passes the concurrency gate and runs it.
//!
//! It is generic over the request executor so that its timing and accounting can be tested
//! without sockets.

use super::delivery::Delivery;
pub use super::release::{PrefillSlot, Release};
use crate::observe::live::PrefillWaiting;
use servebench_core::{RequestRecord, RunClock};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// What the dispatcher needs to know.
#[derive(Debug, Clone)]
pub struct DispatchPlan {
    /// Intended send offsets (µs from the run origin), one per request, non-decreasing.
    pub offsets_us: Arc<[u64]>,
    /// Concurrency gate; `None` = unbounded.
    pub max_concurrency: Option<usize>,
    /// Prefill slots (`--max-prefill-concurrency`), taken after the concurrency gate and held
    /// until the first token; `None` = no prefill cap.
    pub max_prefill: Option<usize>,
    /// Counts the requests waiting for a prefill slot for the live view; only with a prefill
    /// cap (`None` costs nothing).
    pub prefill_waiting: Option<Arc<PrefillWaiting>>,
}

/// Waits for a permit of `sem`, or `None` once `stop` is raised.
async fn acquire(sem: &Arc<Semaphore>, stop: &CancellationToken) -> Option<OwnedSemaphorePermit> {
    if stop.is_cancelled() {
        return None;
    }
    tokio::select! {
        biased;
        _ = stop.cancelled() => None,
        p = sem.clone().acquire_owned() => p.ok(),
    }
}

/// The client-side gates a request passes, in this order: the concurrency gate, then a
/// prefill slot.
#[derive(Clone, Default)]
struct Gates {
    concurrency: Option<Arc<Semaphore>>,
    prefill: Option<Arc<Semaphore>>,
    /// Requests waiting for a prefill slot (live view), when counted.
    waiting: Option<Arc<PrefillWaiting>>,
}

impl Gates {
    fn of(plan: &DispatchPlan) -> Self {
        let sem = |n: Option<usize>| n.map(|c| Arc::new(Semaphore::new(c.max(1))));
        let prefill = sem(plan.max_prefill);
        let waiting = plan.prefill_waiting.clone().filter(|_| prefill.is_some());
        Gates { concurrency: sem(plan.max_concurrency), prefill, waiting }
    }

    fn any(&self) -> bool {
        self.concurrency.is_some() || self.prefill.is_some()
    }
}

/// Dispatch statistics (client health).
#[derive(Debug, Clone, Default)]
pub struct DispatchStats {
    /// released − intended for every released request, µs.
    pub lateness_us: Vec<u64>,
    /// Requests never released because the run was stopped.
    pub not_released: usize,
}

/// Runs the schedule. `execute(release)` runs one request after the gate and returns its
/// record; `cancelled(release_or_unreleased)` builds the record of a request that was stopped
/// before it ran. Every record goes to `sink` exactly once.
pub async fn dispatch<E, Fut, C>(
    plan: &DispatchPlan,
    clock: RunClock,
    execute: E,
    cancelled: C,
    sink: mpsc::UnboundedSender<RequestRecord>,
    stop: CancellationToken,
) -> DispatchStats
where
    E: Fn(Release) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = RequestRecord> + Send + 'static,
    C: Fn(Release) -> RequestRecord + Send + Sync + 'static,
{
    let execute = Arc::new(execute);
    let cancelled = Arc::new(cancelled);
    let n = plan.offsets_us.len();
    let mut stats = DispatchStats { lateness_us: Vec::with_capacity(n), not_released: 0 };
    // With a gate, releases queue in schedule order for one gate task (`gate_in_order`), which
    // passes them through the semaphore one after the other: requests pass the gate FIFO.
    // (Acquiring inside each spawned task made the pass order the order in which the runtime
    // first polled the tasks, which is not the spawn order.)
    let gates = Gates::of(plan);
    let queue_count = gates.waiting.clone();
    let (gate_tx, gate_task) = match gates.any() {
        true => {
            let (tx, rx) = mpsc::unbounded_channel::<Release>();
            let task = tokio::spawn(gate_in_order(
                clock,
                gates,
                rx,
                execute.clone(),
                cancelled.clone(),
                sink.clone(),
                stop.clone(),
            ));
            (Some(tx), Some(task))
        }
        false => (None, None),
    };
    let mut tasks = JoinSet::new();
    let mut i = 0;
    let stop_wait = stop.clone();
    while i < n {
        let due = clock.instant_at(plan.offsets_us[i]);
        if Instant::now() < due {
            tokio::select! {
                _ = tokio::time::sleep_until(due.into()) => {}
                _ = stop_wait.cancelled() => {}
            }
        }
        if stop.is_cancelled() {
            break;
        }
        let now = Instant::now();
        let released_us = clock.offset_us(now);
        // Release every arrival that is due now, not one per wake-up.
        while i < n && plan.offsets_us[i] <= released_us {
            let release = Release::new(i, plan.offsets_us[i], released_us, None);
            stats.lateness_us.push(released_us - plan.offsets_us[i]);
            match &gate_tx {
                Some(tx) => {
                    if let Some(w) = &queue_count {
                        w.queued();
                    }
                    if let Err(e) = tx.send(release) {
                        let _ = sink.send(cancelled(e.0));
                    }
                }
                None => {
                    let release = Release { gate_us: Some(released_us), ..release };
                    let delivery = Delivery::new(sink.clone(), &release, cancelled.clone());
                    // Boxed: the executor's future is large (connect, TLS and HTTP state).
                    let fut = Box::pin(execute(release));
                    tasks.spawn(delivery.run(fut));
                }
            }
            i += 1;
        }
        // Reap finished tasks so the set does not grow with the whole run.
        while tasks.try_join_next().is_some() {}
    }
    // Requests the stop prevented from being released end as cancelled records.
    for (j, &intended_us) in plan.offsets_us.iter().enumerate().skip(i) {
        stats.not_released += 1;
        let _ = sink.send(cancelled(Release::new(j, intended_us, intended_us, None)));
    }
    drop(gate_tx);
    if let Some(t) = gate_task {
        let _ = t.await;
    }
    while tasks.join_next().await.is_some() {}
    stats
}

/// The client-side gates: takes releases in the order they were queued, waits for a
/// concurrency permit then a prefill slot (each when the run has one) for each in turn, then
/// starts its request (the executor is called here, in order). Once `stop` is raised, every
/// release still waiting ends as a cancelled record.
async fn gate_in_order<E, Fut, C>(
    clock: RunClock,
    gates: Gates,
    mut queue: mpsc::UnboundedReceiver<Release>,
    execute: Arc<E>,
    cancelled: Arc<C>,
    sink: mpsc::UnboundedSender<RequestRecord>,
    stop: CancellationToken,
) where
    E: Fn(Release) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = RequestRecord> + Send + 'static,
    C: Fn(Release) -> RequestRecord + Send + Sync + 'static,
{
    let mut tasks = JoinSet::new();
    while let Some(release) = queue.recv().await {
        if let Some(w) = &gates.waiting {
            w.dequeued();
        }
        let Some((permit, release)) = pass_gates(&gates, clock, release, &stop)
            .await
            .map_err(|r| {
                let _ = sink.send(cancelled(r));
            })
            .ok()
        else {
            continue;
        };
        let delivery = Delivery::new(sink.clone(), &release, cancelled.clone());
        // Boxed: the executor's future is large (connect, TLS and HTTP state).
        let mut fut = Box::pin(execute(release));
        // The next request passes only once this one has started (its first poll, which on a
        // pooled connection writes the request): the runtime does not run spawned tasks in
        // spawn order, so two requests passing together could otherwise start swapped.
        let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
        tasks.spawn(delivery.run(async move {
            let mut started_tx = Some(started_tx);
            // A request that panics drops `started_tx`, which lets the next one pass too.
            let record = std::future::poll_fn(|cx| {
                let polled = fut.as_mut().poll(cx);
                if let Some(tx) = started_tx.take() {
                    let _ = tx.send(());
                }
                polled
            })
            .await;
            drop(permit);
            record
        }));
        let _ = started.await;
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
}

/// Passes `release` through the concurrency gate then takes a prefill slot (each when the run
/// has one), in queue order; back with the concurrency permit (held to the request's end) and
/// the release with its gate time and prefill slot, or `Err(release)` when `stop` came first.
async fn pass_gates(
    gates: &Gates,
    clock: RunClock,
    mut release: Release,
    stop: &CancellationToken,
) -> Result<(Option<OwnedSemaphorePermit>, Release), Release> {
    if stop.is_cancelled() {
        return Err(release);
    }
    // `ready_us`: since when only a prefill slot kept the request back. A concurrency permit
    // free at once means it was ready at its release (the time it queued behind earlier
    // requests waiting for slots is prefill wait too); one waited for, from when it came.
    let (permit, ready_us) = match &gates.concurrency {
        Some(g) => match g.clone().try_acquire_owned() {
            Ok(p) => (Some(p), release.released_us),
            Err(_) => match acquire(g, stop).await {
                Some(p) => (Some(p), clock.offset_us(Instant::now())),
                None => return Err(release),
            },
        },
        None => (None, release.released_us),
    };
    if let Some(p) = &gates.prefill {
        if let Some(w) = &gates.waiting {
            w.wait_started();
        }
        let slot = acquire(p, stop).await;
        if let Some(w) = &gates.waiting {
            w.wait_ended();
        }
        let Some(slot) = slot else { return Err(release) };
        let wait_us = clock.offset_us(Instant::now()).saturating_sub(ready_us);
        release.prefill = Some(PrefillSlot { permit: slot, wait_us });
    }
    // The time it passed, taken here in queue order: the send (pool checkout, connect) starts
    // now, and `dispatched_us` follows once the request is written.
    release.gate_us = Some(clock.offset_us(Instant::now()));
    Ok((permit, release))
}

/// The closed loop of concurrency stages: `stages` are `(concurrency, end µs)` back to back from
/// the origin. While stage `k` lasts, a request is released whenever fewer than its concurrency
/// are in flight (at once when a stage raises the limit; a stage that lowers it lets the surplus
/// finish). Request `i` is the `i`-th released (no schedule: intended = released, lateness 0).
/// Releasing ends with the last stage or `stop`; every released request's record goes to `sink`
/// (`records(release)` makes the record of one whose task failed, as [`dispatch`]'s `cancelled`).
pub async fn dispatch_closed_loop<E, Fut, C>(
    stages: &[(usize, u64)],
    (max_prefill, waiting): (Option<usize>, Option<Arc<PrefillWaiting>>),
    clock: RunClock,
    execute: E,
    records: C,
    sink: mpsc::UnboundedSender<RequestRecord>,
    stop: CancellationToken,
) -> DispatchStats
where
    E: Fn(Release) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = RequestRecord> + Send + 'static,
    C: Fn(Release) -> RequestRecord + Send + Sync + 'static,
{
    let execute = Arc::new(execute);
    let records = Arc::new(records);
    let prefill = Gates {
        concurrency: None,
        prefill: max_prefill.map(|c| Arc::new(Semaphore::new(c.max(1)))),
        waiting: waiting.filter(|_| max_prefill.is_some()),
    };
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<()>();
    let mut stats = DispatchStats::default();
    let mut tasks = JoinSet::new();
    let (mut in_flight, mut next) = (0usize, 0usize);
    let stop_wait = stop.clone();
    while !stop.is_cancelled() {
        let now_us = clock.offset_us(Instant::now());
        let Some(k) = stages.iter().position(|&(_, end)| now_us < end) else { break };
        let (limit, end) = stages[k];
        while in_flight < limit {
            let release =
                Release { gate_us: Some(now_us), ..Release::new(next, now_us, now_us, Some(k as u32)) };
            stats.lateness_us.push(0);
            let delivery = Delivery::new(sink.clone(), &release, records.clone());
            let (execute, done) = (execute.clone(), done_tx.clone());
            let prefill = prefill.clone();
            tasks.spawn(async move {
                // A prefill slot, when capped, waited for in the request's own task: the request
                // is released (in flight for the loop), so a stop does not end the wait; a
                // cancelling stop ends the request as soon as it runs.
                delivery
                    .run(async move {
                        let release = match prefill.prefill.is_some() {
                            true => {
                                match pass_gates(&prefill, clock, release, &CancellationToken::new()).await {
                                    Ok((_, r)) | Err(r) => r,
                                }
                            }
                            false => release,
                        };
                        Box::pin(execute(release)).await
                    })
                    .await;
                let _ = done.send(());
            });
            in_flight += 1;
            next += 1;
        }
        tokio::select! {
            Some(()) = done_rx.recv() => {
                in_flight -= 1;
                while done_rx.try_recv().is_ok() {
                    in_flight -= 1;
                }
            }
            _ = tokio::time::sleep_until(clock.instant_at(end).into()) => {}
            _ = stop_wait.cancelled() => {}
        }
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    stats
}

#[cfg(test)]
#[path = "dispatch_prefill_tests.rs"]
mod prefill_tests;

#[cfg(test)]
#[path = "dispatch_pacing_tests.rs"]
mod pacing_tests;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use servebench_core::Outcome;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    pub(crate) fn record_for(r: &Release, outcome: Outcome) -> RequestRecord {
        let mut rec = RequestRecord::scheduled(r.index as u64, format!("r{}", r.index), r.intended_us, 1, 1);
        rec.outcome = outcome;
        rec
    }

    pub(crate) async fn collect(mut rx: mpsc::UnboundedReceiver<RequestRecord>) -> Vec<RequestRecord> {
        let mut v = Vec::new();
        while let Some(r) = rx.recv().await {
            v.push(r);
        }
        v
    }

    /// Runs `n` requests through a gate of 3 on a multi-threaded runtime (where the old gate
    /// let request 59 pass first); returns the order in which requests started.
    async fn gate_pass_order(offsets_us: Vec<u64>) -> Vec<usize> {
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let n = offsets_us.len();
        let plan = DispatchPlan {
            offsets_us: offsets_us.into(),
            max_concurrency: Some(3),
            max_prefill: None,
            prefill_waiting: None,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let _h = stop.clone();
        let o = order.clone();
        dispatch(
            &plan,
            RunClock::start(),
            move |r| {
                o.lock().unwrap().push(r.index);
                async move {
                    // Uneven service times so that completions interleave.
                    tokio::time::sleep(Duration::from_micros((r.index as u64 * 7919) % 1300)).await;
                    record_for(&r, Outcome::Completed)
                }
            },
            |r| record_for(&r, Outcome::Cancelled),
            tx,
            stop,
        )
        .await;
        assert_eq!(collect(rx).await.len(), n);
        let got = order.lock().unwrap().clone();
        got
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrency_gate_is_fifo_in_schedule_order() {
        // Closed loop (every arrival due at once) and a finite rate (one every 200 µs).
        let at_once = gate_pass_order(vec![0; 300]).await;
        assert_eq!(at_once, (0..300).collect::<Vec<_>>());
        let paced = gate_pass_order((0..300u64).map(|i| i * 200).collect()).await;
        assert_eq!(paced, (0..300).collect::<Vec<_>>());
    }

    /// Pins the gate time: at `--max-concurrency 3` the first requests used to show
    /// `dispatched_us` of request 2 before request 1 (each connect finishes when it finishes).
    /// The time a request passes the gate is taken by the gate itself, in queue order: over
    /// many runs on a multi-threaded runtime, with "connects" finishing in reverse order, it is
    /// non-decreasing in schedule order and never after the request's dispatch.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn gate_times_are_monotone_in_schedule_order_whatever_the_connects_do() {
        for run in 0..40u64 {
            let plan = DispatchPlan {
                offsets_us: vec![0; 12].into(),
                max_concurrency: Some(3),
                max_prefill: None,
                prefill_waiting: None,
            };
            let (tx, rx) = mpsc::unbounded_channel();
            let stop = CancellationToken::new();
            let _h = stop.clone();
            let clock = RunClock::start();
            dispatch(
                &plan,
                clock,
                move |r| async move {
                    // A "connect" that is longer for earlier requests: they start writing last.
                    let connect_us = (12 - r.index as u64) * 150 + (run * 37 + r.index as u64 * 91) % 200;
                    tokio::time::sleep(Duration::from_micros(connect_us)).await;
                    let mut rec = record_for(&r, Outcome::Completed);
                    rec.gate_us = r.gate_us;
                    rec.dispatched_us = Some(clock.now_us());
                    rec
                },
                |r| record_for(&r, Outcome::Cancelled),
                tx,
                stop,
            )
            .await;
            let mut recs = collect(rx).await;
            recs.sort_by_key(|r| r.index);
            let gates: Vec<u64> = recs.iter().map(|r| r.gate_us.expect("every request passed")).collect();
            assert!(gates.windows(2).all(|w| w[0] <= w[1]), "run {run}: {gates:?}");
            assert!(recs.iter().all(|r| r.gate_us <= r.dispatched_us), "run {run}");
        }
    }

    #[tokio::test]
    async fn every_request_yields_exactly_one_record() {
        let plan = DispatchPlan {
            offsets_us: (0..50u64).map(|i| i * 100).collect(),
            max_concurrency: Some(4),
            max_prefill: None,
            prefill_waiting: None,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let _h = stop.clone();
        let stats = dispatch(
            &plan,
            RunClock::start(),
            |r| async move { record_for(&r, Outcome::Completed) },
            |r| record_for(&r, Outcome::Cancelled),
            tx,
            stop,
        )
        .await;
        let mut recs = collect(rx).await;
        recs.sort_by_key(|r| r.index);
        assert_eq!(recs.len(), 50);
        assert!(recs.iter().enumerate().all(|(i, r)| r.index == i as u64 && r.outcome == Outcome::Completed));
        assert_eq!(stats.lateness_us.len(), 50);
    }

    #[tokio::test]
    async fn gate_bounds_concurrency() {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let plan = DispatchPlan {
            offsets_us: vec![0; 40].into(),
            max_concurrency: Some(3),
            max_prefill: None,
            prefill_waiting: None,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let _h = stop.clone();
        let (f, p) = (in_flight.clone(), peak.clone());
        dispatch(
            &plan,
            RunClock::start(),
            move |r| {
                let (f, p) = (f.clone(), p.clone());
                async move {
                    let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                    p.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    f.fetch_sub(1, Ordering::SeqCst);
                    record_for(&r, Outcome::Completed)
                }
            },
            |r| record_for(&r, Outcome::Cancelled),
            tx,
            stop,
        )
        .await;
        assert_eq!(collect(rx).await.len(), 40);
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn all_due_arrivals_are_released_in_one_wakeup() {
        // 20 arrivals at the same instant: all are released at the same time.
        let plan = DispatchPlan {
            offsets_us: vec![5_000; 20].into(),
            max_concurrency: None,
            max_prefill: None,
            prefill_waiting: None,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let _h = stop.clone();
        let stats = dispatch(
            &plan,
            RunClock::start(),
            |r| async move {
                let mut rec = record_for(&r, Outcome::Completed);
                rec.dispatched_us = Some(r.released_us);
                rec
            },
            |r| record_for(&r, Outcome::Cancelled),
            tx,
            stop,
        )
        .await;
        let recs = collect(rx).await;
        let first = recs[0].dispatched_us;
        assert!(recs.iter().all(|r| r.dispatched_us == first));
        let max_late = stats.lateness_us.iter().max().copied().unwrap_or(0);
        let min_late = stats.lateness_us.iter().min().copied().unwrap_or(0);
        assert_eq!(max_late, min_late);
    }

    #[tokio::test]
    async fn closed_loop_keeps_each_stage_concurrency_and_tags_the_stage() {
        // Stage 0: 2 in flight for 60 ms; stage 1: 6 in flight until 120 ms; requests take 5 ms.
        let stages = [(2usize, 60_000u64), (6, 120_000)];
        let in_flight = Arc::new(AtomicUsize::new(0));
        let peaks = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let _h = stop.clone();
        let (f, p) = (in_flight.clone(), peaks.clone());
        let clock = RunClock::start();
        let stats = dispatch_closed_loop(
            &stages,
            (None, None),
            clock,
            move |r| {
                let (f, p) = (f.clone(), p.clone());
                async move {
                    let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                    if let Some(peak) = r.stage.and_then(|s| p.get(s as usize)) {
                        peak.fetch_max(now, Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    f.fetch_sub(1, Ordering::SeqCst);
                    let mut rec = record_for(&r, Outcome::Completed);
                    rec.stage = r.stage;
                    rec
                }
            },
            |r| record_for(&r, Outcome::Cancelled),
            tx,
            stop,
        )
        .await;
        let recs = collect(rx).await;
        assert!(clock.now_us() >= 120_000, "runs until the last stage ends");
        assert_eq!(recs.len(), stats.lateness_us.len());
        let mut idx: Vec<u64> = recs.iter().map(|r| r.index).collect();
        idx.sort_unstable();
        assert_eq!(idx, (0..recs.len() as u64).collect::<Vec<_>>(), "one record per released request");
        let n0 = recs.iter().filter(|r| r.stage == Some(0)).count();
        let n1 = recs.iter().filter(|r| r.stage == Some(1)).count();
        // About 2 × 60 / 5 and 6 × 60 / 5 requests (timers are coarse: wide bounds).
        assert!((6..=30).contains(&n0) && n1 > n0, "{n0} {n1}");
        // Stage 1 may briefly run stage 0's requests too, but never more than its limit.
        assert_eq!(peaks[0].load(Ordering::SeqCst), 2);
        assert!(peaks[1].load(Ordering::SeqCst) <= 6 && peaks[1].load(Ordering::SeqCst) > 2);
    }

    #[tokio::test]
    async fn closed_loop_stops_releasing_on_stop() {
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let handle = stop.clone();
        handle.cancel();
        let stats = dispatch_closed_loop(
            &[(4, 10_000_000)],
            (None, None),
            RunClock::start(),
            |r| async move { record_for(&r, Outcome::Completed) },
            |r| record_for(&r, Outcome::Cancelled),
            tx,
            stop,
        )
        .await;
        assert!(stats.lateness_us.is_empty());
        assert!(collect(rx).await.is_empty());
    }

    #[tokio::test]
    async fn stop_cancels_the_rest_and_counts_add_up() {
        // The first request stops the run when it executes; the next is due a second later, so
        // the stop always comes before it (no race with a timer on a loaded host).
        let plan = DispatchPlan {
            offsets_us: (0..30u64).map(|i| i * 1_000_000).collect(),
            max_concurrency: Some(2),
            max_prefill: None,
            prefill_waiting: None,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let handle = stop.clone();
        let stats = dispatch(
            &plan,
            RunClock::start(),
            move |r| {
                if r.index == 0 {
                    handle.cancel();
                }
                async move { record_for(&r, Outcome::Completed) }
            },
            |r| record_for(&r, Outcome::Cancelled),
            tx,
            stop,
        )
        .await;
        let recs = collect(rx).await;
        assert_eq!(recs.len(), 30);
        let cancelled = recs.iter().filter(|r| r.outcome == Outcome::Cancelled).count();
        assert_eq!(cancelled, 29, "only the first request was released");
        assert_eq!(cancelled, stats.not_released);
        assert_eq!(stats.lateness_us.len() + stats.not_released, 30);
    }
}
