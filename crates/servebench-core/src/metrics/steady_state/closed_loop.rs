//! Closed loop: the window where the requests in flight sit at the concurrency cap, bounded by
//! request ends a whole number of turnovers apart (docs/metrics.md, "Steady state").
//!
//! 1. **The cap.** The signal is the number of completed requests in flight (`[dispatched, end)`,
//!    ends before starts at equal times), averaged over a centred sliding window of
//!    `W = run / 20` (at least 1 ms) and evaluated every `W / 10`: the averaging keeps the
//!    hand-off between one request's end and the next one's dispatch (µs to ms) from splitting
//!    the stretch. The cap held over the **longest** stretch `[a, b)` where the signal is at or
//!    above `threshold × K`, `K = min(C, completed)` (vllm-bench: exact count, first up-crossing
//!    to last down-crossing, dips included).
//! 2. **The window.** In a closed loop every end frees a slot for the next dispatch, and nothing
//!    can end before one time in system has passed, so a window that opens at the first
//!    dispatch counts the warm-up's missing completions as low throughput. The window is
//!    bounded by request ends (any outcome) at the cap, `e_1 ≤ e_2 ≤ …` in `[a, min(b, last
//!    dispatch)]` (after the last dispatch an end is not replaced: drain). It opens after `e_K`
//!    (one turnover of the `K` slots after the cap is reached: warm-up) and closes after
//!    `e_{K + m·K}`, the most whole turnovers `m ≥ 1` that fit; "after" = at the first instant
//!    every slot is filled again (`min(C, requests)` in flight), when the slots freed so far
//!    have been handed on (or at the end itself when they are not before the next end). Filled slots at both ends make the window's arrivals equal its ends
//!    (in flight changes by `A − D`); whole turnovers keep both ends at the same phase of the
//!    loop, so the tokens in flight at the two ends balance and the window's request and token
//!    throughput agree. Fewer than `2·K` ends at the cap: no window.

use super::flow::{in_flight_steps, integral};

/// Longest maximal stretch `[start, end)` where `level ≥ threshold` on a step function.
fn longest_stretch(steps: &[(u64, f64)], threshold: f64) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64)> = None;
    let mut open: Option<u64> = None;
    for &(t, level) in steps {
        match (open, level >= threshold) {
            (None, true) => open = Some(t),
            (Some(s), false) => {
                if best.is_none_or(|(bs, be)| t - s > be - bs) {
                    best = Some((s, t));
                }
                open = None;
            }
            _ => {}
        }
    }
    best
}

/// The signal: in-flight averaged over a centred window, on a regular grid.
fn smoothed(steps: &[(u64, i64)], t0: u64, t1: u64) -> Vec<(u64, f64)> {
    let span = t1.saturating_sub(t0);
    let w = (span / 20).max(1_000);
    let step = (w / 10).max(1);
    let mut out = Vec::new();
    let mut t = t0;
    while t <= t1 {
        let (a, b) = (t.saturating_sub(w / 2), t + w / 2);
        out.push((t, integral(steps, a, b) / (b - a) as f64));
        t += step;
    }
    // Close the last stretch at the end of the run.
    out.push((t1.saturating_add(1), f64::NEG_INFINITY));
    out
}

/// The first time at or after `t`, and before `until`, when the level of a step function is at
/// least `cap`: the moment every slot freed up to `t` has been handed to the next request. `t`
/// itself when the slots are not all filled again before `until` (the next end: a client that
/// never quite holds the cap).
pub(super) fn refilled_at(steps: &[(u64, i64)], t: u64, until: Option<u64>, cap: i64) -> u64 {
    let upto = steps.partition_point(|s| s.0 <= t);
    if upto > 0 && steps[upto - 1].1 >= cap {
        return t;
    }
    steps[upto..].iter().take_while(|s| until.is_none_or(|u| s.0 < u)).find(|s| s.1 >= cap).map_or(t, |s| s.0)
}

/// The closed-loop window and what it was measured against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ClosedWindow {
    pub start: u64,
    pub end: u64,
    /// `K = min(C, completed)`, the requests in flight at the cap.
    pub reference: f64,
    /// `threshold × K`.
    pub threshold_abs: f64,
}

/// The stretch `[a, b)` where the smoothed in-flight count of the completed requests'
/// intervals sits at or above `threshold_abs`; `Err` says why there is none.
fn cap_stretch(done: &[(u64, u64)], threshold: f64, reference: f64) -> Result<(u64, u64), String> {
    let (Some(t0), Some(t1)) = (done.iter().map(|i| i.0).min(), done.iter().map(|i| i.1).max()) else {
        return Err("no request completed".into());
    };
    let threshold_abs = threshold * reference;
    let signal = smoothed(&in_flight_steps(done), t0, t1);
    longest_stretch(&signal, threshold_abs).ok_or_else(|| {
        let peak = signal.iter().map(|p| p.1).fold(0.0, f64::max);
        format!(
            "the requests in flight (smoothed) never reached {threshold_abs:.2} ({threshold} × {reference}); \
             at most {peak:.2}"
        )
    })
}

/// The closed-loop window over the completed requests' intervals (`done`, for the cap) and
/// every dispatched request's (`all`, for the ends and the last dispatch); `Err` says why
/// there is none.
pub(super) fn window(
    done: &[(u64, u64)],
    all: &[(u64, u64)],
    target: u64,
    threshold: f64,
) -> Result<ClosedWindow, String> {
    let k = target.min(done.len() as u64).max(1);
    let reference = k as f64;
    let (a, b) = cap_stretch(done, threshold, reference)?;
    let last_dispatch = all.iter().map(|i| i.0).max().unwrap_or(b);
    let hi = b.min(last_dispatch);
    let mut ends: Vec<u64> = all.iter().map(|i| i.1).filter(|&e| e >= a && e <= hi).collect();
    ends.sort_unstable();
    let k = k as usize;
    if ends.len() < 2 * k {
        return Err(format!(
            "too few requests to tell: {} request(s) ended while {k} were in flight, fewer than \
             2 × {k} (one turnover of the {k} slots to warm up, one to measure); send more requests \
             (--num-prompts) or lower --max-concurrency",
            ends.len()
        ));
    }
    let steps = in_flight_steps(all);
    let cap = target.min(all.len() as u64) as i64;
    let refilled = |j: usize| refilled_at(&steps, ends[j], ends.get(j + 1).copied(), cap);
    let start = refilled(k - 1);
    let end = (1..=(ends.len() - k) / k).rev().map(|m| refilled(k - 1 + m * k)).find(|&e| e > start);
    let Some(end) = end else {
        return Err(format!("the {} request ends at the cap all fall at one instant", ends.len()));
    };
    Ok(ClosedWindow { start, end, reference, threshold_abs: threshold * reference })
}
