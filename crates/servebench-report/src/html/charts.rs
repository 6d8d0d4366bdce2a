//! The report's charts, built from [`RunData`] of one or more runs (several runs overlay their
//! curves, one colour per run). Each function returns a [`Chart`] ready for `svg::render`.

use std::borrow::Cow;

use super::data::{
    binned_percentile, cdf_sorted, clean_and_sort, downsample, histogram_scaled, ones,
    weighted_percentile_sorted, RunData,
};
use super::svg::{nice_step, AxisSpec, Chart, Kind, Series, Style};

/// Scatter points per chart, shared between runs.
pub const MAX_SCATTER_POINTS: usize = 5000;
/// Points per CDF curve.
const CDF_POINTS: usize = 400;
/// Target number of histogram bins.
const HIST_BINS: f64 = 40.0;
/// Histograms span up to this percentile of the pooled values; the rest lands in the last bin.
const HIST_CLIP_PERCENTILE: f64 = 99.5;
/// Distribution charts switch to a log x axis when curve medians differ by more than this factor.
const LOG_RATIO: f64 = 8.0;
/// Latency axes switch from ms to s above this many ms.
const SECONDS_ABOVE_MS: f64 = 5000.0;

/// A run's label and chart data.
pub(crate) type Run<'a> = (&'a str, &'a RunData);
/// Weighted samples: `(value, count)`, the run's own when it holds them cleaned and sorted
/// ([`clean_and_sort`]), else a copy.
type Weighted<'d> = Cow<'d, [(f64, u64)]>;
/// Extracts one curve's samples from a run.
type Extract = for<'d> fn(&'d RunData) -> Weighted<'d>;
/// One curve of a distribution chart: (run, "p"rimary or "s"econdary, samples, style).
type Curve<'d> = (usize, &'static str, Weighted<'d>, Style);

/// `name` prefixed with the run label when several runs share the chart.
fn series_name(runs: &[Run<'_>], label: &str, name: &str) -> String {
    if runs.len() > 1 {
        if name.is_empty() {
            label.to_string()
        } else {
            format!("{label}: {name}")
        }
    } else if name.is_empty() {
        "requests".to_string()
    } else {
        name.to_string()
    }
}

/// Display unit for latencies whose largest value is `max_ms`: (divisor, unit).
fn latency_unit(max_ms: f64) -> (f64, &'static str) {
    if max_ms > SECONDS_ABOVE_MS {
        (1000.0, "s")
    } else {
        (1.0, "ms")
    }
}

/// The x axis of a time chart: from 0 to `span_s`, the page's shared time range (every time
/// chart of a page covers the same seconds), or from the data when no run has a span.
pub(crate) fn time_axis(label: &str, span_s: f64) -> AxisSpec {
    AxisSpec { max: (span_s > 0.0).then_some(span_s), ..AxisSpec::new(label).starting_at_zero() }
}

fn max_of<'a>(it: impl Iterator<Item = &'a f64>) -> f64 {
    it.copied().filter(|v| v.is_finite()).fold(0.0, f64::max)
}

/// A latency distribution: which samples, and how they are named.
pub(crate) struct Dist<'a> {
    pub id: &'a str,
    pub metric: &'a str,
    pub what: &'a str,
    /// (name, samples) of the primary (solid) and secondary (dashed) curve of a run.
    pub primary: (&'a str, Extract),
    pub secondary: (&'a str, Extract),
    pub note: &'a str,
}

/// The TTFT distribution: service view (solid) and response view (dashed).
pub(crate) fn ttft_dist() -> Dist<'static> {
    Dist {
        id: "ttft",
        metric: "TTFT",
        what: "requests",
        primary: ("service view (from dispatched)", |d| Cow::Owned(ones(&d.ttft))),
        secondary: ("response view (from intended)", |d| Cow::Owned(ones(&d.ttft_response))),
        note: "Time to first token of completed requests. Service view: from dispatch (vLLM's TTFT). \
               Response view: from the scheduled send time, including client queueing.",
    }
}

