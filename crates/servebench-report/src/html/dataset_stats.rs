//! `--plot-dataset-stats`: the token lengths of a run's requests as one self-contained HTML page
//! of inline SVG charts — what vLLM draws with matplotlib (`<result>.dataset_stats.png`): the
//! prompt, output and prompt + output token distributions (30 equal-width bins from the
//! smallest to the largest value, counts of requests) and the tokens of every request, prompt
//! and output stacked. Lengths are vLLM's `input_lens` / `output_lens`: every request's prompt
//! tokens, and its output tokens (0 unless it completed).

use servebench_core::metrics::RequestTimes;
use servebench_core::record::{Outcome, RequestRecord};

use super::page::render_plain;
use super::svg::{AxisSpec, Chart, Kind, Series, Style};

/// Bins of the distributions (matplotlib's `bins=30`, as vLLM plots them).
pub const DATASET_STATS_BINS: usize = 30;
/// Most bars of the per-request chart; beyond, consecutive requests share a bar (their mean).
pub const MAX_REQUEST_BARS: usize = 2_000;

/// The tokens of one request: prompt and output.
pub type RequestLens = (u32, u32);

/// The lengths of `records` in index order: prompt tokens, and output tokens of a completed
/// request (0 otherwise), as the result's `input_lens` / `output_lens`.
pub fn request_lens(records: &[RequestRecord]) -> Vec<RequestLens> {
    let mut recs: Vec<&RequestRecord> = records.iter().collect();
    recs.sort_by_key(|r| r.index);
    recs.iter()
        .map(|r| {
            let done = r.outcome == Outcome::Completed;
            (r.prompt_tokens, if done { RequestTimes::of(r).output_tokens } else { 0 })
        })
        .collect()
}

/// Edges of `bins` equal-width bins from the smallest to the largest of `values` (a single
/// value gets the bin `[v − 0.5, v + 0.5]`, as matplotlib does).
fn equal_bins(values: &[f64], bins: usize) -> Vec<f64> {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !(lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo - 0.5, hi + 0.5) };
    let width = (hi - lo) / bins as f64;
    (0..=bins).map(|b| if b == bins { hi } else { lo + b as f64 * width }).collect()
}

/// Requests per bin; bins are `[e_k, e_k+1)` except the last, which includes its right edge.
fn counts(values: &[f64], edges: &[f64]) -> Vec<f64> {
    let bins = edges.len().saturating_sub(1);
    let mut out = vec![0.0; bins];
    let inner = edges.get(1..bins).unwrap_or_default();
    for &v in values {
        if let Some(slot) = out.get_mut(inner.partition_point(|&e| e <= v)) {
            *slot += 1.0;
        }
    }
    out
}

fn distribution(id: &str, what: &str, values: &[f64], run: usize) -> Chart {
    let edges = equal_bins(values, DATASET_STATS_BINS);
    let kind = Kind::Hist { values: counts(values, &edges), edges: edges.clone() };
    Chart {
        id: format!("dataset-{id}"),
        title: format!("{what} distribution"),
        note: format!(
            "Requests per bin of {what} ({DATASET_STATS_BINS} equal-width bins from the smallest to the largest \
             value)."
        ),
        x: AxisSpec { min: edges.first().copied(), max: edges.last().copied(), ..AxisSpec::new(what) },
        y: AxisSpec { integer: true, ..AxisSpec::new("requests").starting_at_zero() },
        series: vec![Series { run, name: what.to_string(), style: Style::Solid, kind }],
    }
}

/// Prompt tokens and prompt + output tokens of every request, one bar each (requests grouped
/// to at most [`MAX_REQUEST_BARS`] bars, each the group's mean).
fn per_request(lens: &[RequestLens]) -> Chart {
    let group = lens.len().div_ceil(MAX_REQUEST_BARS).max(1);
    let mut edges = vec![0.0];
    let (mut prompt, mut total) = (Vec::new(), Vec::new());
    for (g, chunk) in lens.chunks(group).enumerate() {
        let n = chunk.len() as f64;
        let p: f64 = chunk.iter().map(|l| f64::from(l.0)).sum::<f64>() / n;
        let o: f64 = chunk.iter().map(|l| f64::from(l.1)).sum::<f64>() / n;
        prompt.push(p);
        total.push(p + o);
        edges.push((g * group + chunk.len()) as f64);
    }
    let note = if group > 1 {
        format!(
            "Tokens of every request, output stacked on prompt, by request index. {} requests: each bar is the mean of {group} consecutive requests.",
            lens.len()
        )
    } else {
        "Tokens of every request, output stacked on prompt, by request index.".to_string()
    };
    Chart {
        id: "dataset-per-request".into(),
        title: "Tokens per request (stacked)".into(),
        note,
        x: AxisSpec { integer: true, ..AxisSpec::new("request index").starting_at_zero() },
        y: AxisSpec::new("tokens").starting_at_zero(),
        series: vec![
            Series {
                run: 1,
                name: "output tokens (on top of prompt)".into(),
                style: Style::Solid,
                kind: Kind::Hist { edges: edges.clone(), values: total },
            },
            Series {
                run: 0,
                name: "prompt tokens".into(),
                style: Style::Solid,
                kind: Kind::Hist { edges, values: prompt },
            },
        ],
    }
}

