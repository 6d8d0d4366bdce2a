//! Saturation detector: the server is saturated when requests arrive faster than they finish
//! for a whole window, so the number in flight grows without bound (docs/metrics.md, "Early
//! stop: saturation"). Fed one sample per tick; pure and deterministic.

use std::collections::VecDeque;

/// Tunables of the saturation test (defaults in [`SaturationConfig::default`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SaturationConfig {
    /// Shortest window, seconds; widened to `service_windows` service times.
    pub window_s: f64,
    /// The window spans at least this many service times ([`Sample::service_s`]).
    pub service_windows: f64,
    /// Least samples in each half of the window.
    pub min_samples: usize,
    /// Least requests finished before any test (the service time must be known).
    pub min_finished: u64,
    /// Least t statistic of the in-flight slope (over the window and over its second half).
    pub min_t: f64,
    /// Least growth of in-flight over the window, relative to its mean level in the window.
    pub min_rel_growth: f64,
    /// Least arrivals / finishes in the window (1.1: arrivals exceed finishes by 10 %).
    pub min_arrival_ratio: f64,
    /// Least excess of arrivals over finishes in the window, in standard deviations of the
    /// arrival count (`√arrivals`, Poisson): a backlog of one or two requests in a short window
    /// at a low rate is chance, not saturation (3 arrivals to 2 finishes in 1 s fired at a
    /// quarter of capacity with `--saturation-window 1`).
    pub min_excess_sigmas: f64,
    /// Consecutive positive tests before the detector fires.
    pub persist: u32,
}

impl Default for SaturationConfig {
    fn default() -> Self {
        SaturationConfig {
            window_s: 30.0,
            service_windows: 4.0,
            min_samples: 10,
            min_finished: 5,
            min_t: 4.0,
            min_rel_growth: 0.5,
            min_arrival_ratio: 1.1,
            min_excess_sigmas: 3.0,
            persist: 3,
        }
    }
}

/// One observation: at `t_s` (seconds since the run's start) `arrived` requests were due (their
/// scheduled send time had come) and `finished` had ended; `service_s` is the service-time
/// estimate of the requests finished so far (docs/metrics.md: shortest TTFT + mean generation
/// time), `None` while unknown.
///
/// The window is widened by the service time, not the latency: past capacity the latency grows
/// with the queue (by 3/4 of the elapsed time at 4× capacity), so a window widened by latency
/// grows faster than the run and is never full — the detector would never fire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t_s: f64,
    pub arrived: u64,
    pub finished: u64,
    pub service_s: Option<f64>,
}

impl Sample {
    fn in_flight(&self) -> f64 {
        self.arrived.saturating_sub(self.finished) as f64
    }
}

/// What the detector saw when it fired.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SaturationEvidence {
    /// When the test first held in the run of `persist` positive tests, seconds.
    pub detected_at_s: f64,
    /// The window tested, seconds (`[detected_at_s - window_s, detected_at_s]`).
    pub window_s: f64,
    /// Least-squares slope of in-flight over the window, requests/s.
    pub in_flight_slope_per_s: f64,
    /// Its t statistic.
    pub t_stat: f64,
    /// In flight at the window's first and last sample.
    pub in_flight_start: u64,
    pub in_flight_end: u64,
    /// Arrivals and finishes per second over the window.
    pub arrival_rate: f64,
    pub finish_rate: f64,
}

/// The detector: call [`SaturationStop::observe`] once per tick with the run's counts.
#[derive(Debug, Clone)]
pub struct SaturationStop {
    cfg: SaturationConfig,
    samples: VecDeque<Sample>,
    streak: u32,
    first_hit: Option<SaturationEvidence>,
}

/// Least-squares slope of `y` on `x` and its t statistic (`None` under 3 points or no spread).
/// A perfect fit (no residual) has an infinite t statistic.
pub fn slope_t(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 3 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    let sse: f64 = points.iter().map(|p| (p.1 - my - b * (p.0 - mx)).powi(2)).sum();
    let se = (sse / (n - 2.0) / sxx).sqrt();
    let t = if se > 0.0 {
        b / se
    } else if b == 0.0 {
        0.0
    } else {
        f64::INFINITY * b.signum()
    };
    Some((b, t))
}

impl SaturationStop {
    pub fn new(cfg: SaturationConfig) -> Self {
        SaturationStop { cfg, samples: VecDeque::new(), streak: 0, first_hit: None }
    }

    /// Adds a sample (times must not go back) and returns the evidence when the detector
    /// fires: `persist` consecutive positive tests. Keeps firing once fired.
    pub fn observe(&mut self, s: Sample) -> Option<SaturationEvidence> {
        self.samples.push_back(s);
        let window = self.window_s(&s);
        while self.samples.front().is_some_and(|f| f.t_s < s.t_s - 2.0 * window) {
            self.samples.pop_front();
        }
        match self.test(window) {
            Some(ev) => {
                self.streak += 1;
                let first = *self.first_hit.get_or_insert(ev);
                (self.streak >= self.cfg.persist).then_some(first)
            }
            None => {
                self.streak = 0;
                self.first_hit = None;
                None
            }
        }
    }

    /// The window: `window_s`, widened to `service_windows` service times.
    fn window_s(&self, s: &Sample) -> f64 {
        let service = s.service_s.filter(|v| v.is_finite() && *v > 0.0).unwrap_or(0.0);
        self.cfg.window_s.max(self.cfg.service_windows * service)
    }

    /// One test over the window ending at the last sample.
    fn test(&self, window: f64) -> Option<SaturationEvidence> {
        let last = *self.samples.back()?;
        if last.finished < self.cfg.min_finished || last.t_s < window {
            return None;
        }
        let start = last.t_s - window;
        let half = last.t_s - window / 2.0;
        let win: Vec<&Sample> = self.samples.iter().filter(|p| p.t_s >= start).collect();
        let pts: Vec<(f64, f64)> = win.iter().map(|p| (p.t_s, p.in_flight())).collect();
        let late: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.0 >= half).collect();
        if late.len() < self.cfg.min_samples || pts.len() - late.len() < self.cfg.min_samples {
            return None;
        }
        let (b, t) = slope_t(&pts)?;
        let (b2, t2) = slope_t(&late)?;
        let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
        let first = win[0];
        let span = last.t_s - first.t_s;
        let arrived = last.arrived.saturating_sub(first.arrived) as f64;
        let finished = last.finished.saturating_sub(first.finished) as f64;
        let growing = b > 0.0 && b2 > 0.0 && t >= self.cfg.min_t && t2 >= self.cfg.min_t;
        let big = b * span >= self.cfg.min_rel_growth * mean.max(1.0);
        let outpaced = arrived >= self.cfg.min_arrival_ratio * finished
            && arrived - finished >= self.cfg.min_excess_sigmas * arrived.sqrt()
            && arrived > finished;
        (growing && big && outpaced && span > 0.0).then(|| SaturationEvidence {
            detected_at_s: last.t_s,
            window_s: window,
            in_flight_slope_per_s: b,
            t_stat: t,
            in_flight_start: first.arrived.saturating_sub(first.finished),
            in_flight_end: last.arrived.saturating_sub(last.finished),
            arrival_rate: arrived / span,
            finish_rate: finished / span,
        })
    }
}

#[cfg(test)]
#[path = "saturation_tests.rs"]
mod tests;
