//! Closed loop: the window where the requests in flight sit at the concurrency cap.
//!
//! The signal is the number of completed requests in flight (`[dispatched, end)`, ends before
//! starts at equal times), averaged over a centred sliding window of `W = run / 20` (at least
//! 1 ms) and evaluated every `W / 10`: the averaging keeps the hand-off between one request's end
//! and the next one's dispatch (µs to ms) from splitting the window. The window is the
//! **longest** stretch where the signal is at or above `threshold × min(C, completed)`
//! (vllm-bench: exact count, first up-crossing to last down-crossing, dips included).

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

/// The closed-loop window over the completed requests' intervals, with the reference
/// (`min(C, completed)`) and the absolute threshold; `Err` says why there is none.
pub(super) fn window(
    intervals: &[(u64, u64)],
    target: u64,
    threshold: f64,
) -> Result<((u64, u64), f64, f64), String> {
    let (Some(t0), Some(t1)) = (intervals.iter().map(|i| i.0).min(), intervals.iter().map(|i| i.1).max())
    else {
        return Err("no request completed".into());
    };
    let reference = target.min(intervals.len() as u64).max(1) as f64;
    let threshold_abs = threshold * reference;
    let steps = in_flight_steps(intervals);
    let signal = smoothed(&steps, t0, t1);
    let w = longest_stretch(&signal, threshold_abs).ok_or_else(|| {
        let peak = signal.iter().map(|p| p.1).fold(0.0, f64::max);
        format!(
            "the requests in flight (smoothed) never reached {threshold_abs:.2} ({threshold} × {reference}); \
             at most {peak:.2}"
        )
    })?;
    Ok((w, reference, threshold_abs))
}
