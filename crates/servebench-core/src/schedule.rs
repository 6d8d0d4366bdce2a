//! Arrival schedules: when each request of a run is meant to be sent.
//!
//! A schedule is a pure function of `(n, RateConfig, seed)`: the same inputs give the same
//! offsets on every machine and with every version of servebench, because the random stream is
//! ChaCha20 seeded explicitly (no `seed_from_u64` expansion) and the Gamma sampler is our own
//! (Marsaglia–Tsang over our own uniform/normal transforms), not a library whose algorithm may
//! change between releases.
//!
//! Semantics follow `vllm bench serve` (`get_request`):
//! - request `i` of `n` has rate `rate_i`: the configured `request_rate`, or with a ramp-up
//!   `start + (end − start)·p` (linear) or `start·(end/start)^p` (exponential), `p = i / max(n−1, 1)`;
//! - the gap *before* request `i` is `0` when `rate_i` is infinite, `1/rate_i` when the burstiness
//!   is infinite, else a Gamma draw with shape `burstiness` and scale `1/(rate_i·burstiness)`
//!   (mean `1/rate_i`; burstiness 1 is a Poisson process);
//! - offsets are the cumulative sums of the gaps, so request 0 is sent one gap after the start;
//! - normalization: only with a finite constant rate (no ramp-up) and a non-zero last offset, every
//!   cumulative offset is multiplied by `(n / request_rate) / last`, so the last request is sent at
//!   exactly `n / request_rate` seconds (rounded to the µs); the spacing pattern is unchanged.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};

/// How the request rate grows during a ramp-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RampStrategy {
    /// `rate_i = start + (end − start) · i / max(n−1, 1)`.
    Linear,
    /// `rate_i = start · (end / start)^(i / max(n−1, 1))`.
    Exponential,
}

impl RampStrategy {
    /// The name vLLM uses (`linear`, `exponential`).
    pub fn as_str(self) -> &'static str {
        match self {
            RampStrategy::Linear => "linear",
            RampStrategy::Exponential => "exponential",
        }
    }
}

/// A ramp-up of the request rate from `start_rps` (first request) to `end_rps` (last request).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RampUp {
    pub strategy: RampStrategy,
    pub start_rps: f64,
    pub end_rps: f64,
}

impl RampUp {
    /// The rate of request `i` of `n`.
    pub fn rate_at(&self, i: usize, n: usize) -> f64 {
        let progress = i as f64 / n.saturating_sub(1).max(1) as f64;
        match self.strategy {
            RampStrategy::Linear => self.start_rps + (self.end_rps - self.start_rps) * progress,
            RampStrategy::Exponential => self.start_rps * (self.end_rps / self.start_rps).powf(progress),
        }
    }
}

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateConfig {
    /// Requests per second; `f64::INFINITY` sends everything at once. Ignored with a ramp-up.
    pub request_rate: f64,
    /// Gamma shape of the inter-arrival gaps (1 = Poisson, <1 burstier, >1 smoother,
    /// `f64::INFINITY` = constant gaps).
    pub burstiness: f64,
    /// Optional ramp-up; when set it replaces `request_rate` and disables normalization.
    pub ramp_up: Option<RampUp>,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig { request_rate: f64::INFINITY, burstiness: 1.0, ramp_up: None }
    }
}