/// The ITL distribution: event view (solid) and token view (dashed).
pub(crate) fn itl_dist() -> Dist<'static> {
    Dist {
        id: "itl",
        metric: "ITL",
        what: "gaps",
        primary: ("event view (gaps between token events)", |d| Cow::Borrowed(&d.itl)),
        secondary: ("token view (gaps spread over tokens)", |d| Cow::Borrowed(&d.itl_tokens)),
        note: "Inter-token latency of completed requests. Event view: every gap between consecutive \
               token events (vLLM's ITL). Token view: each gap divided over the tokens the event carried.",
    }
}

/// The E2EL distribution: service view (solid) and response view (dashed).
pub(crate) fn e2el_dist() -> Dist<'static> {
    Dist {
        id: "e2el",
        metric: "E2EL",
        what: "requests",
        primary: ("service view (from dispatched)", |d| Cow::Owned(ones(&d.e2el))),
        secondary: ("response view (from intended)", |d| Cow::Owned(ones(&d.e2el_response))),
        note: "End-to-end latency of completed requests. Service view: from dispatch. Response view: \
               from the scheduled send time, including client queueing.",
    }
}

/// Every run's two curves of `dist`, cleaned and sorted ([`clean_and_sort`]): the percentiles,
/// the CDF and the histogram read them as they are. The inter-token gaps are the run's own
/// (sorted when its data was derived): a run of millions of gaps had held five copies of them.
fn dist_samples<'d>(runs: &[Run<'d>], dist: &Dist<'_>) -> Vec<Curve<'d>> {
    let mut out = Vec::new();
    for (i, (_, d)) in runs.iter().enumerate() {
        out.push((i, "p", (dist.primary.1)(d), Style::Solid));
        out.push((i, "s", (dist.secondary.1)(d), Style::Dashed));
    }
    for curve in &mut out {
        if let Cow::Owned(v) = &mut curve.2 {
            clean_and_sort(v);
        }
    }
    out
}

/// Whether a distribution chart needs a log x axis: its curves' medians differ by more than
/// `LOG_RATIO` (e.g. a 50 ms service TTFT next to a 10 s response TTFT under client queueing).
fn wants_log(samples: &[Curve<'_>]) -> bool {
    let medians: Vec<f64> =
        samples.iter().filter_map(|s| weighted_percentile_sorted(&s.2, 50.0)).filter(|m| *m > 0.0).collect();
    let lo = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = medians.iter().copied().fold(0.0, f64::max);
    lo.is_finite() && hi / lo > LOG_RATIO
}

fn dist_name<'a>(dist: &Dist<'a>, which: &str) -> &'a str {
    if which == "p" {
        dist.primary.0
    } else {
        dist.secondary.0
    }
}

