//! Charts drawn only when their data is present: time to first visible output (TTFO) beside TTFT
//! when records carry a `first_content_us` that differs from `first_token_us`, and per-turn lines
//! when records carry a multi-turn `turn` index.

use std::collections::BTreeMap;

use super::charts::{cdf_chart, Dist, Run};
use std::borrow::Cow;

use super::data::{ones, weighted_percentile};
use super::svg::{AxisSpec, Chart, Kind, Series, Style};

/// The TTFO distribution (solid) against the service-view TTFT (dashed).
fn ttfo_dist() -> Dist<'static> {
    Dist {
        id: "ttfo",
        metric: "TTFO",
        what: "requests",
        primary: ("time to first visible output", |d| Cow::Owned(ones(&d.ttfo))),
        secondary: ("TTFT (first token of any kind)", |d| Cow::Owned(ones(&d.ttft))),
        note: "Time to first visible output (first content token, after any reasoning or tool-call text) \
               of completed requests, from dispatch, beside the service-view TTFT. The gap between the \
               curves is the time the model spent before showing output.",
    }
}

/// The TTFO CDF, when some run's first visible content differs from its first token.
pub(crate) fn ttfo_chart(runs: &[Run<'_>]) -> Option<Chart> {
    runs.iter().any(|(_, d)| d.ttfo_differs && !d.ttfo.is_empty()).then(|| cdf_chart(runs, &ttfo_dist()))
}

fn name(runs: &[Run<'_>], label: &str, what: &str) -> String {
    if runs.len() > 1 {
        format!("{label}: {what}")
    } else {
        what.to_string()
    }
}

/// `(turn, percentile p of the values of that turn)`, ordered by turn.
fn per_turn(values: impl Iterator<Item = (u32, f64)>, p: f64) -> Vec<(f64, f64)> {
    let mut by_turn: BTreeMap<u32, Vec<(f64, u64)>> = BTreeMap::new();
    for (t, v) in values {
        by_turn.entry(t).or_default().push((v, 1));
    }
    by_turn.into_iter().filter_map(|(t, v)| weighted_percentile(&v, p).map(|y| (f64::from(t), y))).collect()
}

/// Median (solid) and p90 (dashed) of a latency per turn index.
fn turn_latency_chart(runs: &[Run<'_>], metric: &str, pick: fn(&(u32, f64, f64)) -> f64) -> Chart {
    let mut series = Vec::new();
    for (i, (l, d)) in runs.iter().enumerate() {
        for (p, style, what) in [(50.0, Style::Solid, "median"), (90.0, Style::Dashed, "p90")] {
            series.push(Series {
                run: i,
                name: name(runs, l, &format!("{metric} {what}")),
                style,
                kind: Kind::Line(per_turn(d.turn_latency.iter().map(|x| (x.0, pick(x))), p)),
            });
        }
    }
    Chart {
        id: format!("{}-turn", metric.to_lowercase()),
        title: format!("{metric} per turn"),
        note: format!(
            "{metric} (service view) of completed requests by their turn in the conversation (0 = first \
             turn): median and p90 per turn. Later turns carry the conversation history, so a rising \
             line is the cost of the longer prompt (less any prefix caching)."
        ),
        x: AxisSpec { integer: true, ..AxisSpec::new("turn index").starting_at_zero() },
        y: AxisSpec::new(format!("{metric} (ms)")).starting_at_zero(),
        series,
    }
}

/// Mean input tokens per turn index.
fn turn_prompt_chart(runs: &[Run<'_>]) -> Chart {
    let series = runs
        .iter()
        .enumerate()
        .map(|(i, (l, d))| {
            let mut sums: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
            for &(t, v) in &d.turn_prompts {
                let e = sums.entry(t).or_default();
                e.0 += v;
                e.1 += 1.0;
            }
            let pts = sums.into_iter().map(|(t, (s, n))| (f64::from(t), s / n)).collect();
            Series {
                run: i,
                name: name(runs, l, "mean input tokens"),
                style: Style::Solid,
                kind: Kind::Line(pts),
            }
        })
        .collect();
    Chart {
        id: "prompt-turn".into(),
        title: "Input tokens per turn".into(),
        note:
            "Mean prompt length (tokens, conversation history included) of the requests of each turn index."
                .into(),
        x: AxisSpec { integer: true, ..AxisSpec::new("turn index").starting_at_zero() },
        y: AxisSpec::new("input tokens").starting_at_zero(),
        series,
    }
}

/// The per-turn charts, when some run's records carry turn indices.
pub(crate) fn turn_charts(runs: &[Run<'_>]) -> Vec<Chart> {
    if runs.iter().all(|(_, d)| d.turn_prompts.is_empty()) {
        return Vec::new();
    }
    vec![
        turn_latency_chart(runs, "TTFT", |x| x.1),
        turn_latency_chart(runs, "E2EL", |x| x.2),
        turn_prompt_chart(runs),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_turn_percentiles_by_turn_index() {
        let v = [(2, 7.0), (0, 5.0), (2, 7.0), (2, 9.0), (2, 7.0)];
        assert_eq!(per_turn(v.iter().copied(), 50.0), vec![(0.0, 5.0), (2.0, 7.0)]);
        assert_eq!(per_turn(v.iter().copied(), 100.0), vec![(0.0, 5.0), (2.0, 9.0)]);
        assert!(per_turn(std::iter::empty(), 50.0).is_empty());
    }
}
