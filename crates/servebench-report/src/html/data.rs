//! What the charts plot, derived from one run's records: latency samples in both views, per-request
//! points over time, output tokens per time bin, requests in flight, queue time and lateness.
//!
//! Every value comes from `servebench_core::metrics` per-request helpers (`RequestTimes`,
//! `token_event_times`, `token_event_weights`, `push_token_view_itls`), so the charts agree with the
//! summary numbers. Times on the x axis are seconds since the run's first scheduled request.

use crate::fmt::us_to_ms;
use servebench_core::metrics::{
    is_completed, push_token_view_itls, token_event_times, token_event_weights, ttfo_us, RequestTimes,
};
use servebench_core::record::RequestRecord;

/// The narrowest output-rate bin (s); wider ones are 1, 2 or 5 × 10^k s.
const MIN_RATE_BIN_US: u64 = 100_000;
/// Rate bins are the narrowest of those widths giving at most this many bins over the run (so a
/// run longer than 20 s has 80 to 200 of them).
pub(crate) const MAX_RATE_BINS: u64 = 200;
/// Requests-in-flight curves with more steps than this are drawn as the maximum per bin.
pub(crate) const EXACT_STEPS: usize = 160;
/// Bins of a binned requests-in-flight curve (about one per horizontal pixel of a chart: dips
/// between one request ending and the next starting, microseconds apart, would otherwise draw a
/// solid comb).
pub(crate) const IN_FLIGHT_BINS: usize = 650;

/// Chart data of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunData {
    /// Service-view TTFT of completed requests, ms.
    pub ttft: Vec<f64>,
    /// Response-view TTFT (from `intended`), ms.
    pub ttft_response: Vec<f64>,
    /// Service-view E2EL, ms.
    pub e2el: Vec<f64>,
    /// Response-view E2EL, ms.
    pub e2el_response: Vec<f64>,
    /// ITL, event view (every token-event gap), ms, weight 1 each: cleaned and sorted
    /// ([`clean_and_sort`]), so the distribution charts read them without a copy.
    pub itl: Vec<(f64, u64)>,
    /// ITL, token view: `(value ms, count)`, cleaned and sorted as `itl` is.
    pub itl_tokens: Vec<(f64, u64)>,
    /// Completed requests by send time: `(dispatched s, ttft ms, e2el ms)`, sorted by time.
    pub by_send: Vec<(f64, f64, f64)>,
    /// `(prompt tokens, ttft ms)` of completed requests.
    pub prompt_ttft: Vec<(f64, f64)>,
    /// Output tokens per second: step points `(bin start s, tokens/s)`, ending with the end of
    /// the run (the last bin is partial: its rate is over its own width).
    pub tokens_per_s: Vec<(f64, f64)>,
    /// Width of a full `tokens_per_s` bin (s), from the run's length ([`rate_bin_width_us`]).
    pub rate_bin_s: f64,
    /// The run's time range: seconds from its first scheduled request to the end of its last
    /// request (the x range every time chart of the page shares).
    pub span_s: f64,
    /// Requests in flight: step points `(s, count)`.
    pub in_flight: Vec<(f64, f64)>,
    /// Whether `in_flight` was reduced to the maximum per bin.
    pub in_flight_binned: bool,
    /// `(intended s, queue ms)` of dispatched requests (any outcome).
    pub queue: Vec<(f64, f64)>,
    /// `(intended s, dispatch lateness ms)`, when the run measured it.
    pub lateness: Vec<(f64, f64)>,
    /// Service-view time to first visible output (TTFO) of completed requests, ms.
    pub ttfo: Vec<f64>,
    /// Whether any completed request's first visible content came after its first token
    /// (reasoning or tool-call text first): only then is the TTFO chart drawn.
    pub ttfo_differs: bool,
    /// Multi-turn: `(turn, ttft ms, e2el ms)` of completed requests that carry a turn index.
    pub turn_latency: Vec<(u32, f64, f64)>,
    /// Multi-turn: `(turn, prompt tokens)` of every request that carries a turn index.
    pub turn_prompts: Vec<(u32, f64)>,
}

