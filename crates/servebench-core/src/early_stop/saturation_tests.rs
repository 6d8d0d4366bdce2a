use super::*;

/// A run sampled once a second for `secs` seconds: `arrived(t)` due, `in_flight(t)` still
/// open, the service time `service_s`. Returns the first firing.
fn run(
    secs: u32,
    service_s: f64,
    arrived: impl Fn(f64) -> u64,
    in_flight: impl Fn(f64) -> u64,
) -> Option<SaturationEvidence> {
    run_with(SaturationConfig::default(), secs, |_| service_s, arrived, in_flight)
}

/// As [`run`], with the service time a function of time.
fn run_with(
    cfg: SaturationConfig,
    secs: u32,
    service_s: impl Fn(f64) -> f64,
    arrived: impl Fn(f64) -> u64,
    in_flight: impl Fn(f64) -> u64,
) -> Option<SaturationEvidence> {
    let mut d = SaturationStop::new(cfg);
    (0..=secs).find_map(|k| {
        let t = f64::from(k);
        let a = arrived(t);
        let finished = a - in_flight(t).min(a);
        d.observe(Sample { t_s: t, arrived: a, finished, service_s: Some(service_s(t)) })
    })
}

#[test]
fn slope_and_t_statistic_match_the_hand_computed_fit() {
    // x̄ = ȳ = 1.5, Sxx = 5, Sxy = 3: b = 0.6; residuals 0.4, -1.2, 1.2, -0.4: SSE = 3.2,
    // se = sqrt(3.2 / 2 / 5) = sqrt(0.32), t = 0.6 / 0.565685 = 1.06066.
    let (b, t) = slope_t(&[(0.0, 1.0), (1.0, 0.0), (2.0, 3.0), (3.0, 2.0)]).unwrap();
    assert!((b - 0.6).abs() < 1e-12);
    assert!((t - 0.6 / 0.32f64.sqrt()).abs() < 1e-12);
    assert_eq!(slope_t(&[(0.0, 0.0), (1.0, 2.0), (2.0, 4.0)]), Some((2.0, f64::INFINITY)));
    assert_eq!(slope_t(&[(0.0, 5.0), (1.0, 5.0), (2.0, 5.0)]), Some((0.0, 0.0)));
    assert_eq!(slope_t(&[(1.0, 0.0), (1.0, 2.0), (1.0, 4.0)]), None, "no spread in time");
    assert_eq!(slope_t(&[(0.0, 0.0), (1.0, 2.0)]), None, "under 3 points");
}

#[test]
fn a_stable_in_flight_count_never_fires() {
    assert_eq!(run(300, 2.0, |t| 10 * t as u64, |_| 20), None);
}

/// Arrivals 10/s, finishes 5/s: in flight = 5 t. The first full 30-s window is at t = 30 and
/// the test holds there, at 31 and at 32 (persist = 3): fires at 32, detected at 30, with the
/// slope 5/s, in flight 0 → 150, arrivals 10/s, finishes 5/s.
#[test]
fn linear_growth_fires_after_a_full_window_and_three_positive_tests() {
    let ev = run(100, 1.0, |t| 10 * t as u64, |t| 5 * t as u64).unwrap();
    assert_eq!(ev.detected_at_s, 30.0);
    assert_eq!(ev.window_s, 30.0);
    assert!((ev.in_flight_slope_per_s - 5.0).abs() < 1e-9);
    assert_eq!((ev.in_flight_start, ev.in_flight_end), (0, 150));
    assert_eq!((ev.arrival_rate, ev.finish_rate), (10.0, 5.0));
}

/// Warm-up: in flight ramps 0 → 20 in 10 s and stays. The window's first half may hold the
/// ramp but its second half is flat (slope 0), so the test never holds.
#[test]
fn a_warm_up_ramp_then_plateau_does_not_fire() {
    assert_eq!(run(300, 2.0, |t| 10 * t as u64, |t| (2 * t as u64).min(20)), None);
}

/// Long context (GuideLLM #606): each request takes 60 s of service, 1/s arrive, so in flight
/// climbs for a whole minute before the first finishes. The window widens to 4 × 60 s = 240 s,
/// the ramp is over long before its second half, and nothing fires.
#[test]
fn long_context_steady_state_does_not_fire() {
    assert_eq!(run(900, 60.0, |t| t as u64, |t| (t as u64).min(60)), None);
    let fixed = SaturationConfig { service_windows: 0.0, ..SaturationConfig::default() };
    let early = run_with(fixed, 900, |_| 60.0, |t| t as u64, |t| (t as u64).min(60));
    assert!(early.is_some(), "a fixed 30-s window would stop it: the widening is what holds");
}

/// A 60-s latency that saturates still fires, only later: in flight grows 0.5/s forever.
#[test]
fn long_context_saturation_fires_after_the_widened_window() {
    let ev = run(900, 60.0, |t| t as u64, |t| (t / 2.0) as u64).unwrap();
    assert_eq!(ev.window_s, 240.0);
    assert_eq!(ev.detected_at_s, 240.0);
}