/// CDF chart of a distribution (percent of samples ≤ x).
pub(crate) fn cdf_chart(runs: &[Run<'_>], dist: &Dist<'_>) -> Chart {
    let samples = dist_samples(runs, dist);
    let max =
        samples.iter().flat_map(|s| s.2.iter().map(|p| p.0)).filter(|v| v.is_finite()).fold(0.0, f64::max);
    let (k, unit) = latency_unit(max);
    let log = wants_log(&samples);
    let series = samples
        .iter()
        .map(|(i, which, v, style)| Series {
            run: *i,
            name: series_name(runs, runs[*i].0, dist_name(dist, which)),
            style: *style,
            kind: Kind::Line(cdf_sorted(v, k, CDF_POINTS)),
        })
        .collect();
    let mut note = dist.note.to_string();
    let x = if log {
        note.push_str(" Log scale: the curves differ by more than 8×.");
        AxisSpec { log: true, ..AxisSpec::new(format!("{} ({unit}, log scale)", dist.metric)) }
    } else {
        AxisSpec { fit: true, ..AxisSpec::new(format!("{} ({unit})", dist.metric)) }
    };
    Chart {
        id: format!("{}-cdf", dist.id),
        title: format!("{} distribution (CDF)", dist.metric),
        note,
        x,
        y: AxisSpec {
            max: Some(100.0),
            ..AxisSpec::new(format!("{} ≤ x (%)", dist.what)).starting_at_zero()
        },
        series,
    }
}

/// Histogram chart of a distribution (percent of samples per bin), bins shared by every curve.
pub(crate) fn hist_chart(runs: &[Run<'_>], dist: &Dist<'_>) -> Chart {
    let samples = dist_samples(runs, dist);
    // Every curve's values (finite: cleaned), walked rather than pooled into one more copy.
    let pooled = || samples.iter().flat_map(|s| s.2.iter().map(|p| p.0));
    let max = pooled().fold(0.0, f64::max);
    let (k, unit) = latency_unit(max);
    let lo = pooled().fold(f64::INFINITY, f64::min) / k;
    let clip = samples
        .iter()
        .filter_map(|s| weighted_percentile_sorted(&s.2, HIST_CLIP_PERCENTILE))
        .fold(f64::NEG_INFINITY, f64::max)
        / k;
    let mut note = dist.note.to_string();
    let log = wants_log(&samples);
    let edges: Vec<f64> = if log {
        // Geometric bins from the smallest positive value to the clip point.
        let lo_pos = pooled().map(|x| x / k).filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let n = HIST_BINS as usize;
        let ratio = (clip / lo_pos).max(1.0 + 1e-9);
        note.push_str(" Log scale with log-spaced bins: the curves differ by more than 8×.");
        (0..=n).map(|b| lo_pos * ratio.powf(b as f64 / n as f64)).collect()
    } else if lo.is_finite() && clip.is_finite() {
        let width = nice_step(((clip - lo) / HIST_BINS).max(clip.abs() * 1e-3).max(1e-3));
        let start = (lo / width).floor() * width;
        let n = (((clip - start) / width).floor() as usize + 1).clamp(1, 400);
        (0..=n).map(|b| start + b as f64 * width).collect()
    } else {
        Vec::new()
    };
    if edges.last().is_some_and(|&e| max / k > e) {
        note.push_str(&format!(
            " Bins end at the p{HIST_CLIP_PERCENTILE} of the slowest curve; larger values are counted in the last bin."
        ));
    }
    let series = samples
        .iter()
        .map(|(i, which, v, style)| Series {
            run: *i,
            name: series_name(runs, runs[*i].0, dist_name(dist, which)),
            style: *style,
            kind: Kind::Hist { values: histogram_scaled(v, k, &edges), edges: edges.clone() },
        })
        .collect();
    Chart {
        id: format!("{}-hist", dist.id),
        title: format!("{} histogram", dist.metric),
        note,
        x: if log {
            AxisSpec { log: true, ..AxisSpec::new(format!("{} ({unit}, log scale)", dist.metric)) }
        } else {
            AxisSpec {
                min: edges.first().copied(),
                max: edges.last().copied(),
                ..AxisSpec::new(format!("{} ({unit})", dist.metric))
            }
        },
        y: AxisSpec::new(format!("share of {} (%)", dist.what)).starting_at_zero(),
        series,
    }
}

/// Scatter of a latency (TTFT or E2EL) by send time with binned p50 (solid) and p99 (dashed) lines,
/// over the page's time range `span_s`.
pub(crate) fn latency_over_time(runs: &[Run<'_>], metric: &str, e2el: bool, span_s: f64) -> Chart {
    let pick = |d: &RunData| -> Vec<(f64, f64)> {
        d.by_send.iter().map(|&(t, ttft, e)| (t, if e2el { e } else { ttft })).collect()
    };
    let all: Vec<Vec<(f64, f64)>> = runs.iter().map(|(_, d)| pick(d)).collect();
    let (k, unit) = latency_unit(max_of(all.iter().flat_map(|v| v.iter().map(|p| &p.1))));
    let span = max_of(all.iter().flat_map(|v| v.iter().map(|p| &p.0))).max(span_s);
    let width = nice_step((span / 30.0).max(1e-3));
    let budget = MAX_SCATTER_POINTS / runs.len().max(1);
    let mut series = Vec::new();
    for (i, pts) in all.iter().enumerate() {
        let pts: Vec<(f64, f64)> = pts.iter().map(|&(t, v)| (t, v / k)).collect();
        series.push(Series {
            run: i,
            name: series_name(runs, runs[i].0, "requests"),
            style: Style::Solid,
            kind: Kind::Dots(downsample(&pts, budget)),
        });
        for (p, style) in [(50.0, Style::Bold), (99.0, Style::BoldDashed)] {
            series.push(Series {
                run: i,
                name: series_name(
                    runs,
                    runs[i].0,
                    &format!("p{p} per {} s", super::svg::fmt_tick(width, width)),
                ),
                style,
                kind: Kind::Line(binned_percentile(&pts, width, p, span)),
            });
        }
    }
    Chart {
        id: format!("{}-time", metric.to_lowercase()),
        title: format!("{metric} over time"),
        note: format!(
            "{metric} (service view) of each completed request by the time it was sent, with its p50 and \
             p99 over consecutive time bins. Drift upwards means the server fell behind."
        ),
        x: time_axis("send time since first scheduled request (s)", span_s),
        y: AxisSpec::new(format!("{metric} ({unit})")).starting_at_zero(),
        series,
    }
}

/// Output tokens per second in time bins (width from the run's length), token-weighted.
pub(crate) fn tokens_over_time(runs: &[Run<'_>], span_s: f64) -> Chart {
    let mut widths: Vec<f64> =
        runs.iter().filter(|(_, d)| !d.tokens_per_s.is_empty()).map(|(_, d)| d.rate_bin_s).collect();
    widths.sort_by(f64::total_cmp);
    widths.dedup();
    let widths: Vec<String> = widths.iter().map(|w| format!("{w} s")).collect();
    let note = format!(
        "Output tokens received per second, in bins of {} from the first scheduled request (the width \
         follows the run's length; each token event weighs the tokens it carried). The last bin ends \
         with the run and its rate is over its own width (under half a bin, it joins the bin before).",
        if widths.is_empty() { "-".to_string() } else { widths.join(" / ") }
    );
    let series = runs
        .iter()
        .enumerate()
        .map(|(i, (l, d))| Series {
            run: i,
            name: series_name(runs, l, "output tokens/s"),
            style: Style::Solid,
            kind: Kind::Step(d.tokens_per_s.clone()),
        })
        .collect();
    Chart {
        id: "tokens-time".into(),
        title: "Output tokens/s over time".into(),
        note,
        x: time_axis("time since first scheduled request (s)", span_s),
        y: AxisSpec::new("output tokens/s").starting_at_zero(),
        series,
    }
}

/// Requests in flight (dispatched, not yet ended) over time.
pub(crate) fn in_flight_over_time(runs: &[Run<'_>], span_s: f64) -> Chart {
    let mut note = "Requests in flight: dispatched and not yet ended (any outcome).".to_string();
    if runs.iter().any(|(_, d)| d.in_flight_binned) {
        note.push_str(" Drawn as the maximum of the exact count per time bin (about one bin per pixel).");
    } else {
        note.push_str(" Exact step function.");
    }
    let series = runs
        .iter()
        .enumerate()
        .map(|(i, (l, d))| Series {
            run: i,
            name: series_name(runs, l, "in flight"),
            style: Style::Solid,
            kind: Kind::Step(d.in_flight.clone()),
        })
        .collect();
    Chart {
        id: "inflight-time".into(),
        title: "Requests in flight over time".into(),
        note,
        x: time_axis("time since first scheduled request (s)", span_s),
        y: AxisSpec { integer: true, ..AxisSpec::new("requests in flight").starting_at_zero() },
        series,
    }
}

/// Queue time (dots) and, when measured, dispatch lateness (crosses) by intended send time.
pub(crate) fn queue_over_time(runs: &[Run<'_>], span_s: f64) -> Chart {
    let max = max_of(runs.iter().flat_map(|(_, d)| d.queue.iter().chain(&d.lateness).map(|p| &p.1)));
    let (k, unit) = latency_unit(max);
    let per_series = MAX_SCATTER_POINTS / (2 * runs.len().max(1));
    let mut series = Vec::new();
    let mut any_lateness = false;
    for (i, (l, d)) in runs.iter().enumerate() {
        let q: Vec<(f64, f64)> = d.queue.iter().map(|&(t, v)| (t, v / k)).collect();
        series.push(Series {
            run: i,
            name: series_name(runs, l, "queue time (dispatched − intended)"),
            style: Style::Solid,
            kind: Kind::Dots(downsample(&q, per_series)),
        });
        if !d.lateness.is_empty() {
            any_lateness = true;
            let late: Vec<(f64, f64)> = d.lateness.iter().map(|&(t, v)| (t, v / k)).collect();
            series.push(Series {
                run: i,
                name: series_name(runs, l, "dispatch lateness (released − intended)"),
                style: Style::Solid,
                kind: Kind::Crosses(downsample(&late, per_series)),
            });
        }
    }
    let mut note = "Client-side delay of each dispatched request by its scheduled send time. Queue time = \
                    dispatched − intended: scheduler lateness plus waiting for a --max-concurrency slot."
        .to_string();
    if !any_lateness {
        note.push_str(
            " Dispatch lateness alone is measured only during a run (--html-report), not stored in records.",
        );
    }
    Chart {
        id: "queue-time".into(),
        title: "Queue time and dispatch lateness over time".into(),
        note,
        x: time_axis("scheduled send time since first scheduled request (s)", span_s),
        y: AxisSpec::new(format!("delay ({unit})")).starting_at_zero(),
        series,
    }
}

/// TTFT against prompt length (client-counted prompt tokens).
pub(crate) fn ttft_vs_prompt(runs: &[Run<'_>]) -> Chart {
    let (k, unit) = latency_unit(max_of(runs.iter().flat_map(|(_, d)| d.prompt_ttft.iter().map(|p| &p.1))));
    let budget = MAX_SCATTER_POINTS / runs.len().max(1);
    let series = runs
        .iter()
        .enumerate()
        .map(|(i, (l, d))| {
            let pts: Vec<(f64, f64)> = d.prompt_ttft.iter().map(|&(x, y)| (x, y / k)).collect();
            Series {
                run: i,
                name: series_name(runs, l, ""),
                style: Style::Solid,
                kind: Kind::Dots(downsample(&pts, budget)),
            }
        })
        .collect();
    Chart {
        id: "ttft-prompt".into(),
        title: "TTFT vs prompt length".into(),
        note: "TTFT (service view) of each completed request against its prompt length. A rising \
               slope is prefill cost; a vertical spread at one length is queueing."
            .into(),
        x: AxisSpec::new("prompt length (tokens)").starting_at_zero(),
        y: AxisSpec::new(format!("TTFT ({unit})")).starting_at_zero(),
        series,
    }
}

/// Every chart of the report in page order, grouped: (section title, charts). Time charts share
/// the x range `[0, span_s]`.
pub(crate) fn all_charts(runs: &[Run<'_>], span_s: f64) -> Vec<(&'static str, Vec<Chart>)> {
    let dists = [ttft_dist(), itl_dist(), e2el_dist()];
    let mut latency = Vec::new();
    for d in &dists {
        latency.push(cdf_chart(runs, d));
        latency.push(hist_chart(runs, d));
    }
    vec![
        ("Latency distributions", latency),
        (
            "Latency over time",
            vec![
                latency_over_time(runs, "TTFT", false, span_s),
                latency_over_time(runs, "E2EL", true, span_s),
            ],
        ),
        ("Load", vec![tokens_over_time(runs, span_s), in_flight_over_time(runs, span_s)]),
        ("Client", vec![queue_over_time(runs, span_s), ttft_vs_prompt(runs)]),
    ]
}
