//! Both definitions pinned on hand-built record sets with hand-computed windows and rates
//! (docs/metrics.md, "Steady state").

use super::*;
use crate::record::Outcome;

/// A request of 1 s (dispatch → done), first token after 100 ms, 10 tokens every 100 ms.
fn req(index: u64, dispatched: u64, dur: u64) -> RequestRecord {
    let mut r = RequestRecord::scheduled(index, format!("r{index}"), dispatched, 10, 10);
    r.dispatched_us = Some(dispatched);
    r.first_token_us = Some(dispatched + 100_000);
    let gap = ((dur - 100_000) / 9) as u32;
    r.token_events.gaps_us = vec![gap; 9];
    r.last_token_us = Some(dispatched + 100_000 + 9 * u64::from(gap));
    r.done_us = Some(dispatched + dur);
    r.token_event_count = 10;
    r.completion_tokens = Some(10);
    r.outcome = Outcome::Completed;
    r
}

/// Closed loop with 4 slots: ramp-up (one slot opens every 1 s for the first 3 s), 20 s
/// at 4 in flight, then drain (slots close one per second). Requests last 1 s each.
fn closed_loop_records() -> Vec<RequestRecord> {
    let mut out = Vec::new();
    let mut idx = 0;
    for slot in 0..4u64 {
        // Slot `slot` is busy over [slot, 20 + slot) s: ramp-up 0..3 s, drain 20..23 s.
        let start = slot * 1_000_000;
        let end = (20 + slot) * 1_000_000;
        let mut t = start;
        while t < end {
            out.push(req(idx, t, 1_000_000));
            idx += 1;
            t += 1_000_000;
        }
    }
    out
}

fn cfg(mode: LoadMode) -> SteadyStateConfig {
    SteadyStateConfig {
        mode,
        threshold: 0.95,
        min_window_s: None,
        percentiles: vec![50.0, 99.0],
        selected: vec![MetricName::Ttft, MetricName::E2el],
    }
}

#[test]
fn closed_loop_window_excludes_ramp_up_and_drain() {
    let recs = closed_loop_records();
    let mut c = cfg(LoadMode::ClosedLoop { target_concurrency: 4 });
    c.threshold = 1.0;
    let s = steady_state(&recs, &c).unwrap();
    // All 4 slots busy from 3 s (slot 3 opens) until 20 s (slot 0 closes); with threshold 1
    // the smoothed signal (W = 23 s / 20 = 1.15 s) is at 4 exactly when its whole window is
    // inside [3, 20): from 3 + W/2 to 20 − W/2, on the W/10 grid.
    assert!((s.start_s - 3.575).abs() <= 0.115 + 1e-9, "{}", s.start_s);
    assert!((s.end_s - 19.425).abs() <= 0.115 + 1e-9, "{}", s.end_s);
    assert_eq!(s.threshold_abs, 4.0);
    assert_eq!(s.observed_peak, 4);
    // Every request starts and ends on a whole second: the window [~3.6, ~19.4) holds the
    // starts and ends at 4..=19 s: 16 per slot.
    assert_eq!(s.requests_started_in_window, 64);
    assert_eq!(s.requests_completed_in_window, 64);
    assert!((s.input_throughput - 640.0 / s.duration_s).abs() < 1e-9);
    let (m, ttft) = &s.metrics[0];
    assert_eq!(*m, MetricName::Ttft);
    assert_eq!(ttft.percentiles, vec![(50.0, 100.0), (99.0, 100.0)]);
    assert_eq!(s.metrics[1].1.mean, 1000.0);
    assert!(s.warning.is_none(), "17 s of 23 s is not short");
}

