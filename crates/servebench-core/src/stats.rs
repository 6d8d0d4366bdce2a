//! Descriptive statistics with numpy's conventions, as `vllm bench serve` reports them.
//!
//! - mean: arithmetic mean;
//! - median: the 50th percentile below (average of the two middle values for even counts);
//! - std: population standard deviation (ddof = 0, numpy's default);
//! - percentile: numpy's default "linear" method — sort, index `h = p/100 · (n − 1)`, interpolate
//!   between `x[floor(h)]` and `x[ceil(h)]`. Results may differ from numpy in the last ulp only.
//! - empty input gives 0 for every statistic with `count` 0; reports must show such a summary as
//!   `null` / "n/a", never 0 (docs/metrics.md, "Metrics without data").
//!
//! NaN inputs are ignored (they cannot come from integer µs timestamps, but a library must not
//! panic or poison every statistic because of one).

use serde::{Deserialize, Serialize};

/// Summary of one distribution: count, mean, median, population std and the selected percentiles
/// as `(p, value)` pairs in the order they were asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: usize,
    pub mean: f64,
    pub median: f64,
    pub std: f64,
    pub percentiles: Vec<(f64, f64)>,
}

impl Summary {
    /// Summarizes `values` (any order; NaNs ignored) with the given percentiles (0..=100).
    pub fn of(values: &[f64], percentiles: &[f64]) -> Summary {
        Summary::of_vec(values.iter().copied().filter(|v| !v.is_nan()).collect(), percentiles)
    }

    /// [`Summary::of`] of values it may reorder and drop: filtered and sorted in place, without
    /// the copy `of` makes.
    pub fn of_vec(mut values: Vec<f64>, percentiles: &[f64]) -> Summary {
        values.retain(|v| !v.is_nan());
        // Values equal under `total_cmp` have the same bits, so the unstable sort gives the
        // stable sort's order, without its scratch buffer of half the values.
        values.sort_unstable_by(f64::total_cmp);
        Summary::of_sorted(&values, percentiles)
    }

    /// Like [`Summary::of`] for values already sorted ascending without NaNs.
    pub fn of_sorted<T: Copy + Into<f64>>(sorted: &[T], percentiles: &[f64]) -> Summary {
        Summary {
            count: sorted.len(),
            mean: mean(sorted),
            median: percentile_sorted(sorted, 50.0),
            std: std_pop(sorted),
            percentiles: percentiles.iter().map(|&p| (p, percentile_sorted(sorted, p))).collect(),
        }
    }

    /// The value of percentile `p` if it was computed.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        self.percentiles.iter().find(|(q, _)| *q == p).map(|&(_, v)| v)
    }

    /// The same summary with every value multiplied by `k` (unit conversion).
    pub fn scaled(&self, k: f64) -> Summary {
        Summary {
            count: self.count,
            mean: self.mean * k,
            median: self.median * k,
            std: self.std * k,
            percentiles: self.percentiles.iter().map(|&(p, v)| (p, v * k)).collect(),
        }
    }
}

/// Arithmetic mean (summed in slice order); 0 for an empty slice.
pub fn mean<T: Copy + Into<f64>>(values: &[T]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().map(|&v| v.into()).sum::<f64>() / values.len() as f64
}

/// Population standard deviation (ddof = 0); 0 for an empty slice.
pub fn std_pop<T: Copy + Into<f64>>(values: &[T]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let m = mean(values);
    let ss: f64 = values.iter().map(|&v| (v.into() - m) * (v.into() - m)).sum();
    (ss / values.len() as f64).sqrt()
}

/// Median (numpy): the 50th percentile with linear interpolation; 0 for an empty slice.
pub fn median(values: &[f64]) -> f64 {
    percentile(values, 50.0)
}

/// Percentile `p` (0..=100, clamped) with numpy's "linear" interpolation; 0 for an empty slice.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    sorted.sort_by(f64::total_cmp);
    percentile_sorted(&sorted, p)
}