fn secs_since(t: u64, t0: u64) -> f64 {
    t.saturating_sub(t0) as f64 / 1e6
}

impl RunData {
    /// Derives the chart data of `records`. `lateness_us[i]`, when given, is the dispatch lateness
    /// of the request with workload index `i` (the runner's client-health series).
    pub fn of(records: &[RequestRecord], lateness_us: Option<&[u64]>) -> RunData {
        let t0 = records.iter().map(|r| r.intended_us).min().unwrap_or(0);
        let mut d = RunData { rate_bin_s: 1.0, ..RunData::default() };
        let mut end_us = t0;
        let mut intervals: Vec<(u64, u64)> = Vec::new();
        // The gap samples sized once (grown by doubling, a run of millions of gaps held up to
        // twice them at a time): one per gap; the token view at most one more per request.
        let streamed = || records.iter().filter(|r| is_completed(r) && r.first_token_us.is_some());
        let gaps: usize = streamed().map(|r| r.token_events.gaps_us.len()).sum();
        d.itl.reserve_exact(gaps);
        d.itl_tokens.reserve_exact(gaps + streamed().count());
        for r in records {
            let t = RequestTimes::of(r);
            end_us = end_us.max(r.intended_us).max(t.last_known_us.or(r.dispatched_us).unwrap_or(0));
            if let Some(disp) = r.dispatched_us {
                if let Some(q) = t.queue_us {
                    d.queue.push((secs_since(r.intended_us, t0), us_to_ms(q)));
                }
                if let Some(end) = t.last_known_us.filter(|&e| e > disp) {
                    intervals.push((disp, end));
                }
            }
            if let Some(late) = lateness_us.and_then(|l| usize::try_from(r.index).ok().and_then(|i| l.get(i)))
            {
                d.lateness.push((secs_since(r.intended_us, t0), us_to_ms(*late)));
            }
            if let Some(turn) = r.turn {
                d.turn_prompts.push((turn, f64::from(r.prompt_tokens)));
            }
            if !is_completed(r) {
                continue;
            }
            if let (Some(turn), Some(v), Some(e)) = (r.turn, t.ttft_us, t.e2el_us) {
                d.turn_latency.push((turn, us_to_ms(v), us_to_ms(e)));
            }
            if let Some(v) = ttfo_us(r) {
                d.ttfo.push(us_to_ms(v));
                d.ttfo_differs |= r.first_token_us.is_some_and(|f| Some(f) != r.first_content_us);
            }
            if let (Some(v), Some(disp)) = (t.ttft_us, r.dispatched_us) {
                d.ttft.push(us_to_ms(v));
                d.prompt_ttft.push((f64::from(r.prompt_tokens), us_to_ms(v)));
                if let Some(e) = t.e2el_us {
                    d.by_send.push((secs_since(disp, t0), us_to_ms(v), us_to_ms(e)));
                }
            }
            d.ttft_response.extend(t.response_ttft_us.map(us_to_ms));
            d.e2el.extend(t.e2el_us.map(us_to_ms));
            d.e2el_response.extend(t.response_e2el_us.map(us_to_ms));
            if r.first_token_us.is_some() {
                d.itl.extend(r.token_events.gaps_us.iter().map(|&g| (f64::from(g) / 1000.0, 1)));
            }
            let mut tv = Vec::new();
            push_token_view_itls(r, &mut tv);
            d.itl_tokens.extend(tv.into_iter().map(|(v, n)| (v / 1000.0, n)));
        }
        clean_and_sort(&mut d.itl);
        clean_and_sort(&mut d.itl_tokens);
        d.by_send.sort_by(|a, b| a.0.total_cmp(&b.0));
        d.queue.sort_by(|a, b| a.0.total_cmp(&b.0));
        d.lateness.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Every completed request's token events with their weights, walked (not collected: a
        // run of a million tokens would hold them all) once for the end, once per bin pass.
        let token_events = || {
            records
                .iter()
                .filter(|r| is_completed(r))
                .flat_map(|r| token_event_times(r).into_iter().zip(token_event_weights(r)))
        };
        end_us = token_events().map(|e| e.0).fold(end_us, u64::max);
        d.span_s = secs_since(end_us, t0);
        (d.tokens_per_s, d.rate_bin_s) = rate_bins(token_events, t0, end_us);
        (d.in_flight, d.in_flight_binned) = in_flight_steps(&intervals, t0);
        d
    }
}