#[test]
fn longest_stretch_wins_over_first_to_last_crossing() {
    // 4 in flight during [0,5) and [6,16); a gap with 3 in flight during [5,6).
    let mut recs = Vec::new();
    for i in 0..3 {
        recs.push(req(i, 0, 16_000_000));
    }
    recs.push(req(3, 0, 5_000_000));
    recs.push(req(4, 6_000_000, 10_000_000));
    let mut c = cfg(LoadMode::ClosedLoop { target_concurrency: 4 });
    c.min_window_s = Some(5.0);
    let s = steady_state(&recs, &c).unwrap();
    // W = 0.8 s: the 1-s dip at 3 in flight drops the average to 3 < 3.8.
    assert!(s.start_s > 6.0 && s.start_s < 6.5, "{}", s.start_s);
    assert!((s.end_s - 16.0).abs() < 0.5, "{}", s.end_s);
    assert!(s.warning.is_none());
}

#[test]
fn hand_off_gaps_do_not_split_a_closed_loop_window() {
    // 2 slots, back-to-back requests of 100 ms with a 1 ms hand-off gap, for 10 s.
    let mut recs = Vec::new();
    for slot in 0..2u64 {
        for k in 0..99u64 {
            recs.push(req(slot * 1000 + k, slot * 50_000 + k * 101_000, 100_000));
        }
    }
    let s = steady_state(&recs, &cfg(LoadMode::ClosedLoop { target_concurrency: 2 })).unwrap();
    assert!(s.duration_s > 9.0, "{s:?}");
}

// ---- open loop -------------------------------------------------------------------------------