/// [`percentile`] over a slice already sorted ascending.
pub fn percentile_sorted<T: Copy + Into<f64>>(sorted: &[T], p: f64) -> f64 {
    let n = sorted.len();
    let (Some(&first), Some(&last)) = (sorted.first(), sorted.last()) else { return 0.0 };
    let p = if p.is_nan() { 50.0 } else { p.clamp(0.0, 100.0) };
    let h = p / 100.0 * (n - 1) as f64;
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (h.ceil() as usize).min(n - 1);
    let (a, b): (f64, f64) =
        (sorted.get(lo).copied().unwrap_or(first).into(), sorted.get(hi).copied().unwrap_or(last).into());
    let t = h - lo as f64;
    // Clamp so rounding never leaves [a, b]: keeps the result monotone in p.
    (a + (b - a) * t).clamp(a.min(b), a.max(b))
}

/// Summary of a distribution given as `(value, count)` pairs: identical (up to rounding) to
/// [`Summary::of`] over the values repeated `count` times, without materializing them — a
/// request claiming billions of tokens cannot exhaust memory. Pairs with NaN values or count 0
/// are ignored.
pub fn summary_weighted(pairs: &[(f64, u64)], percentiles: &[f64]) -> Summary {
    let mut v: Vec<(f64, u64)> = pairs.to_vec();
    sort_weighted(&mut v);
    summary_weighted_sorted(|| v.iter().copied(), percentiles)
}

/// Drops the pairs [`summary_weighted`] ignores and sorts the rest by value, then count: the
/// order every weighted sum runs in, so equal multisets give equal bits however they were built.
pub fn sort_weighted(pairs: &mut Vec<(f64, u64)>) {
    pairs.retain(|(x, c)| !x.is_nan() && *c > 0);
    pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
}

/// [`summary_weighted`] over pairs already in [`sort_weighted`]'s order (no NaN, no count 0),
/// streamed: `sorted` gives a fresh pass over them each call (the statistics take several).
pub fn summary_weighted_sorted<I>(sorted: impl Fn() -> I, percentiles: &[f64]) -> Summary
where
    I: Iterator<Item = (f64, u64)>,
{
    let n: u128 = sorted().map(|(_, c)| u128::from(c)).sum();
    if n == 0 {
        return Summary::of_sorted::<f64>(&[], percentiles);
    }
    let nf = n as f64;
    let mean = sorted().map(|(x, c)| x * c as f64).sum::<f64>() / nf;
    let var = sorted().map(|(x, c)| (x - mean) * (x - mean) * c as f64).sum::<f64>() / nf;
    // Value at 0-based rank `k` of the expanded, sorted sequence.
    let at = |k: u128| -> f64 {
        let mut seen = 0u128;
        let mut last = 0.0;
        for (x, c) in sorted() {
            seen += u128::from(c);
            if k < seen {
                return x;
            }
            last = x;
        }
        last
    };
    let pct = |p: f64| -> f64 {
        let p = if p.is_nan() { 50.0 } else { p.clamp(0.0, 100.0) };
        let h = p / 100.0 * (nf - 1.0);
        let lo = (h.floor() as u128).min(n - 1);
        let hi = (h.ceil() as u128).min(n - 1);
        let (a, b) = (at(lo), at(hi));
        (a + (b - a) * (h - lo as f64)).clamp(a.min(b), a.max(b))
    };
    Summary {
        count: usize::try_from(n).unwrap_or(usize::MAX),
        mean,
        median: pct(50.0),
        std: var.sqrt(),
        percentiles: percentiles.iter().map(|&p| (p, pct(p))).collect(),
    }
}

