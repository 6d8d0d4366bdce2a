//! Statistics across runs: aggregates with a t-based 95 % confidence interval, and the two
//! significance tests `servebench compare` uses (docs/metrics.md, "Comparing runs").
//!
//! - [`aggregate`]: mean, sample std (n − 1), min, max and the 95 % CI of the mean,
//!   `mean ± t(0.975, n − 1) · s / √n`.
//! - [`welch_t_test`]: Welch's unequal-variance t-test on two samples of run-level values
//!   (multi-run means), two-sided, Welch–Satterthwaite degrees of freedom.
//! - [`mann_whitney_u`]: the Mann–Whitney U test on two samples of per-request values, two-sided,
//!   normal approximation with tie correction and continuity correction.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, FisherSnedecor, Normal, StudentsT};

/// Mean, spread and 95 % confidence interval of one metric over several runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (ddof = 1); `None` for n < 2, where it is undefined (it was 0,
    /// so a multi-run summary left with one run read "std 0.00").
    pub std: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// 95 % CI of the mean (t distribution, n − 1 degrees of freedom); `None` for n < 2.
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
}

/// The `p` quantile of Student's t distribution with `df` degrees of freedom.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(p),
        Err(_) => f64::NAN,
    }
}

/// Aggregates `values` (NaNs ignored); `None` when nothing is left.
pub fn aggregate(values: &[f64]) -> Option<Aggregate> {
    let v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    let n = v.len();
    if n == 0 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let std = (n > 1).then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
    let half = std.map(|std| t_quantile(0.975, (n - 1) as f64) * std / (n as f64).sqrt());
    Some(Aggregate {
        n,
        mean,
        std,
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ci95_low: half.map(|h| mean - h),
        ci95_high: half.map(|h| mean + h),
    })
}

/// The result of a two-sample test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// `welch_t`, `mann_whitney_u` or `brown_forsythe`.
    pub test: String,
    /// t for Welch, z (normal approximation of U) for Mann–Whitney, W (an F statistic) for
    /// Brown–Forsythe.
    pub statistic: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    pub n_a: usize,
    pub n_b: usize,
}

impl TestResult {
    /// Whether the difference is significant at level `alpha` (e.g. 0.05).
    pub fn significant(&self, alpha: f64) -> bool {
        self.p_value < alpha
    }
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0))
}

/// Welch's t-test; `None` unless both samples have at least 2 values.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<TestResult> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (sa, sb) = (va / a.len() as f64, vb / b.len() as f64);
    let se2 = sa + sb;
    let (t, p) = if se2 == 0.0 {
        // Both samples constant: identical means are no difference; different ones are certain.
        if ma == mb {
            (0.0, 1.0)
        } else {
            (f64::INFINITY.copysign(mb - ma), 0.0)
        }
    } else {
        let t = (mb - ma) / se2.sqrt();
        let df = se2 * se2 / (sa * sa / (a.len() as f64 - 1.0) + sb * sb / (b.len() as f64 - 1.0));
        // Values so large their variance overflows: no test (statrs panics on a NaN statistic).
        if !(t.is_finite() && df.is_finite() && df > 0.0) {
            return None;
        }
        let dist = StudentsT::new(0.0, 1.0, df).ok()?;
        (t, (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0))
    };
    Some(TestResult { test: "welch_t".into(), statistic: t, p_value: p, n_a: a.len(), n_b: b.len() })
}

/// Mann–Whitney U test (normal approximation, tie and continuity corrections); `None` when a
/// sample is empty. The statistic is z of U_b (positive when `b` tends to be larger).
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<TestResult> {
    let (na, nb) = (a.len(), b.len());
    if na == 0 || nb == 0 {
        return None;
    }
    let mut all: Vec<(f64, bool)> =
        a.iter().map(|&x| (x, false)).chain(b.iter().map(|&x| (x, true))).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    // Average ranks over ties; Σ(t³ − t) for the variance correction.
    let (mut rank_sum_b, mut tie_term) = (0.0_f64, 0.0_f64);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let avg_rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        rank_sum_b += all[i..=j].iter().filter(|x| x.1).count() as f64 * avg_rank;
        i = j + 1;
    }
    let (fa, fb, fnn) = (na as f64, nb as f64, n as f64);
    let u_b = rank_sum_b - fb * (fb + 1.0) / 2.0;
    let mu = fa * fb / 2.0;
    let var = fa * fb / 12.0 * ((fnn + 1.0) - tie_term / (fnn * (fnn - 1.0)).max(1.0));
    let (z, p) = if var <= 0.0 {
        (0.0, 1.0)
    } else {
        let d = u_b - mu;
        let corrected = (d.abs() - 0.5).max(0.0).copysign(d);
        let z = corrected / var.sqrt();
        let normal = Normal::new(0.0, 1.0).ok()?;
        (z, (2.0 * (1.0 - normal.cdf(z.abs()))).clamp(0.0, 1.0))
    };
    Some(TestResult { test: "mann_whitney_u".into(), statistic: z, p_value: p, n_a: na, n_b: nb })
}