fn summary_row(name: &str, values: &[f64]) -> (String, String) {
    let n = values.len().max(1) as f64;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = values.iter().sum::<f64>() / n;
    let text = if values.is_empty() {
        "no requests".to_string()
    } else {
        format!("min {min:.0}, mean {mean:.1}, max {max:.0}, total {:.0}", values.iter().sum::<f64>())
    };
    (name.to_string(), text)
}

/// The dataset statistics page of one run. `about` (e.g. model, backend, dataset) heads the
/// table of the run; `lens` are the requests in index order. Deterministic.
pub fn dataset_stats_report(title: &str, about: &[(String, String)], lens: &[RequestLens]) -> String {
    let prompt: Vec<f64> = lens.iter().map(|l| f64::from(l.0)).collect();
    let output: Vec<f64> = lens.iter().map(|l| f64::from(l.1)).collect();
    let total: Vec<f64> = lens.iter().map(|l| f64::from(l.0) + f64::from(l.1)).collect();
    let mut rows = about.to_vec();
    rows.push(("requests".into(), lens.len().to_string()));
    rows.push(summary_row("prompt tokens", &prompt));
    rows.push(summary_row("output tokens", &output));
    rows.push(summary_row("prompt + output tokens", &total));
    let charts = vec![
        distribution("prompt", "prompt tokens", &prompt, 0),
        distribution("output", "output tokens", &output, 1),
        distribution("total", "prompt + output tokens", &total, 2),
        per_request(lens),
    ];
    render_plain(
        title,
        "Token lengths of the run's requests: prompt tokens as sent, output tokens as received (0 for a \
         request that did not complete). Hover a chart for values; click a legend entry to hide a series.",
        ("Run", &rows),
        &[("Token lengths", charts)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_span_min_to_max_like_matplotlib() {
        let e = equal_bins(&[10.0, 40.0], 30);
        assert_eq!((e.len(), e[0], e[30], e[1]), (31, 10.0, 40.0, 11.0));
        assert_eq!(equal_bins(&[7.0, 7.0], 30)[..1], [6.5]);
        assert!(equal_bins(&[], 30).is_empty());
        // The largest value falls in the last bin, not past it.
        let c = counts(&[10.0, 10.5, 11.0, 40.0], &e);
        assert_eq!((c[0], c[1], c[29], c.iter().sum::<f64>()), (2.0, 1.0, 1.0, 4.0));
    }

    #[test]
    fn page_has_four_charts_and_counts_every_request() {
        let lens: Vec<RequestLens> = (0..50).map(|i| (100 + i, if i % 10 == 0 { 0 } else { 20 })).collect();
        let html = dataset_stats_report("t", &[("model".into(), "m".into())], &lens);
        assert_eq!(html.matches("<figure class=\"chart\"").count(), 4);
        for id in ["dataset-prompt", "dataset-output", "dataset-total", "dataset-per-request"] {
            assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
        }
        assert!(html.contains("min 100, mean 124.5, max 149, total 6225"), "prompt summary");
        assert!(html.contains("<td>requests</td><td>50</td>"));
        assert!(!html.contains("http://") && !html.contains("https://"), "self-contained");
        assert_eq!(html, dataset_stats_report("t", &[("model".into(), "m".into())], &lens), "deterministic");
    }

    #[test]
    fn many_requests_share_bars() {
        let lens: Vec<RequestLens> = (0..5_000).map(|i| (i % 7, 3)).collect();
        let c = per_request(&lens);
        let Kind::Hist { edges, values } = &c.series[1].kind else { panic!("hist") };
        assert!(values.len() <= MAX_REQUEST_BARS && values.len() >= MAX_REQUEST_BARS / 2);
        assert_eq!(edges.last().copied(), Some(5_000.0));
        assert!(c.note.contains("mean of 3 consecutive requests"), "{}", c.note);
        let empty = dataset_stats_report("t", &[], &[]);
        assert!(empty.contains("no requests") && empty.contains("no data"));
    }
}
