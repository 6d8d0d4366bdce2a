//! The prefill gate of the dispatcher (`--max-prefill-concurrency`): never more than its cap of
//! requests hold a slot, and every path — first token then end, end without a token, a stop
//! while requests wait — gives every slot back; and the live view's count of requests waiting
//! for a slot follows them and is back at 0 at the end.

use super::*;
use proptest::prelude::*;
use servebench_core::Outcome;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What one request does with its slot.
#[derive(Debug, Clone, Copy)]
enum Path {
    /// Yields, "receives its first token" (frees the slot), yields again, completes.
    TokenThenEnd(u8, u8),
    /// Yields, then fails without a token (the slot goes with the request).
    FailWithoutToken(u8),
    /// Stops the run (requests still waiting end cancelled), then ends without a token.
    StopRun(u8),
}

fn path() -> impl Strategy<Value = Path> {
    prop_oneof![
        6 => (0u8..4, 0u8..4).prop_map(|(a, b)| Path::TokenThenEnd(a, b)),
        3 => (0u8..4).prop_map(Path::FailWithoutToken),
        1 => (0u8..4).prop_map(Path::StopRun),
    ]
}

async fn yields(n: u8) {
    for _ in 0..n {
        tokio::task::yield_now().await;
    }
}

fn record_for(r: &Release, outcome: Outcome) -> RequestRecord {
    let mut rec = RequestRecord::scheduled(r.index as u64, format!("r{}", r.index), r.intended_us, 1, 1);
    rec.outcome = outcome;
    rec.prefill_wait_us = r.prefill.as_ref().map(|p| p.wait_us);
    rec
}

/// Runs `paths` (one request each, all due at once) through the gates; returns the records,
/// the most slots held at once, and the slots free at the end (`None`: no request got one).
/// Checks that no request is counted as waiting for a slot at the end.
fn run(
    paths: Vec<Path>,
    concurrency: Option<usize>,
    prefill: usize,
) -> (Vec<RequestRecord>, usize, Option<usize>) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
    rt.block_on(async move {
        let n = paths.len();
        let plan = DispatchPlan {
            offsets_us: vec![0; n].into(),
            max_concurrency: concurrency,
            max_prefill: Some(prefill),
            prefill_waiting: Some(Arc::default()),
        };
        let waiting = plan.prefill_waiting.clone().expect("counted");
        let (tx, mut rx) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let holding = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let sem: Arc<Mutex<Option<Arc<Semaphore>>>> = Arc::default();
        let (h, p, s, st) = (holding.clone(), peak.clone(), sem.clone(), stop.clone());
        let paths = Arc::new(paths);
        dispatch(
            &plan,
            RunClock::start(),
            move |mut r: Release| {
                let (h, p, st, path) = (h.clone(), p.clone(), st.clone(), paths[r.index]);
                let slot = r.prefill.take().expect("every request that runs holds a prefill slot");
                s.lock().unwrap().get_or_insert_with(|| slot.permit.semaphore().clone());
                let now = h.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                let wait = Some(slot.wait_us);
                async move {
                    let rec = |o| RequestRecord { prefill_wait_us: wait, ..record_for(&r, o) };
                    match path {
                        Path::TokenThenEnd(a, b) => {
                            yields(a).await;
                            h.fetch_sub(1, Ordering::SeqCst);
                            drop(slot);
                            yields(b).await;
                            rec(Outcome::Completed)
                        }
                        Path::FailWithoutToken(a) => {
                            yields(a).await;
                            h.fetch_sub(1, Ordering::SeqCst);
                            drop(slot);
                            rec(Outcome::Failed)
                        }
                        Path::StopRun(a) => {
                            st.cancel();
                            yields(a).await;
                            h.fetch_sub(1, Ordering::SeqCst);
                            drop(slot);
                            rec(Outcome::Cancelled)
                        }
                    }
                }
            },
            |r| record_for(&r, Outcome::Cancelled),
            tx,
            stop,
        )
        .await;
        let mut recs = Vec::new();
        while let Some(r) = rx.recv().await {
            recs.push(r);
        }
        let free = sem.lock().unwrap().as_ref().map(|s| s.available_permits());
        assert_eq!(waiting.now(), 0, "nobody waits for a slot once the run is over");
        (recs, peak.load(Ordering::SeqCst), free)
    })
}