/// Noise: in flight 20 ± 3 by a fixed pseudo-random sequence, never trending.
#[test]
fn noise_around_a_level_does_not_fire() {
    let noise = |t: f64| {
        let k = t as u64;
        let h = k.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) >> 33;
        17 + h % 7
    };
    assert_eq!(run(600, 2.0, |t| 10 * t as u64, noise), None);
}

/// A transient overload that drains: in flight grows 5/s up to t = 31, then falls to 20.
/// The test holds at t = 30 and 31 only — two, not three: no firing; with `persist` = 2 it
/// fires (so the run of three is what kept it quiet).
#[test]
fn growth_must_persist_for_three_consecutive_tests() {
    let in_flight = |t: f64| if t <= 31.0 { 5 * t as u64 } else { 20 };
    assert_eq!(run(200, 1.0, |t| 10 * t as u64, in_flight), None);
    let two = SaturationConfig { persist: 2, ..SaturationConfig::default() };
    let ev = run_with(two, 200, |_| 1.0, |t| 10 * t as u64, in_flight).unwrap();
    assert_eq!(ev.detected_at_s, 30.0);
}

/// 4× capacity: the server finishes 2/s, 8/s arrive, in flight = 6 t, each request is served
/// in 1 s. A request finishing at t arrived at t/4 and waited 3t/4, so the mean latency of the
/// finished is about 3t/8 + 1 and 4 mean latencies = 1.5 t + 4 > t: a window widened by latency
/// is never full and the detector never fired (the defect). Widened by the 1-s service time
/// the window is 30 s: the test holds at 30, 31, 32 and fires, detected at 30, slope 6/s,
/// in flight 0 → 180, arrivals 8/s, finishes 2/s.
#[test]
fn four_times_capacity_fires_after_one_window_when_widened_by_service_time() {
    let (arrived, in_flight) = (|t: f64| 8 * t as u64, |t: f64| 6 * t as u64);
    let ev = run(300, 1.0, arrived, in_flight).unwrap();
    assert_eq!((ev.detected_at_s, ev.window_s), (30.0, 30.0));
    assert!((ev.in_flight_slope_per_s - 6.0).abs() < 1e-9);
    assert_eq!((ev.in_flight_start, ev.in_flight_end), (0, 180));
    assert_eq!((ev.arrival_rate, ev.finish_rate), (8.0, 2.0));
    let mean_latency = |t: f64| 3.0 * t / 8.0 + 1.0;
    let by_latency = run_with(SaturationConfig::default(), 300, mean_latency, arrived, in_flight);
    assert_eq!(by_latency, None, "widened by the growing latency the window is never full");
}

/// Pins the noise floor of the backlog: at 5 requests/s (a quarter of capacity), a 1-s window
/// (`--saturation-window 1`) sampled every 50 ms sees in flight step from 1 to 2 — 3 arrivals to
/// 2 finishes, a growth of one request, steady for long enough to give a large t — and fired
/// (SB143 "saturated from 5.3 s"). An excess of 1 over 3 arrivals is within the arrivals' own
/// Poisson noise (3 σ = 5.2): no test holds. A real backlog in the same window still fires.
#[test]
fn a_backlog_within_the_arrivals_noise_does_not_fire() {
    let cfg = SaturationConfig { window_s: 1.0, ..SaturationConfig::default() };
    let sampled = |arrived: &dyn Fn(f64) -> u64, in_flight: &dyn Fn(f64) -> u64| {
        let mut d = SaturationStop::new(cfg);
        (0..=200).find_map(|k| {
            let t = f64::from(k) * 0.05;
            let a = arrived(t);
            let finished = a - in_flight(t).min(a);
            d.observe(Sample { t_s: t, arrived: a, finished, service_s: Some(0.2) })
        })
    };
    // 5/s; in flight steps from 1 to 2 at 5 s and stays there.
    let chance = sampled(&|t| 5 + (5.0 * t) as u64, &|t| if t < 5.0 { 1 } else { 2 });
    assert_eq!(chance, None);
    // 100/s arriving, 40/s finishing: the backlog grows by 60 a second.
    let real = sampled(&|t| (100.0 * t) as u64, &|t| (60.0 * t) as u64);
    assert!(real.is_some());
}

/// Why `--detect-saturation` is refused with a ramp-up (SB121): a rate that grows keeps more
/// requests in flight below capacity too (Little's law, in flight = rate × service time), and
/// the detector reads that growth as saturation. A linear ramp 1 → 100 req/s over 60 s on a
/// server of unbounded capacity (every request takes 4 s, whatever the load) fires.
#[test]
fn a_ramp_below_capacity_fires_so_a_ramp_is_no_schedule_to_test() {
    let arrived = |t: f64| t + 99.0 / 120.0 * t * t;
    let ev = run(60, 4.0, |t| arrived(t) as u64, |t| (arrived(t) - arrived((t - 4.0).max(0.0))) as u64);
    assert!(ev.is_some(), "the ramp's own growth reads as saturation");
}