fn approx(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// Issue 15.1: smooth open loop. Arrivals every 100 ms (10/s) for 60 s, each lasting 2 s.
#[test]
fn open_loop_steady_state_is_where_arrival_and_completion_rates_agree() {
    let recs: Vec<RequestRecord> = (0..600).map(|i| req(i, i * 100_000, 2_000_000)).collect();
    let s = steady_state(&recs, &cfg(LoadMode::OpenLoop)).unwrap();
    // Warm-up: every time in system is 2 s, so completions reach the arrival rate at 2 s (the
    // first completion). Drain: after the last arrival, 59.9 s.
    assert!(approx(s.start_s, 2.0) && approx(s.end_s, 59.9), "{} → {}", s.start_s, s.end_s);
    // [2.0, 59.9): arrivals 20..=598 (579), ends at 2.0 + 0.1·i for i = 0..=578 (579).
    assert_eq!(s.requests_started_in_window, 579);
    assert_eq!(s.requests_completed_in_window, 579);
    assert!(approx(s.arrival_rate, 10.0) && approx(s.completion_rate, 10.0), "{s:?}");
    assert!(approx(s.request_throughput, 10.0), "{}", s.request_throughput);
    assert!(approx(s.input_throughput, 100.0), "{}", s.input_throughput);
    assert!(approx(s.in_flight_mean, 20.0), "{}", s.in_flight_mean);
    assert!(approx(s.reference, 10.0) && approx(s.threshold_abs, 9.5));
    assert_eq!(s.observed_peak, 20);
    assert!(s.warning.is_none());
}

/// Bursts of 5 requests every second (0..=9 s), each lasting 0.3 s.
#[test]
fn open_loop_bursty_arrivals_window_runs_from_warm_up_to_last_burst() {
    let recs: Vec<RequestRecord> = (0..50).map(|i| req(i, (i / 5) * 1_000_000, 300_000)).collect();
    let s = steady_state(&recs, &cfg(LoadMode::OpenLoop)).unwrap();
    assert!(approx(s.start_s, 0.3) && approx(s.end_s, 9.0), "{} → {}", s.start_s, s.end_s);
    // [0.3, 9.0): the bursts at 1..=8 s arrive (40), the bursts at 0..=8 s end (45).
    assert_eq!(s.requests_started_in_window, 40);
    assert_eq!(s.requests_completed_in_window, 45);
    assert!(approx(s.arrival_rate, 40.0 / 8.7) && approx(s.request_throughput, 45.0 / 8.7), "{s:?}");
    // In flight: 5 during 0.3 s of every second.
    assert!(approx(s.in_flight_mean, 5.0 * 0.3 * 8.0 / 8.7), "{}", s.in_flight_mean);
}

/// Overload: 10 arrivals/s, one server finishing one request per 200 ms (5/s), first in first out.
#[test]
fn open_loop_overload_has_no_window_and_says_why() {
    let recs: Vec<RequestRecord> = (0..100)
        .map(|i| {
            let end = 200_000 * (i + 1);
            req(i, i * 100_000, end - i * 100_000)
        })
        .collect();
    // Times in system 0.1·i + 0.2 s; the first half (i ≤ 49) gives the p95 (48th of 50) 4.9 s,
    // just inside half the arrival span (4.95 s).
    // Over [4.9, 9.9): 50 arrivals (i = 49..=98), 25 ends (i + 1 = 25..=49): in flight grew by
    // 25 > 5 % of 50 + 2·√(2·N̄) with N̄ ≈ 37.
    let e = steady_state(&recs, &cfg(LoadMode::OpenLoop)).unwrap_err();
    assert_eq!(e.mode, LoadMode::OpenLoop);
    assert!(e.reason.contains("overloaded") && e.reason.contains("5.00 vs 10.00 req/s"), "{}", e.reason);
}

#[test]
fn open_loop_run_shorter_than_its_warm_up_has_no_window() {
    let recs: Vec<RequestRecord> = (0..3).map(|i| req(i, i * 100_000, 1_000_000)).collect();
    let e = steady_state(&recs, &cfg(LoadMode::OpenLoop)).unwrap_err();
    assert!(e.reason.contains("had not caught up") && e.reason.contains("1.000 s > 0.100 s"), "{}", e.reason);
}

/// Strong overload: 10 arrivals/s, one request per 400 ms (2.5/s). Completions have not caught
/// up by the middle of the arrivals: no window (a 0.26-s "window" at the end before this rule).
#[test]
fn open_loop_strong_overload_has_no_window() {
    let recs: Vec<RequestRecord> =
        (0..100).map(|i| req(i, i * 100_000, 400_000 * (i + 1) - i * 100_000)).collect();
    // First half i ≤ 49: times in system 0.3·i + 0.4 s, p95 = 14.5 s > 4.95 s.
    let e = steady_state(&recs, &cfg(LoadMode::OpenLoop)).unwrap_err();
    assert!(e.reason.contains("14.500 s > 4.950 s") && e.reason.contains("overloaded"), "{}", e.reason);
}

#[test]
fn no_completed_request_has_no_window() {
    let mut r = req(0, 0, 1_000_000);
    r.outcome = Outcome::Failed;
    let e = steady_state(&[r], &cfg(LoadMode::OpenLoop)).unwrap_err();
    assert_eq!(e.reason, "no request completed");
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A smooth open loop below capacity (every request is served in 50–500 ms whatever the
        /// load): the steady window exists and its throughput is the offered rate.
        #[test]
        fn smooth_open_loop_steady_throughput_is_the_offered_rate(
            rate in 2.0f64..40.0,
            run_s in 10.0f64..30.0,
            seed in any::<u64>(),
        ) {
            let n = (rate * run_s) as u64;
            let gap = 1e6 / rate;
            let mut x = seed | 1;
            let mut next = || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
            let recs: Vec<RequestRecord> = (0..n).map(|i| {
                let jitter = (next() % 600) as f64 / 1000.0 - 0.3; // ±30 % of a gap
                let at = ((i as f64 + jitter).max(0.0) * gap) as u64;
                req(i, at, 150_000 + next() % 350_000)
            }).collect();
            let s = steady_state(&recs, &cfg(LoadMode::OpenLoop));
            prop_assert!(s.is_ok(), "{:?}", s.err());
            let s = s.unwrap();
            prop_assert!(s.start_s <= 0.5 + 1e-9, "warm-up {} s > the longest time in system", s.start_s);
            prop_assert!((s.request_throughput - rate).abs() <= 0.15 * rate,
                "steady {} req/s vs offered {rate}", s.request_throughput);
            prop_assert!((s.arrival_rate - rate).abs() <= 0.1 * rate);
        }
    }
}