/// The width (µs) of the output-rate bins of a run of `span_us`: the narrowest of 0.1, 0.2, 0.5,
/// 1, 2, 5, 10, … s giving at most [`MAX_RATE_BINS`] bins.
pub(crate) fn rate_bin_width_us(span_us: u64) -> u64 {
    let mut decade = MIN_RATE_BIN_US;
    loop {
        for m in [1, 2, 5] {
            let w = decade.saturating_mul(m);
            if span_us.div_ceil(w) <= MAX_RATE_BINS || w == u64::MAX {
                return w;
            }
        }
        decade = decade.saturating_mul(10);
    }
}

/// Bin edges (µs from `t0`) over `[0, span_us]` in bins of `width_us`: full bins, then the
/// partial one up to the end, merged into the previous bin when shorter than half a bin (a rate
/// over a sliver of time is mostly noise).
fn rate_edges(span_us: u64, width_us: u64) -> Vec<u64> {
    let full = span_us / width_us;
    let rem = span_us % width_us;
    let mut edges: Vec<u64> = (0..=full).map(|k| k * width_us).collect();
    if rem > 0 {
        if full > 0 && rem < width_us / 2 {
            edges.pop();
        }
        edges.push(span_us);
    }
    if edges.len() < 2 {
        edges.push(width_us);
    }
    edges
}

/// Output tokens per second, token-weighted, in bins of [`rate_bin_width_us`] aligned to `t0`
/// up to `end_us` (the run's end): each bin's tokens over its own width, so the partial last
/// bin is not drawn as a collapse. Step points plus the run's end; the full-bin width (s).
fn rate_bins<I: Iterator<Item = (u64, f64)>>(
    events: impl Fn() -> I,
    t0: u64,
    end_us: u64,
) -> (Vec<(f64, f64)>, f64) {
    let Some(last) = events().map(|e| e.0).max() else { return (Vec::new(), 1.0) };
    let span_us = end_us.max(last).saturating_sub(t0);
    let width_us = rate_bin_width_us(span_us);
    let edges = rate_edges(span_us, width_us);
    let mut tokens = vec![0.0; edges.len() - 1];
    for (t, w) in events() {
        // Bin k holds [edges[k], edges[k+1]); the run's last instant is in the last bin.
        let b = edges[1..edges.len() - 1].partition_point(|&e| e <= t.saturating_sub(t0));
        tokens[b] += w;
    }
    let mut out: Vec<(f64, f64)> = tokens
        .iter()
        .zip(edges.windows(2))
        .map(|(&n, e)| (e[0] as f64 / 1e6, n * 1e6 / (e[1] - e[0]) as f64))
        .collect();
    if let (Some(&(_, v)), Some(&end)) = (out.last(), edges.last()) {
        out.push((end as f64 / 1e6, v));
    }
    (out, width_us as f64 / 1e6)
}

