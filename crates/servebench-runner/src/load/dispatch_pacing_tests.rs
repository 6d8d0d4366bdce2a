//! How the dispatcher paces a schedule when it falls behind: at each wake-up it releases
//! exactly the arrivals that are due by then (catch-up to the schedule, never ahead of it), and
//! each release carries the time it really left, so its lateness is recorded, not hidden.

use super::*;
use servebench_core::Outcome;
use std::time::Duration;

/// Runs `offsets_us` unbounded; the executor of request `stall_at` blocks the dispatcher's
/// thread for `stall` (a client that cannot keep up). Returns `(intended_us, released_us)` in
/// schedule order.
async fn paced(offsets_us: Vec<u64>, stall_at: usize, stall: Duration) -> Vec<(u64, u64)> {
    let n = offsets_us.len();
    let plan = DispatchPlan {
        offsets_us: offsets_us.into(),
        max_concurrency: None,
        max_prefill: None,
        prefill_waiting: None,
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let _keep = stop.clone();
    let record = |r: &Release, outcome| {
        let mut rec = RequestRecord::scheduled(r.index as u64, format!("r{}", r.index), r.intended_us, 1, 1);
        rec.outcome = outcome;
        rec.gate_us = Some(r.released_us);
        rec
    };
    let stats = dispatch(
        &plan,
        RunClock::start(),
        move |r| {
            if r.index == stall_at {
                std::thread::sleep(stall);
            }
            let rec = record(&r, Outcome::Completed);
            async move { rec }
        },
        move |r| record(&r, Outcome::Cancelled),
        tx,
        stop,
    )
    .await;
    let mut recs = Vec::new();
    while let Some(r) = rx.recv().await {
        recs.push(r);
    }
    assert_eq!(recs.len(), n);
    assert_eq!(stats.lateness_us.len(), n);
    recs.sort_by_key(|r| r.index);
    recs.iter().map(|r| (r.intended_us, r.gate_us.expect("released"))).collect()
}

/// The logic-level pacing invariant over `(intended, released)` pairs in schedule order: no
/// request leaves before it is due, and every wake-up (one release time) releases every
/// arrival due by then that is still waiting, and none that is not due.
fn check_releases_follow_the_schedule(pairs: &[(u64, u64)]) {
    let mut i = 0;
    while i < pairs.len() {
        let wake = pairs[i].1;
        let batch = pairs[i..].iter().take_while(|p| p.1 == wake).count();
        for &(intended, released) in &pairs[i..i + batch] {
            assert!(released >= intended, "released {released} before due {intended}");
        }
        if let Some(&(next_due, _)) = pairs.get(i + batch) {
            assert!(next_due > wake, "request due at {next_due} was left behind by the wake-up at {wake}");
        }
        i += batch;
    }
}

#[tokio::test]
async fn a_dispatcher_that_falls_behind_catches_up_to_the_schedule_and_never_ahead_of_it() {
    // One request every ms; request 5 stalls the dispatcher 20 ms: when it wakes, requests
    // 6 to at least 25 are overdue and leave together, the rest one at a time as they fall due.
    let offsets: Vec<u64> = (1..=300u64).map(|k| k * 1_000).collect();
    let stall = Duration::from_millis(20);
    let pairs = paced(offsets.clone(), 5, stall).await;
    check_releases_follow_the_schedule(&pairs);
    // The first wake-up after the stall (it began after request 5's release time)...
    let stalled_at = pairs[5].1;
    let j = pairs.iter().position(|p| p.1 > stalled_at).expect("requests after the stall");
    let woke = pairs[j].1;
    assert!(woke - stalled_at >= stall.as_micros() as u64, "{stalled_at} → {woke}");
    // ...releases together every arrival that fell due during the stall (a burst the
    // schedule asks for), and their lateness is kept.
    let batch = pairs[j..].iter().take_while(|p| p.1 == woke).count();
    let due_in_stall = offsets.iter().filter(|&&o| o > stalled_at && o <= stalled_at + 20_000).count();
    assert!(batch >= due_in_stall && due_in_stall > 1, "batch {batch}, due during the stall {due_in_stall}");
    assert!(pairs[j].1 - pairs[j].0 >= woke - stalled_at - 1_000, "{:?}", pairs[j]);
}

#[tokio::test]
async fn an_undisturbed_schedule_releases_nothing_early_and_leaves_nothing_due_behind() {
    let offsets: Vec<u64> = (0..200u64).map(|k| k * 250).collect();
    let pairs = paced(offsets, usize::MAX, Duration::ZERO).await;
    check_releases_follow_the_schedule(&pairs);
}