impl RateConfig {
    /// Checks the values `generate` relies on: a positive rate (or infinity), a positive
    /// burstiness, and positive, finite ramp-up endpoints.
    pub fn validate(&self) -> Result<()> {
        if self.request_rate.is_nan() || self.request_rate <= 0.0 {
            return Err(BenchError::config(
                "--request-rate",
                format!("must be > 0 or inf, got {}", self.request_rate),
                "pass a positive number of requests per second, or inf",
            ));
        }
        if self.burstiness.is_nan() || self.burstiness <= 0.0 {
            return Err(BenchError::config(
                "--burstiness",
                format!("must be > 0, got {}", self.burstiness),
                "pass a positive Gamma shape (1.0 = Poisson)",
            ));
        }
        if let Some(r) = self.ramp_up {
            for (flag, v) in [("--ramp-up-start-rps", r.start_rps), ("--ramp-up-end-rps", r.end_rps)] {
                if !v.is_finite() || v <= 0.0 {
                    return Err(BenchError::config(
                        flag,
                        format!("must be a positive finite number, got {v}"),
                        "pass a positive request rate",
                    ));
                }
                // As `--request-rate`: the first gaps would be days to ages, waited without a word.
                if v < crate::flag_values::MIN_REQUEST_RATE {
                    return Err(BenchError::config(
                        flag,
                        format!("{v} is below one request per day"),
                        "pass a rate of at least 1/86400 requests per second",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The rate of request `i` of `n` (ramp-up rate, or the constant `request_rate`).
    pub fn rate_at(&self, i: usize, n: usize) -> f64 {
        match self.ramp_up {
            Some(r) => r.rate_at(i, n),
            None => self.request_rate,
        }
    }
}

/// One step of a ramp-up, as vLLM's `rps_change_events`: the integer rate `rps` is first reached
/// by the request scheduled at `offset_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpsChange {
    pub rps: u64,
    pub offset_us: u64,
}

/// The intended send time of every request, µs after the run's schedule origin.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ArrivalSchedule {
    pub offsets_us: Vec<u64>,
}

impl ArrivalSchedule {
    /// Builds the schedule of `n` requests (see the module docs for the exact semantics).
    ///
    /// Never panics. Values `RateConfig::validate` rejects are handled leniently: a rate that is
    /// not positive gives gap 0, a burstiness that is not positive is treated as infinite.
    pub fn generate(n: usize, cfg: &RateConfig, seed: u64) -> ArrivalSchedule {
        let mut rng = ScheduleRng::new(seed);
        let mut cumulative = Vec::with_capacity(n);
        let mut t = 0.0_f64;
        for i in 0..n {
            let rate = cfg.rate_at(i, n);
            let gap = if !rate.is_finite() || rate <= 0.0 {
                0.0
            } else if !cfg.burstiness.is_finite() || cfg.burstiness <= 0.0 {
                1.0 / rate
            } else {
                rng.gamma(cfg.burstiness) / (rate * cfg.burstiness)
            };
            t += gap;
            cumulative.push(t);
        }
        let normalize =
            cfg.ramp_up.is_none() && cfg.request_rate.is_finite() && cfg.request_rate > 0.0 && t > 0.0;
        let offsets_us = if normalize {
            let target_s = n as f64 / cfg.request_rate;
            let factor = target_s / t;
            let target_us = secs_to_us(target_s);
            let mut v: Vec<u64> = cumulative.iter().map(|c| secs_to_us(c * factor)).collect();
            if let Some(last) = v.last_mut() {
                *last = target_us;
            }
            // Scaling keeps the order; the µs rounding of the last value cannot undercut the
            // one before it by more than rounding, so clamp to keep offsets non-decreasing.
            let mut prev = 0;
            for x in &mut v {
                *x = (*x).max(prev);
                prev = *x;
            }
            v
        } else {
            cumulative.iter().map(|&c| secs_to_us(c)).collect()
        };
        ArrivalSchedule { offsets_us }
    }

    /// Number of requests scheduled.
    pub fn len(&self) -> usize {
        self.offsets_us.len()
    }

    /// True when no request is scheduled.
    pub fn is_empty(&self) -> bool {
        self.offsets_us.is_empty()
    }

    /// The rate steps of a ramp-up as vLLM records them in `rps_change_events`: the start rate
    /// (`floor(start_rps)`) at offset 0, then for each request whose `floor(rate_i)` exceeds the
    /// last recorded integer rate, one event per integer step in between, all at that request's
    /// offset. Empty without a ramp-up. A ramp of more than [`MAX_RPS_STEPS`] integer steps (to
    /// 1e7 rps: 1.8 GB, and a capacity overflow for 1e308) records only the rate each such
    /// request reaches: at most one event per request.
    pub fn rps_change_events(&self, cfg: &RateConfig) -> Vec<RpsChange> {
        let Some(ramp) = cfg.ramp_up else { return Vec::new() };
        let n = self.offsets_us.len();
        let mut last = floor_u64(ramp.start_rps);
        let every_step = floor_u64(ramp.end_rps).saturating_sub(last) <= MAX_RPS_STEPS;
        let mut out = vec![RpsChange { rps: last, offset_us: 0 }];
        for (i, &offset_us) in self.offsets_us.iter().enumerate() {
            let current = floor_u64(ramp.rate_at(i, n));
            if current > last {
                let first = if every_step { last + 1 } else { current };
                out.extend((first..=current).map(|rps| RpsChange { rps, offset_us }));
                last = current;
            }
        }
        out
    }
}

/// The most integer rate steps [`ArrivalSchedule::rps_change_events`] records one by one, as
/// vLLM does (a ramp to 100,000 rps); a steeper ramp records one event per request.
pub const MAX_RPS_STEPS: u64 = 100_000;

fn floor_u64(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 {
        x.floor() as u64
    } else {
        0
    }
}

fn secs_to_us(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1e6).round() as u64
    } else {
        0
    }
}

/// The schedule's random source: ChaCha20 with the seed's little-endian bytes as key.
struct ScheduleRng {
    inner: ChaCha20Rng,
}

impl ScheduleRng {
    fn new(seed: u64) -> Self {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        ScheduleRng { inner: ChaCha20Rng::from_seed(key) }
    }

    /// Uniform in (0, 1): 53 random bits, offset by half a step so 0 never occurs.
    fn open01(&mut self) -> f64 {
        ((self.inner.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box–Muller, one value per call).
    fn normal(&mut self) -> f64 {
        let u1 = self.open01();
        let u2 = self.open01();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Gamma with the given shape and scale 1 (Marsaglia–Tsang; shape < 1 by boosting).
    fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let u = self.open01();
            return self.gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.open01();
            if u < 1.0 - 0.0331 * x * x * x * x || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
                return d * v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(s: &ArrivalSchedule) -> Vec<f64> {
        let mut prev = 0u64;
        s.offsets_us
            .iter()
            .map(|&o| {
                let g = (o - prev) as f64 / 1e6;
                prev = o;
                g
            })
            .collect()
    }

    fn raw_gammas(shape: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = ScheduleRng::new(seed);
        (0..n).map(|_| rng.gamma(shape)).collect()
    }

    fn mean_cv(v: &[f64]) -> (f64, f64) {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64;
        (m, var.sqrt() / m)
    }

    #[test]
    fn infinite_rate_sends_everything_at_zero() {
        let s = ArrivalSchedule::generate(5, &RateConfig::default(), 1);
        assert_eq!(s.offsets_us, vec![0; 5]);
        assert!(s.rps_change_events(&RateConfig::default()).is_empty());
    }

    #[test]
    fn zero_requests_make_an_empty_schedule() {
        let cfg = RateConfig { request_rate: 10.0, ..RateConfig::default() };
        assert!(ArrivalSchedule::generate(0, &cfg, 1).is_empty());
    }

    #[test]
    fn normalization_puts_last_offset_at_n_over_rate() {
        for (n, rate, b) in [(100, 10.0, 1.0), (7, 3.0, 0.5), (1000, 250.0, 4.0), (1, 2.0, 1.0)] {
            let cfg = RateConfig { request_rate: rate, burstiness: b, ramp_up: None };
            let s = ArrivalSchedule::generate(n, &cfg, 42);
            let want = (n as f64 / rate * 1e6).round() as u64;
            assert_eq!(s.offsets_us.last().copied(), Some(want));
            assert!(s.offsets_us.windows(2).all(|w| w[0] <= w[1]));
        }
    }

    #[test]
    fn infinite_burstiness_gives_constant_gaps() {
        let cfg = RateConfig { request_rate: 4.0, burstiness: f64::INFINITY, ramp_up: None };
        let s = ArrivalSchedule::generate(8, &cfg, 0);
        assert_eq!(s.offsets_us, (1..=8).map(|i| i * 250_000).collect::<Vec<u64>>());
    }

    #[test]
    fn mean_gap_is_one_over_rate() {
        let cfg = RateConfig { request_rate: 50.0, burstiness: 1.0, ramp_up: None };
        let s = ArrivalSchedule::generate(20_000, &cfg, 7);
        let (m, cv) = mean_cv(&gaps(&s));
        assert!((m - 0.02).abs() < 1e-6, "mean {m}");
        assert!((cv - 1.0).abs() < 0.05, "cv {cv}");
        // Before normalization the draws themselves have mean 1/rate too.
        let raw: Vec<f64> = raw_gammas(1.0, 20_000, 7).iter().map(|g| g / 50.0).collect();
        assert!((mean_cv(&raw).0 - 0.02).abs() < 0.02 * 0.03);
    }

    #[test]
    fn gamma_cv_is_one_over_sqrt_shape() {
        for shape in [0.25, 0.5, 1.0, 2.0, 9.0] {
            let (m, cv) = mean_cv(&raw_gammas(shape, 40_000, 3));
            assert!((m - shape).abs() < shape * 0.05, "shape {shape}: mean {m}");
            let want = 1.0 / f64::sqrt(shape);
            assert!((cv - want).abs() < want * 0.05, "shape {shape}: cv {cv} want {want}");
        }
    }

    #[test]
    fn ramp_rates_hit_both_endpoints() {
        let lin = RampUp { strategy: RampStrategy::Linear, start_rps: 2.0, end_rps: 10.0 };
        assert_eq!(lin.rate_at(0, 5), 2.0);
        assert_eq!(lin.rate_at(2, 5), 6.0);
        assert_eq!(lin.rate_at(4, 5), 10.0);
        let exp = RampUp { strategy: RampStrategy::Exponential, start_rps: 1.0, end_rps: 16.0 };
        assert_eq!(exp.rate_at(0, 5), 1.0);
        assert!((exp.rate_at(2, 5) - 4.0).abs() < 1e-12);
        assert!((exp.rate_at(4, 5) - 16.0).abs() < 1e-12);
        assert_eq!(lin.rate_at(0, 1), 2.0);
    }

    #[test]
    fn ramp_schedule_is_not_normalized_and_uses_per_request_rates() {
        let cfg = RateConfig {
            request_rate: f64::INFINITY,
            burstiness: f64::INFINITY,
            ramp_up: Some(RampUp { strategy: RampStrategy::Linear, start_rps: 1.0, end_rps: 4.0 }),
        };
        let s = ArrivalSchedule::generate(4, &cfg, 0);
        // Gaps 1/1, 1/2, 1/3, 1/4 seconds.
        assert_eq!(s.offsets_us, vec![1_000_000, 1_500_000, 1_833_333, 2_083_333]);
        let ev = s.rps_change_events(&cfg);
        let want = vec![
            RpsChange { rps: 1, offset_us: 0 },
            RpsChange { rps: 2, offset_us: 1_500_000 },
            RpsChange { rps: 3, offset_us: 1_833_333 },
            RpsChange { rps: 4, offset_us: 2_083_333 },
        ];
        assert_eq!(ev, want);
    }

    #[test]
    fn rps_events_fill_skipped_integers() {
        let cfg = RateConfig {
            request_rate: f64::INFINITY,
            burstiness: 1.0,
            ramp_up: Some(RampUp { strategy: RampStrategy::Linear, start_rps: 1.5, end_rps: 5.0 }),
        };
        let s = ArrivalSchedule::generate(2, &cfg, 9);
        let ev = s.rps_change_events(&cfg);
        let rps: Vec<u64> = ev.iter().map(|e| e.rps).collect();
        assert_eq!(rps, vec![1, 2, 3, 4, 5]);
        assert!(ev[1..].iter().all(|e| e.offset_us == s.offsets_us[1]));
    }

    /// Pins the bound on `rps_change_events`: a ramp to 1e7 rps built one event per integer rate
    /// (1.8 GB, the run aborted and its result was lost), to 1e308 a capacity overflow. Steeper
    /// than `MAX_RPS_STEPS` it records the rate each request reaches; up to it, every step.
    #[test]
    fn rps_events_of_a_steep_ramp_are_one_per_request_not_one_per_integer() {
        let ramp = |end_rps: f64| RateConfig {
            request_rate: f64::INFINITY,
            burstiness: 1.0,
            ramp_up: Some(RampUp { strategy: RampStrategy::Linear, start_rps: 1.0, end_rps }),
        };
        // To 1e308 the integer rate saturates from the second request on: two events.
        for (end, events) in [(1e7, 10), (1e308, 2)] {
            let cfg = ramp(end);
            let s = ArrivalSchedule::generate(10, &cfg, 3);
            let ev = s.rps_change_events(&cfg);
            assert_eq!(ev.len(), events, "the start, then one per request that raised the rate");
            assert_eq!((ev[0].rps, ev[0].offset_us), (1, 0));
            assert!(ev.windows(2).all(|w| w[0].rps < w[1].rps));
            assert_eq!(ev[events - 1].rps, floor_u64(end));
        }
        let cfg = ramp(MAX_RPS_STEPS as f64 + 1.0);
        let s = ArrivalSchedule::generate(3, &cfg, 3);
        assert_eq!(s.rps_change_events(&cfg).len() as u64, MAX_RPS_STEPS + 1, "every integer step");
    }

    #[test]
    fn same_seed_same_schedule_and_pinned_values() {
        let cfg = RateConfig { request_rate: 10.0, burstiness: 1.0, ramp_up: None };
        let a = ArrivalSchedule::generate(50, &cfg, 1234);
        let b = ArrivalSchedule::generate(50, &cfg, 1234);
        let c = ArrivalSchedule::generate(50, &cfg, 1235);
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Pinned: a change to the RNG or sampler shows up here (schedules must stay reproducible).
        assert_eq!(&a.offsets_us[..3], PINNED_FIRST_THREE);
    }

    const PINNED_FIRST_THREE: &[u64] = &[76_957, 136_961, 163_100];

    #[test]
    fn validate_rejects_bad_values() {
        let ok = RateConfig { request_rate: 1.0, burstiness: 1.0, ramp_up: None };
        assert!(ok.validate().is_ok());
        assert!(RateConfig::default().validate().is_ok());
        assert!(RateConfig { request_rate: 0.0, ..ok }.validate().is_err());
        assert!(RateConfig { request_rate: f64::NAN, ..ok }.validate().is_err());
        assert!(RateConfig { burstiness: 0.0, ..ok }.validate().is_err());
        let bad_ramp = RampUp { strategy: RampStrategy::Exponential, start_rps: 0.0, end_rps: 1.0 };
        assert!(RateConfig { ramp_up: Some(bad_ramp), ..ok }.validate().is_err());
        // A ramp from 1e-9 req/s was accepted and waited until killed (--request-rate refuses it).
        let ages = RampUp { strategy: RampStrategy::Linear, start_rps: 1e-9, end_rps: 10.0 };
        let e = RateConfig { ramp_up: Some(ages), ..ok }.validate().unwrap_err();
        assert!(
            e.to_string().contains("--ramp-up-start-rps")
                && e.to_string().contains("below one request per day"),
            "{e}"
        );
        // Lenient generation on invalid input: no panic.
        let s = ArrivalSchedule::generate(
            3,
            &RateConfig { request_rate: -1.0, burstiness: -1.0, ramp_up: None },
            0,
        );
        assert_eq!(s.offsets_us, vec![0, 0, 0]);
    }
}