proptest! {
    #[test]
    fn prefill_slots_are_bounded_and_every_path_gives_its_slot_back(
        paths in prop::collection::vec(path(), 1..40),
        concurrency in prop::option::of(1usize..8),
        prefill in 1usize..5,
    ) {
        let n = paths.len();
        let prefill = concurrency.map_or(prefill, |c| prefill.min(c));
        let (recs, peak, free) = run(paths, concurrency, prefill);
        prop_assert_eq!(recs.len(), n, "one record per request");
        prop_assert!(peak <= prefill, "{} slots held at once, cap {}", peak, prefill);
        prop_assert_eq!(free, Some(prefill), "every slot is free at the end");
        // A request that ran waited a measured time; one stopped while waiting has no wait.
        prop_assert!(recs.iter().all(|r| r.outcome == Outcome::Cancelled || r.prefill_wait_us.is_some()));
    }
}

#[test]
fn prefill_cap_binds_when_requests_hold_their_slots() {
    // 12 requests due at once, each holding its slot over a few yields: the cap of 3 is reached
    // (not a no-op) and never passed; without a concurrency cap the prefill gate alone orders them.
    let paths = vec![Path::TokenThenEnd(3, 1); 12];
    let (recs, peak, free) = run(paths, None, 3);
    assert_eq!((recs.len(), peak, free), (12, 3, Some(3)));
    assert!(recs.iter().all(|r| r.outcome == Outcome::Completed));
}

#[test]
fn prefill_waiting_counts_the_requests_held_back_by_the_prefill_cap() {
    // 5 requests due at once, a cap of 1 slot: while the first holds it, the gate's head and
    // the 3 releases queued behind it wait for a slot (4); once it ends every request gets one
    // in turn and nobody waits at the end.
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
    rt.block_on(async {
        let waiting: Arc<PrefillWaiting> = Arc::default();
        let plan = DispatchPlan {
            offsets_us: vec![0; 5].into(),
            max_concurrency: Some(8),
            max_prefill: Some(1),
            prefill_waiting: Some(waiting.clone()),
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let w = waiting.clone();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        dispatch(
            &plan,
            RunClock::start(),
            move |r: Release| {
                let (w, s) = (w.clone(), s.clone());
                async move {
                    if r.index == 0 {
                        // Wait (by yielding, no clock) until the others have queued up.
                        for _ in 0..10_000 {
                            if w.now() == 4 {
                                break;
                            }
                            tokio::task::yield_now().await;
                        }
                        s.lock().unwrap().push(w.now());
                    }
                    record_for(&r, Outcome::Completed)
                }
            },
            |r| record_for(&r, Outcome::Cancelled),
            tx,
            CancellationToken::new(),
        )
        .await;
        let mut n = 0;
        while rx.recv().await.is_some() {
            n += 1;
        }
        assert_eq!(n, 5);
        assert_eq!(*seen.lock().unwrap(), vec![4]);
        assert_eq!(waiting.now(), 0);
    });
}

#[test]
fn no_prefill_cap_counts_nothing() {
    // A counter handed to a plan without a prefill cap is never touched.
    let waiting: Arc<PrefillWaiting> = Arc::default();
    let plan = DispatchPlan {
        offsets_us: vec![0; 3].into(),
        max_concurrency: Some(1),
        max_prefill: None,
        prefill_waiting: Some(waiting.clone()),
    };
    assert!(Gates::of(&plan).waiting.is_none());
}