/// The median of `v` (not empty): the middle value, or the mean of the two middle values.
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The Brown–Forsythe test for equal spread (Levene's test centred on the median): a one-way
/// ANOVA on `z = |x − median of its sample|`, W = (N − 2) · Σ nᵢ (z̄ᵢ − z̄)² / ΣΣ (zᵢⱼ − z̄ᵢ)², with
/// its p-value from F(1, N − 2). `None` unless each sample has at least 3 values: with 2, both
/// deviations from the median are half the range, the within-sample sum is always 0, and any
/// difference in range read as certain (p = 0 for spreads of 5.004 and 5.005 ms). It tests
/// spread only (a shift of location alone leaves W at 0), so it is the test for `std_*`.
pub fn brown_forsythe(a: &[f64], b: &[f64]) -> Option<TestResult> {
    if a.len() < 3 || b.len() < 3 {
        return None;
    }
    let dev = |v: &[f64]| {
        let m = median(v);
        v.iter().map(|x| (x - m).abs()).collect::<Vec<f64>>()
    };
    let (za, zb) = (dev(a), dev(b));
    let n = (za.len() + zb.len()) as f64;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (ma, mb) = (mean(&za), mean(&zb));
    let m = (za.iter().sum::<f64>() + zb.iter().sum::<f64>()) / n;
    let between = za.len() as f64 * (ma - m).powi(2) + zb.len() as f64 * (mb - m).powi(2);
    let within: f64 =
        za.iter().map(|z| (z - ma).powi(2)).sum::<f64>() + zb.iter().map(|z| (z - mb).powi(2)).sum::<f64>();
    let (w, p) = if within == 0.0 {
        // Every value sits at its sample's typical distance: equal spreads are no difference.
        if between == 0.0 {
            (0.0, 1.0)
        } else {
            (f64::INFINITY, 0.0)
        }
    } else {
        let w = (n - 2.0) * between / within;
        if !w.is_finite() {
            return None;
        }
        let f = FisherSnedecor::new(1.0, n - 2.0).ok()?;
        (w, (1.0 - f.cdf(w)).clamp(0.0, 1.0))
    };
    Some(TestResult { test: "brown_forsythe".into(), statistic: w, p_value: p, n_a: a.len(), n_b: b.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins values so large their variance overflows (a vLLM result with a TTFT of 1e308):
    /// `compare` panicked in statrs on the NaN statistic; there is no test instead.
    #[test]
    fn overflowing_values_give_no_test_not_a_panic() {
        let huge = [1e308, -1e308, 1e308, 5.0];
        let small = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(welch_t_test(&huge, &small), None);
        assert_eq!(brown_forsythe(&huge, &small), None);
        assert!(mann_whitney_u(&huge, &small).is_some(), "ranks do not overflow");
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Standard t-table values (two-sided 95 %).
        assert!((t_quantile(0.975, 1.0) - 12.706).abs() < 1e-3);
        assert!((t_quantile(0.975, 4.0) - 2.776).abs() < 1e-3);
        assert!((t_quantile(0.975, 30.0) - 2.042).abs() < 1e-3);
    }

    #[test]
    fn aggregate_by_hand() {
        // 2, 4, 6: mean 4, s = 2, half-width = 4.303 · 2 / √3 = 4.9687.
        let a = aggregate(&[2.0, 4.0, 6.0]).unwrap();
        assert_eq!((a.n, a.mean, a.std, a.min, a.max), (3, 4.0, Some(2.0), 2.0, 6.0));
        let half = a.ci95_high.unwrap() - 4.0;
        assert!((half - 4.9687).abs() < 1e-3, "{half}");
        let one = aggregate(&[5.0]).unwrap();
        assert_eq!((one.std, one.ci95_low), (None, None), "one run has no spread to tell");
        assert!(aggregate(&[]).is_none());
    }

    #[test]
    fn welch_by_hand() {
        // a = 1,2,3 (mean 2, var 1), b = 4,5,6 (mean 5, var 1): t = 3/√(2/3) = 3.674, df = 4,
        // two-sided p = 0.02131.
        let r = welch_t_test(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((r.statistic - 3.6742).abs() < 1e-3, "{}", r.statistic);
        assert!((r.p_value - 0.02131).abs() < 1e-4, "{}", r.p_value);
        assert!(r.significant(0.05));
        let same = welch_t_test(&[1.0, 2.0, 3.0], &[1.5, 2.0, 2.5]).unwrap();
        assert!(!same.significant(0.05), "{}", same.p_value);
        assert!(welch_t_test(&[1.0], &[2.0, 3.0]).is_none());
    }

    #[test]
    fn mann_whitney_by_hand() {
        // a = 1,2,3, b = 4,5,6: U_b = 9, μ = 4.5, σ² = 9·7/12 = 5.25, z = (4.5 − 0.5)/2.2913
        // = 1.7457, p = 0.0809.
        let r = mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((r.statistic - 1.7457).abs() < 1e-3, "{}", r.statistic);
        assert!((r.p_value - 0.0809).abs() < 1e-3, "{}", r.p_value);
        // All ties: no evidence of a difference.
        let t = mann_whitney_u(&[1.0, 1.0], &[1.0, 1.0, 1.0]).unwrap();
        assert_eq!(t.p_value, 1.0);
    }

    #[test]
    fn brown_forsythe_by_hand() {
        // a = 1,2,3,6 (median 2.5): z = 1.5,0.5,0.5,3.5, z̄a = 1.5; b = 2,4,5,10,20 (median 5):
        // z = 3,1,0,5,15, z̄b = 4.8; z̄ = 30/9. Between = 4·(1.5 − 10/3)² + 5·(4.8 − 10/3)² = 24.2,
        // within = 6 + 144.8 = 150.8, W = 7 · 24.2 / 150.8 = 1.123342; p = P(F(1, 7) > W)
        // = 0.324395 (the two-sided t(7) tail at √W, integrated numerically).
        let r = brown_forsythe(&[1.0, 2.0, 3.0, 6.0], &[2.0, 4.0, 5.0, 10.0, 20.0]).unwrap();
        assert_eq!(r.test, "brown_forsythe");
        assert!((r.statistic - 1.123342).abs() < 1e-6, "{}", r.statistic);
        assert!((r.p_value - 0.324395).abs() < 1e-5, "{}", r.p_value);
        // A pure shift of location is no difference in spread (Mann–Whitney would call it one).
        let shifted = brown_forsythe(&[1.0, 2.0, 3.0, 6.0], &[101.0, 102.0, 103.0, 106.0]).unwrap();
        assert_eq!((shifted.statistic, shifted.p_value), (0.0, 1.0));
        assert!(brown_forsythe(&[1.0], &[2.0, 3.0]).is_none());
    }

    /// Pins two values per sample being too few for a spread test: both deviations from the
    /// median are half the range, so ranges of 10.0085 and 10.009 ms read as a certain
    /// difference (p = 0, "significant") in `compare`.
    #[test]
    fn brown_forsythe_needs_three_values_per_sample() {
        assert!(brown_forsythe(&[10.3575, 20.366], &[50.25, 60.259]).is_none());
        assert!(brown_forsythe(&[1.0, 2.0, 4.0], &[1.0, 2.0]).is_none());
        assert!(brown_forsythe(&[1.0, 2.0, 4.0], &[1.0, 2.0, 9.0]).is_some());
    }

    /// A deterministic pseudo-random latency sample (ms): lognormal-ish around `median`.
    fn sample(seed: u64, n: usize, median: f64) -> Vec<f64> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| median * (rng.random::<f64>() - 0.5).exp()).collect()
    }

    #[test]
    fn regression_of_20_percent_is_significant_and_rerun_is_not() {
        let a = sample(1, 500, 100.0);
        let rerun = sample(2, 500, 100.0);
        let slower = sample(3, 500, 120.0);
        assert!(!mann_whitney_u(&a, &rerun).unwrap().significant(0.05));
        let r = mann_whitney_u(&a, &slower).unwrap();
        assert!(r.significant(0.05) && r.statistic > 0.0, "{r:?}");
    }
}