/// Two sorted streams of weighted values as one, in [`sort_weighted`]'s order: `plain` values
/// (ascending, each with count 1) and `pairs` (in that order already).
pub fn merge_weighted<'a>(
    plain: &'a [u32],
    pairs: &'a [(f64, u64)],
) -> impl Iterator<Item = (f64, u64)> + 'a {
    let key = |a: &(f64, u64), b: &(f64, u64)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    let mut xs = plain.iter().map(|&g| (f64::from(g), 1u64)).peekable();
    let mut ys = pairs.iter().copied().peekable();
    std::iter::from_fn(move || match (xs.peek(), ys.peek()) {
        (Some(a), Some(b)) if key(a, b).is_le() => xs.next(),
        (Some(_), Some(_)) | (None, Some(_)) => ys.next(),
        (Some(_), None) => xs.next(),
        (None, None) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn empty_is_zero() {
        let s = Summary::of(&[], &[50.0, 99.0]);
        assert_eq!(
            s,
            Summary {
                count: 0,
                mean: 0.0,
                median: 0.0,
                std: 0.0,
                percentiles: vec![(50.0, 0.0), (99.0, 0.0)]
            }
        );
    }

    #[test]
    fn hand_computed_examples() {
        // numpy: mean 2.5, median 2.5, std sqrt(1.25), p25 1.75, p99 3.97, p90 3.7
        let v = [4.0, 1.0, 3.0, 2.0];
        let s = Summary::of(&v, &[25.0, 90.0, 99.0, 100.0, 0.0]);
        assert_eq!(s.count, 4);
        assert_eq!(s.mean, 2.5);
        assert_eq!(s.median, 2.5);
        assert!((s.std - 1.25_f64.sqrt()).abs() < 1e-15);
        assert!((s.percentile(25.0).unwrap() - 1.75).abs() < 1e-12);
        assert!((s.percentile(90.0).unwrap() - 3.7).abs() < 1e-12);
        assert!((s.percentile(99.0).unwrap() - 3.97).abs() < 1e-12);
        assert_eq!(s.percentile(100.0), Some(4.0));
        assert_eq!(s.percentile(0.0), Some(1.0));
        // Odd count: the middle value.
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        // One value: every percentile is that value, std 0.
        let one = Summary::of(&[7.0], &[1.0, 99.9]);
        assert_eq!((one.mean, one.median, one.std), (7.0, 7.0, 0.0));
        assert_eq!(one.percentiles, vec![(1.0, 7.0), (99.9, 7.0)]);
        // numpy.percentile([10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 99.9) = 99.91
        let ten: Vec<f64> = (1..=10).map(|i| (i * 10) as f64).collect();
        assert!((percentile(&ten, 99.9) - 99.91).abs() < 1e-9);
        assert!((std_pop(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) - 2.0).abs() < 1e-15);
    }

    #[test]
    fn nan_is_ignored_and_scaling_works() {
        let s = Summary::of(&[f64::NAN, 2.0], &[50.0]);
        assert_eq!((s.count, s.mean), (1, 2.0));
        let k = Summary::of(&[1.0, 3.0], &[50.0]).scaled(1000.0);
        assert_eq!((k.mean, k.median, k.std), (2000.0, 2000.0, 1000.0));
        assert_eq!(k.percentiles, vec![(50.0, 2000.0)]);
    }

    proptest! {
        #[test]
        fn a_summary_sorted_in_place_has_the_bits_of_one_from_a_copy(
            values in prop::collection::vec(prop_oneof![any::<f64>(), Just(f64::NAN), Just(-0.0), Just(0.0)], 0..40),
        ) {
            let bits = |s: &Summary| {
                let p: Vec<(u64, u64)> = s.percentiles.iter().map(|(p, v)| (p.to_bits(), v.to_bits())).collect();
                (s.count, s.mean.to_bits(), s.median.to_bits(), s.std.to_bits(), p)
            };
            // The oracle: a sorted copy without the NaNs (a stable sort, unlike `of_vec`'s).
            let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
            sorted.sort_by(f64::total_cmp);
            let want = Summary::of_sorted(&sorted, &[50.0, 99.0, 99.9]);
            prop_assert_eq!(bits(&Summary::of(&values, &[50.0, 99.0, 99.9])), bits(&want));
            prop_assert_eq!(bits(&Summary::of_vec(values, &[50.0, 99.0, 99.9])), bits(&want));
        }

        #[test]
        fn weighted_equals_expanded(pairs in prop::collection::vec((-1.0e6f64..1.0e6, 0u64..5), 0..30), p in 0.0f64..=100.0) {
            let expanded: Vec<f64> = pairs.iter().flat_map(|&(x, c)| std::iter::repeat_n(x, c as usize)).collect();
            let a = Summary::of(&expanded, &[p, 99.0]);
            let b = summary_weighted(&pairs, &[p, 99.0]);
            prop_assert_eq!(a.count, b.count);
            let tol = |x: f64| 1e-9 * x.abs().max(1.0);
            prop_assert!((a.mean - b.mean).abs() <= tol(a.mean) * 1e3);
            prop_assert!((a.std - b.std).abs() <= 1e-6 * a.std.max(1.0));
            prop_assert!((a.median - b.median).abs() <= tol(a.median));
            for (x, y) in a.percentiles.iter().zip(&b.percentiles) {
                prop_assert!((x.1 - y.1).abs() <= tol(x.1), "p{}: {} vs {}", x.0, x.1, y.1);
            }
        }

        #[test]
        fn u32_samples_give_the_bits_of_their_f64_values(v in prop::collection::vec(any::<u32>(), 0..80), p in 0.0f64..=100.0) {
            // As `compute` summarizes ITLs: the u32 gaps sorted, then `of_sorted` over them.
            let as_f64: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
            let mut sorted = v;
            sorted.sort_unstable();
            prop_assert_eq!(Summary::of_sorted(&sorted, &[p, 99.0]), Summary::of(&as_f64, &[p, 99.0]));
        }

        #[test]
        fn merged_plain_and_weighted_give_the_bits_of_one_weighted_list(
            plain in prop::collection::vec(0u32..50, 0..40),
            pairs in prop::collection::vec((0.0f64..50.0, 0u64..4), 0..30),
            p in 0.0f64..=100.0,
        ) {
            let mut all: Vec<(f64, u64)> = plain.iter().map(|&g| (f64::from(g), 1)).chain(pairs.iter().copied()).collect();
            let want = summary_weighted(&all, &[p, 99.0]);
            let (mut plain, mut pairs) = (plain, pairs);
            plain.sort_unstable();
            sort_weighted(&mut pairs);
            let got = summary_weighted_sorted(|| merge_weighted(&plain, &pairs), &[p, 99.0]);
            prop_assert_eq!(got, want);
            sort_weighted(&mut all);
            prop_assert_eq!(merge_weighted(&plain, &pairs).collect::<Vec<_>>(), all);
        }

        #[test]
        fn percentile_properties(
            mut v in prop::collection::vec(-1.0e9f64..1.0e9, 1..60),
            ps in prop::collection::vec(0.0f64..=100.0, 1..20),
        ) {
            v.sort_by(f64::total_cmp);
            let (min, max) = (v[0], v[v.len() - 1]);
            prop_assert_eq!(percentile_sorted(&v, 0.0), min);
            prop_assert_eq!(percentile_sorted(&v, 100.0), max);
            let mut ps = ps;
            ps.sort_by(f64::total_cmp);
            let mut prev = f64::NEG_INFINITY;
            for p in ps {
                let x = percentile_sorted(&v, p);
                prop_assert!(x >= min && x <= max);
                prop_assert!(x >= prev, "not monotone at p={}: {} < {}", p, x, prev);
                prev = x;
            }
            let s = Summary::of(&v, &[]);
            prop_assert!(s.mean >= min - 1e-6 * min.abs().max(1.0) && s.mean <= max + 1e-6 * max.abs().max(1.0));
            prop_assert!(s.std >= 0.0);
            prop_assert_eq!(s.median, percentile_sorted(&v, 50.0));
        }
    }
}
