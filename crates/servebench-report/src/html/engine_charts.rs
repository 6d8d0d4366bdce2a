//! Charts of every scraped endpoint (`server_metrics.endpoints`: queue and running, server
//! TTFT and E2E per interval, generated tokens per second) and of the GPUs' power
//! (`gpu_energy.gpus`), on the page's time axis: seconds from the start of the measured phase,
//! the axis of the client charts (docs/reports.md). Endpoints of one run share its colour and
//! differ by stroke.

use super::charts::{time_axis, Run};
use super::server_charts::ServerRun;
use super::svg::{AxisSpec, Chart, Kind, Series, Style};
use crate::server_summary::EndpointSummary;

const STYLES: [Style; 4] = [Style::Solid, Style::Dashed, Style::Bold, Style::BoldDashed];

fn short(url: &str) -> &str {
    url.split("://").nth(1).unwrap_or(url)
}

fn name(n_runs: usize, label: &str, what: String) -> String {
    if n_runs > 1 {
        format!("{label}: {what}")
    } else {
        what
    }
}

fn points(e: &EndpointSummary, meaning: &str, scale: f64, p99: bool) -> Vec<(f64, f64)> {
    e.meanings
        .get(meaning)
        .map(|m| if p99 { &m.series_p99 } else { &m.series })
        .map(|s| s.iter().map(|p| (p[0], p[1] * scale)).collect())
        .unwrap_or_default()
}

/// A chart of `what` per endpoint, or `None` when no endpoint has it.
fn per_endpoint(runs: &[Run<'_>], series: &[ServerRun<'_>], picks: &[Pick], step: bool) -> Vec<Series> {
    let mut out = Vec::new();
    for &(i, label, s) in series {
        for (k, e) in s.endpoints.iter().enumerate() {
            for (j, &(meaning, what, scale, p99)) in picks.iter().enumerate() {
                let pts = points(e, meaning, scale, p99);
                if pts.is_empty() {
                    continue;
                }
                let style = STYLES[(k * picks.len() + j) % STYLES.len()];
                let kind = if step { Kind::Step(pts) } else { Kind::Line(pts) };
                out.push(Series {
                    run: i,
                    name: name(runs.len(), label, format!("{} {what}", short(&e.url))),
                    style,
                    kind,
                });
            }
        }
    }
    out
}

/// One line of a chart: (series key, legend, scale, whether the p99 rather than the p50).
type Pick = (&'static str, &'static str, f64, bool);
/// One chart: (id, title, note, y axis, its lines, whether drawn as steps).
type ChartSpec = (&'static str, &'static str, &'static str, AxisSpec, &'static [Pick], bool);

/// The endpoint and GPU charts (none without data).
pub(crate) fn engine_charts(runs: &[Run<'_>], series: &[ServerRun<'_>], span_s: f64) -> Vec<Chart> {
    let x = || time_axis("time since the start of the measured phase (s)", span_s);
    let mut out = Vec::new();
    let specs: [ChartSpec; 3] = [
        (
            "endpoints-load",
            "Server endpoints: queue and running",
            "Each scraped endpoint's waiting (queue) and running requests at each scrape, under its engine's \
             names (server_metrics.endpoints; docs/metrics.md, \"Server metrics of every engine\").",
            AxisSpec::new("requests").starting_at_zero(),
            &[("queue", "queue", 1.0, false), ("running", "running", 1.0, false)],
            true,
        ),
        (
            "endpoints-latency",
            "Server endpoints: TTFT and E2E per interval",
            "Median (p50) of the server's TTFT and request-latency histograms over each scrape interval \
             (the difference of consecutive scrapes), and TTFT p99.",
            AxisSpec::new("ms").starting_at_zero(),
            &[("ttft", "TTFT p50", 1e3, false), ("ttft", "TTFT p99", 1e3, true), ("e2e", "E2E p50", 1e3, false)],
            false,
        ),
        (
            "endpoints-tokens",
            "Server endpoints: tokens per second",
            "Increase of the generated-token and prompt-token counters over each scrape interval, divided by \
             its length.",
            AxisSpec::new("tokens/s").starting_at_zero(),
            &[("generation_tokens", "generated tok/s", 1.0, false), ("prompt_tokens", "prompt tok/s", 1.0, false)],
            false,
        ),
    ];
    for (id, title, note, y, picks, step) in specs {
        let s = per_endpoint(runs, series, picks, step);
        if !s.is_empty() {
            out.push(Chart { id: id.into(), title: title.into(), note: note.into(), x: x(), y, series: s });
        }
    }
    let mut power = Vec::new();
    for &(i, label, s) in series {
        for (k, g) in s.gpus.iter().enumerate() {
            if g.power_series.is_empty() {
                continue;
            }
            power.push(Series {
                run: i,
                name: name(runs.len(), label, format!("GPU {} @ {}", g.gpu, g.host)),
                style: STYLES[k % STYLES.len()],
                kind: Kind::Line(g.power_series.iter().map(|p| (p[0], p[1])).collect()),
            });
        }
    }
    if !power.is_empty() {
        out.push(Chart {
            id: "gpu-power".into(),
            title: "GPU power".into(),
            note: "Power draw of each GPU at each reading (DCGM_FI_DEV_POWER_USAGE or nvidia-smi power.draw); the \
                   run's energy, J per output token and tokens per joule are in gpu_energy (docs/metrics.md, \
                   \"GPU telemetry and energy\")."
                .into(),
            x: x(),
            y: AxisSpec::new("W").starting_at_zero(),
            series: power,
        });
    }
    out
}