/// The exact number of requests in flight (`[dispatched, end)` intervals, ends before starts at
/// equal times) as step points; above `EXACT_STEPS` steps, the maximum per bin of
/// 1/`IN_FLIGHT_BINS` of the span.
fn in_flight_steps(intervals: &[(u64, u64)], t0: u64) -> (Vec<(f64, f64)>, bool) {
    let mut ev: Vec<(u64, i64)> = Vec::with_capacity(intervals.len() * 2);
    for &(s, e) in intervals {
        ev.push((s, 1));
        ev.push((e, -1));
    }
    ev.sort_unstable();
    let mut steps: Vec<(u64, i64)> = Vec::new();
    let mut cur = 0i64;
    for (t, delta) in ev {
        cur += delta;
        match steps.last_mut() {
            Some(last) if last.0 == t => last.1 = cur,
            _ => steps.push((t, cur)),
        }
    }
    if steps.len() <= EXACT_STEPS {
        return (steps.iter().map(|&(t, c)| (secs_since(t, t0), c as f64)).collect(), false);
    }
    let (first, last) = match (steps.first(), steps.last()) {
        (Some(f), Some(l)) => (f.0, l.0),
        _ => return (Vec::new(), false),
    };
    let nbins = IN_FLIGHT_BINS;
    let width = (last - first).div_ceil(nbins as u64).max(1);
    let mut maxes = vec![0i64; nbins + 1];
    let mut prev = 0i64;
    let mut idx = 0usize;
    for (b, slot) in maxes.iter_mut().enumerate() {
        let end = first + (b as u64 + 1) * width;
        // The level carried into the bin counts too.
        let mut m = prev;
        while let Some(&(t, c)) = steps.get(idx) {
            if t >= end {
                break;
            }
            m = m.max(c);
            prev = c;
            idx += 1;
        }
        *slot = m;
    }
    let out = maxes
        .iter()
        .enumerate()
        .map(|(b, &m)| (secs_since(first + b as u64 * width, t0), m as f64))
        .collect();
    (out, true)
}

/// Up to `max` points of `points`, chosen deterministically at evenly spaced indices; the point
/// with the largest y is always kept (outliers stay visible).
pub(crate) fn downsample(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max || max == 0 {
        return points.to_vec();
    }
    let n = points.len();
    let mut idx: Vec<usize> =
        (0..max.saturating_sub(1)).map(|k| k * n / max.saturating_sub(1).max(1)).collect();
    if let Some((i, _)) = points.iter().enumerate().max_by(|a, b| a.1 .1.total_cmp(&b.1 .1)) {
        idx.push(i);
    }
    idx.sort_unstable();
    idx.dedup();
    idx.into_iter().filter_map(|i| points.get(i).copied()).collect()
}

/// Keeps the finite values of positive weight, sorted by value: what [`cdf_sorted`] and
/// [`weighted_percentile_sorted`] take (sorted once, in place, for every use of a curve).
pub(crate) fn clean_and_sort(v: &mut Vec<(f64, u64)>) {
    v.retain(|(x, n)| x.is_finite() && *n > 0);
    v.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
}

/// Empirical CDF of weighted values, already cleaned and sorted ([`clean_and_sort`]), each
/// divided by `k` (the chart's unit), as at most `max_points` `(value, percent ≤ value)` points. The full curve is one point at the first value (0 %) and one per distinct
/// value; `max_points` of them, evenly spaced by rank, are picked as it is walked (a curve of
/// millions of gaps is not built whole first).
pub(crate) fn cdf_sorted(v: &[(f64, u64)], k: f64, max_points: usize) -> Vec<(f64, f64)> {
    let total: u64 = v.iter().map(|p| p.1).sum();
    let Some(&(x0, _)) = v.first() else { return Vec::new() };
    if total == 0 {
        return Vec::new();
    }
    // The curve's points in order: the 0 % start, then each distinct value with its share.
    let curve = || {
        let mut acc = 0u64;
        let groups = v.chunk_by(|a, b| a.0 / k == b.0 / k).map(move |g| {
            acc += g.iter().map(|p| p.1).sum::<u64>();
            (g[0].0 / k, acc as f64 * 100.0 / total as f64)
        });
        std::iter::once((x0 / k, 0.0)).chain(groups)
    };
    let n = curve().count();
    if n <= max_points {
        return curve().collect();
    }
    let m = max_points.max(2);
    let mut picks = (0..m).map(|j| j * (n - 1) / (m - 1)).peekable();
    let mut out = Vec::with_capacity(m);
    for (i, p) in curve().enumerate() {
        while picks.next_if_eq(&i).is_some() {
            out.push(p);
        }
    }
    out.dedup_by(|a, b| a == b);
    out
}

