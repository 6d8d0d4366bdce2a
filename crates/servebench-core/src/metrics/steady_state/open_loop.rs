//! Open loop: the window where the arrival and completion rates agree (docs/metrics.md,
//! "Steady state").
//!
//! - **Warm-up.** A run starts empty, so completions lag arrivals. For a stationary system fed at
//!   rate λ from `t0`, the completion rate at `t0 + x` is `λ · F(x)`, `F` the distribution of the
//!   time in system (dispatch → end): completions reach `threshold × λ` at `x = Q(threshold)`,
//!   the threshold-quantile of the time in system. `F` is taken from the requests dispatched in
//!   the first half of the arrivals — the ones that shape the warm-up; if the server falls
//!   behind, the later requests' times in system grow without bound and would push the start
//!   past the run. Window start = `t0 + Q`. If completions have not caught up by the middle of
//!   the arrivals (`Q` longer than half the arrival span), the run is mostly warm-up or
//!   backlog: no window.
//! - **Drain.** After the last arrival the arrival rate is 0: window end = the last dispatch.
//! - **Agreement.** Over `[start, end)`, with `A` arrivals and `D` ends (any outcome), the
//!   in-flight count changes by `A − D`. In a steady state that change is noise: the difference
//!   of two in-flight counts, each Poisson-like with mean `N̄` (the window's mean in flight), so
//!   its standard deviation is `σ = √(2·N̄)`, whatever the window's length; in an overload it
//!   grows with the window. The threshold tolerates a shortfall of `(1 − threshold)·A`. With
//!   `z = 2` (one-sided, about 2.3 % of false alarms):
//!   - `A − D > (1 − threshold)·A + z·σ`: completions clearly fell behind (overload): no window;
//!   - `z·σ > (1 − threshold)·A`: the noise alone exceeds the tolerance, so the window cannot
//!     tell a steady state from an overload (too few requests): no window. It needs
//!     `A ≥ z·σ / (1 − threshold)` arrivals.

use super::flow::mean_in_flight;

/// The window the rates agree over, with the measured rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct OpenWindow {
    pub start: u64,
    pub end: u64,
    /// The warm-up `Q` (µs).
    pub warmup_us: u64,
    pub arrivals: u64,
    pub departures: u64,
    pub in_flight_mean: f64,
}

/// Standard deviations of the stationary noise in `A − D` a window may show (one-sided).
const Z: f64 = 2.0;

/// Nearest-rank quantile (`⌈q·n⌉`-th smallest) of a non-empty slice.
pub(super) fn quantile(values: &mut [u64], q: f64) -> u64 {
    values.sort_unstable();
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// The open-loop window over every dispatched request's `[dispatched, end)`; `Err` says why
/// there is none.
pub(super) fn window(intervals: &[(u64, u64)], threshold: f64) -> Result<OpenWindow, String> {
    if intervals.len() < 2 {
        return Err("fewer than 2 requests were sent".into());
    }
    let t0 = intervals.iter().map(|i| i.0).min().unwrap_or(0);
    let last = intervals.iter().map(|i| i.0).max().unwrap_or(0);
    let half = t0 + (last - t0) / 2;
    let mut early: Vec<u64> =
        intervals.iter().filter(|i| i.0 <= half).map(|i| i.1.saturating_sub(i.0)).collect();
    let warmup_us = quantile(&mut early, threshold);
    let start = t0.saturating_add(warmup_us);
    if start > half {
        return Err(format!(
            "completions had not caught up with arrivals halfway through them (p{:.0} time in system \
             of the first half {:.3} s > {:.3} s): the server is overloaded at this rate, or the run \
             is too short",
            threshold * 100.0,
            warmup_us as f64 / 1e6,
            (half - t0) as f64 / 1e6
        ));
    }
    let within = |t: u64| t >= start && t < last;
    let arrivals = intervals.iter().filter(|i| within(i.0)).count() as u64;
    let departures = intervals.iter().filter(|i| within(i.1)).count() as u64;
    let in_flight_mean = mean_in_flight(intervals, start, last);
    let growth = arrivals as f64 - departures as f64;
    let tolerance = (1.0 - threshold) * arrivals as f64;
    let noise = Z * (2.0 * in_flight_mean).sqrt();
    let dur = (last - start) as f64 / 1e6;
    if growth > tolerance + noise {
        return Err(format!(
            "completions did not keep up with arrivals ({:.2} vs {:.2} req/s after the {:.3}-s warm-up; \
             in flight grew by {growth:.0} over the window, more than the {tolerance:.1} tolerated plus \
             {noise:.1} of noise): the server is overloaded at this rate",
            departures as f64 / dur,
            arrivals as f64 / dur,
            warmup_us as f64 / 1e6
        ));
    }
    if noise > tolerance && threshold >= 1.0 {
        return Err(format!(
            "too few requests to tell a steady state from an overload: --steady-state-threshold 1 \
             tolerates no shortfall, and the window's in-flight count varies by {noise:.1}; use a \
             threshold below 1"
        ));
    }
    if noise > tolerance {
        return Err(format!(
            "too few requests to tell a steady state from an overload: the window ({dur:.2} s, \
             {arrivals} arrivals vs {departures} completions, {in_flight_mean:.1} in flight) needs at \
             least {} arrivals for its noise ({noise:.1}) to be within the {:.0} % tolerance; send \
             more requests (--num-prompts)",
            (noise / (1.0 - threshold)).ceil(),
            (1.0 - threshold) * 100.0
        ));
    }
    Ok(OpenWindow { start, end: last, warmup_us, arrivals, departures, in_flight_mean })
}