/// Unweighted values as weight-1 pairs.
pub(crate) fn ones(values: &[f64]) -> Vec<(f64, u64)> {
    values.iter().map(|&v| (v, 1)).collect()
}

/// Weighted percentile `p` (0..=100) of `(value, count)` pairs: the smallest value whose
/// cumulative share reaches `p` (nearest rank). `None` when empty.
pub(crate) fn weighted_percentile(values: &[(f64, u64)], p: f64) -> Option<f64> {
    let mut v = values.to_vec();
    clean_and_sort(&mut v);
    weighted_percentile_sorted(&v, p)
}

/// [`weighted_percentile`] of values already cleaned and sorted ([`clean_and_sort`]).
pub(crate) fn weighted_percentile_sorted(v: &[(f64, u64)], p: f64) -> Option<f64> {
    let total: u64 = v.iter().map(|x| x.1).sum();
    if total == 0 {
        return None;
    }
    let rank = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
    let mut acc = 0u64;
    for (x, n) in v {
        acc += n;
        if acc >= rank {
            return Some(*x);
        }
    }
    v.last().map(|x| x.0)
}

/// Histogram of weighted values over shared, increasing `edges` (any widths): percent of the
/// weight per bin; values beyond the last edge go to the last bin, below the first to the first.
/// Histogram of weighted values, each divided by `k` (the chart's unit), over shared, increasing
/// `edges` (any widths): percent of the weight per bin; values beyond the last edge go to the
/// last bin, below the first to the first.
pub(crate) fn histogram_scaled(values: &[(f64, u64)], k: f64, edges: &[f64]) -> Vec<f64> {
    let bins = edges.len().saturating_sub(1);
    let mut out = vec![0.0; bins];
    if bins == 0 {
        return out;
    }
    let inner = edges.get(1..bins).unwrap_or_default();
    let mut total = 0u64;
    for (x, n) in values.iter().map(|&(x, n)| (x / k, n)).filter(|(x, _)| x.is_finite()) {
        // Bin k holds [edges[k], edges[k+1]); the count of inner edges ≤ x is k.
        let b = inner.partition_point(|&e| e <= x);
        if let Some(slot) = out.get_mut(b) {
            *slot += n as f64;
        }
        total += n;
    }
    if total > 0 {
        for v in &mut out {
            *v *= 100.0 / total as f64;
        }
    }
    out
}

/// Rolling percentile lines of `(x, y)` points sorted by x: for bins of `width` along x, the
/// p-th percentile of the bin's y values (nearest rank), plotted at the centre of the part of the
/// bin before `end` (the last bin is partial: its point stays inside the run).
pub(crate) fn binned_percentile(points: &[(f64, f64)], width: f64, p: f64, end: f64) -> Vec<(f64, f64)> {
    if points.is_empty() || width.is_nan() || width <= 0.0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let b = (points[i].0 / width).floor();
        let mut ys = Vec::new();
        while i < points.len() && (points[i].0 / width).floor() == b {
            ys.push((points[i].1, 1));
            i += 1;
        }
        if let Some(v) = weighted_percentile(&ys, p) {
            let lo = b * width;
            out.push(((lo + ((b + 1.0) * width).min(end.max(lo))) / 2.0, v));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_bins_weigh_tokens_per_second() {
        // 25-s run: 0.2-s bins (0.1 s would make 250).
        let ev = [(0, 2.0), (100_000, 3.0), (250_000, 4.0)];
        let (b, w) = rate_bins(|| ev.iter().copied(), 0, 25_000_000);
        assert_eq!(w, 0.2);
        assert_eq!(&b[..2], &[(0.0, 25.0), (0.2, 20.0)]);
        assert_eq!(b.len(), 126);
        assert!(rate_bins(std::iter::empty, 0, 10).0.is_empty());
        let long: Vec<(u64, f64)> = (0..20_000u64).map(|s| (s * 1_000_000, 1.0)).collect();
        let (b, w) = rate_bins(|| long.iter().copied(), 0, 20_000_000_000);
        assert_eq!(w, 100.0);
        assert_eq!(b.len(), 201);
        assert!(b.iter().all(|p| (p.1 - 1.0).abs() < 1e-9), "per-second values stay per second");
    }

    #[test]
    fn rate_bin_widths_follow_the_run_length() {
        let w = |s: f64| rate_bin_width_us((s * 1e6) as u64) as f64 / 1e6;
        assert_eq!(
            [w(0.0), w(2.16), w(20.0), w(20.1), w(60.0), w(600.0), w(3600.0)],
            [0.1, 0.1, 0.1, 0.2, 0.5, 5.0, 20.0]
        );
    }

    /// Issue 23.6: a 2.16-s run at a constant 100 tok/s used to end in a 1-s bin holding 0.16 s
    /// of tokens drawn as a full second (a fake collapse to 16 tok/s) on an axis running to 3 s.
    /// Every bin, the partial last one included, is 100 tok/s, and the curve ends at 2.16 s.
    #[test]
    fn constant_rate_gives_flat_bins_including_the_partial_last() {
        let ev: Vec<(u64, f64)> = (0..216u64).map(|i| (1_000_000 + i * 10_000, 1.0)).collect();
        let (b, w) = rate_bins(|| ev.iter().copied(), 1_000_000, 3_160_000);
        assert_eq!(w, 0.1);
        assert_eq!(b.len(), 23, "21 full bins, the 0.06-s one, the end point");
        assert!(b.iter().all(|p| (p.1 - 100.0).abs() < 1e-9), "{b:?}");
        assert_eq!(b.last().map(|p| p.0), Some(2.16));
        // A 0.03-s remainder (under half a bin) joins the bin before it: still flat.
        let (b, _) = rate_bins(|| ev[..213].iter().copied(), 1_000_000, 3_130_000);
        assert!(b.iter().all(|p| (p.1 - 100.0).abs() < 1e-9), "{b:?}");
        assert_eq!(b.iter().rev().nth(1).map(|p| p.0), Some(2.0));
        assert_eq!(b.last().map(|p| p.0), Some(2.13));
    }

    #[test]
    fn in_flight_counts_back_to_back_as_one() {
        let (s, binned) = in_flight_steps(&[(0, 10), (10, 20), (5, 15)], 0);
        assert!(!binned);
        let max = s.iter().map(|p| p.1).fold(0.0, f64::max);
        assert_eq!(max, 2.0);
        assert_eq!(s.last().map(|p| p.1), Some(0.0));
        let many: Vec<(u64, u64)> = (0..5000u64).map(|i| (i * 10, i * 10 + 25)).collect();
        let (s, binned) = in_flight_steps(&many, 0);
        assert!(binned && s.len() <= IN_FLIGHT_BINS + 1);
        assert_eq!(s.iter().map(|p| p.1).fold(0.0, f64::max), 3.0);
    }

    #[test]
    fn downsample_is_deterministic_and_keeps_max() {
        let pts: Vec<(f64, f64)> =
            (0..10_000).map(|i| (i as f64, if i == 7777 { 1e6 } else { 1.0 })).collect();
        let a = downsample(&pts, 500);
        assert!(a.len() <= 501);
        assert_eq!(a, downsample(&pts, 500));
        assert!(a.iter().any(|p| p.1 == 1e6));
        assert_eq!(downsample(&pts[..10], 500).len(), 10);
    }

    fn cdf(values: &[(f64, u64)], max_points: usize) -> Vec<(f64, f64)> {
        let mut v = values.to_vec();
        clean_and_sort(&mut v);
        cdf_sorted(&v, 1.0, max_points)
    }

    fn histogram(values: &[(f64, u64)], edges: &[f64]) -> Vec<f64> {
        histogram_scaled(values, 1.0, edges)
    }

    /// The CDF as it was built before it was picked while walked: the whole curve of scaled
    /// values, then `max_points` of it by rank.
    fn whole_curve_cdf(values: &[(f64, u64)], k: f64, max_points: usize) -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, u64)> =
            values.iter().map(|&(x, n)| (x / k, n)).filter(|(x, n)| x.is_finite() && *n > 0).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: u64 = v.iter().map(|p| p.1).sum();
        let Some(&(x0, _)) = v.first() else { return Vec::new() };
        let mut full = vec![(x0, 0.0)];
        let mut acc = 0u64;
        for (x, n) in v {
            acc += n;
            let pct = acc as f64 * 100.0 / total as f64;
            match full.last_mut() {
                Some(last) if last.0 == x && last.1 > 0.0 => last.1 = pct,
                _ => full.push((x, pct)),
            }
        }
        if full.len() <= max_points {
            return full;
        }
        let (n, m) = (full.len(), max_points.max(2));
        let mut out: Vec<(f64, f64)> =
            (0..m).filter_map(|j| full.get(j * (n - 1) / (m - 1)).copied()).collect();
        out.dedup_by(|a, b| a == b);
        out
    }

    proptest::proptest! {
        /// Pins the CDF picked while its curve is walked (no whole curve held: a run of
        /// millions of gaps held it beside five copies of its samples) to the whole curve's picks.
        #[test]
        fn the_walked_cdf_picks_the_points_of_the_whole_curve(
            xs in proptest::collection::vec((0u32..50, 0u64..4), 0..300),
            k in proptest::sample::select(vec![1.0, 1000.0, 3.0]),
            points in 1usize..40,
        ) {
            let values: Vec<(f64, u64)> = xs.iter().map(|&(x, n)| (f64::from(x) * 0.7, n)).collect();
            let mut sorted = values.clone();
            clean_and_sort(&mut sorted);
            proptest::prop_assert_eq!(cdf_sorted(&sorted, k, points), whole_curve_cdf(&values, k, points));
        }
    }

    #[test]
    fn cdf_histogram_and_percentiles() {
        let v = ones(&[1.0, 2.0, 2.0, 4.0]);
        assert_eq!(cdf(&v, 100), vec![(1.0, 0.0), (1.0, 25.0), (2.0, 75.0), (4.0, 100.0)]);
        assert!(cdf(&[], 10).is_empty());
        assert!(cdf(&ones(&(0..10_000).map(f64::from).collect::<Vec<_>>()), 300).len() <= 300);
        assert_eq!(histogram(&v, &[0.0, 2.0, 4.0]), vec![25.0, 75.0]);
        assert_eq!(histogram(&ones(&[10.0]), &[0.0, 2.0, 4.0]), vec![0.0, 100.0]);
        assert_eq!(histogram(&ones(&[-1.0, 1.0, 5.0, 50.0]), &[1.0, 10.0, 100.0]), vec![75.0, 25.0]);
        assert_eq!(weighted_percentile(&v, 50.0), Some(2.0));
        assert_eq!(weighted_percentile(&v, 100.0), Some(4.0));
        assert_eq!(weighted_percentile(&[], 50.0), None);
        let pts = vec![(0.1, 1.0), (0.2, 3.0), (1.5, 5.0)];
        assert_eq!(binned_percentile(&pts, 1.0, 50.0, 3.0), vec![(0.5, 1.0), (1.5, 5.0)]);
        // The last bin ends with the run: its point sits in the middle of what was run.
        assert_eq!(binned_percentile(&pts, 1.0, 50.0, 1.6), vec![(0.5, 1.0), (1.3, 5.0)]);
    }
}
