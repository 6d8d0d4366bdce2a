//! Server-side time series scraped during a run (`--scrape-metrics`, the result's
//! `server_metrics.samples`): requests running/waiting, KV-cache usage and the prefix-cache hit
//! rate per scrape interval. Drawn only for runs whose result carries samples.

use crate::document::{ResultDocument, ServerMetricsDoc};
use crate::sections::server::{ScrapeSample, ServerMetrics};
use crate::server_summary::{EndpointSummary, GpuEnergy, GpuRow};

use super::charts::{time_axis, Run};
use super::svg::{AxisSpec, Chart, Kind, Series, Style};

/// The scraped series of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerSeries {
    /// The scrapes, seconds from the start of the measured phase.
    pub samples: Vec<ScrapeSample>,
    /// Every scraped endpoint's summary (`server_metrics.endpoints`).
    pub endpoints: Vec<EndpointSummary>,
    /// The GPUs' rows (`gpu_energy.gpus`), with their power series.
    pub gpus: Vec<GpuRow>,
    /// The run's energy figures (`gpu_energy`: total, average power, J per output token,
    /// tokens per joule), when a GPU had an energy figure. Its `gpus` are not read here (see
    /// `gpus`).
    pub energy: Option<GpuEnergy>,
}

impl ServerSeries {
    /// The series in a result's `server_metrics` (`samples: [{t_s, running, ...}]`; a sample
    /// without `t_s` is skipped); `None` when there are no samples.
    pub fn from_result(result: &ResultDocument) -> Option<ServerSeries> {
        let mut s = result.server_metrics.as_ref().and_then(ServerSeries::from_doc).unwrap_or_default();
        s.gpus = result.gpu_energy.as_ref().map(|g| g.gpus.clone()).unwrap_or_default();
        s.energy = result.gpu_energy.clone().map(|e| GpuEnergy { gpus: Vec::new(), ..e });
        s.or_none()
    }

    /// The series of a run scraped in this process: its `server_metrics`, GPU rows and energy
    /// figures (the result's `gpu_energy`).
    pub fn of_run(
        m: Option<&ServerMetrics>,
        gpus: &[GpuRow],
        energy: Option<GpuEnergy>,
    ) -> Option<ServerSeries> {
        let mut s = m.and_then(ServerSeries::from_metrics).unwrap_or_default();
        s.gpus = gpus.to_vec();
        s.energy = energy.map(|e| GpuEnergy { gpus: Vec::new(), ..e });
        s.or_none()
    }

    /// `None` when there is nothing to chart.
    fn or_none(self) -> Option<ServerSeries> {
        let any = !self.samples.is_empty() || !self.endpoints.is_empty() || !self.gpus.is_empty();
        (any || self.energy.is_some()).then_some(self)
    }

    /// The series a run scraped (`--scrape-metrics`); `None` when it has no samples.
    pub fn from_metrics(m: &ServerMetrics) -> Option<ServerSeries> {
        let samples: Vec<ScrapeSample> = m.samples.iter().filter(|s| s.t_s.is_finite()).cloned().collect();
        ServerSeries { samples, endpoints: m.endpoints.clone(), gpus: Vec::new(), energy: None }.or_none()
    }

    /// The series of a `server_metrics` document; `None` when it has no samples.
    pub fn from_doc(doc: &ServerMetricsDoc) -> Option<ServerSeries> {
        let samples: Vec<ScrapeSample> = doc
            .samples
            .iter()
            .flatten()
            .filter_map(|s| {
                let s = s.0.as_ref()?;
                Some(ScrapeSample {
                    t_s: s.t_s?,
                    running: s.running,
                    waiting: s.waiting,
                    kv_cache_usage: s.kv_cache_usage,
                    prefix_cache_queries: s.prefix_cache_queries,
                    prefix_cache_hits: s.prefix_cache_hits,
                    ..ScrapeSample::default()
                })
            })
            .collect();
        let endpoints = doc.endpoints.clone().unwrap_or_default();
        ServerSeries { samples, endpoints, gpus: Vec::new(), energy: None }.or_none()
    }

    /// Prefix-cache hit rate (%) of each scrape interval: Δhits / Δqueries between consecutive
    /// samples, at the interval's end; intervals without queries are skipped.
    pub(crate) fn prefix_hit_rate(&self) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        for w in self.samples.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            if let (Some(qa), Some(qb), Some(ha), Some(hb)) =
                (a.prefix_cache_queries, b.prefix_cache_queries, a.prefix_cache_hits, b.prefix_cache_hits)
            {
                let dq = qb - qa;
                if dq > 0.0 {
                    out.push((b.t_s, ((hb - ha) / dq * 100.0).clamp(0.0, 100.0)));
                }
            }
        }
        out
    }
}

/// A run of a server chart: label, index in the report, series.
pub(crate) type ServerRun<'a> = (usize, &'a str, &'a ServerSeries);

fn pick(s: &ServerSeries, f: fn(&ScrapeSample) -> Option<f64>) -> Vec<(f64, f64)> {
    s.samples.iter().filter_map(|x| f(x).map(|v| (x.t_s, v))).collect()
}

fn name(n_runs: usize, label: &str, what: &str) -> String {
    if n_runs > 1 {
        format!("{label}: {what}")
    } else {
        what.to_string()
    }
}

/// The last scrape time (s) of the runs' series; 0 when none.
pub(crate) fn last_scrape_s(series: &[ServerRun<'_>]) -> f64 {
    series
        .iter()
        .flat_map(|s| {
            let ends =
                s.2.endpoints
                    .iter()
                    .flat_map(|e| e.meanings.values())
                    .flat_map(|m| m.series.iter().map(|p| p[0]));
            let gpus = s.2.gpus.iter().flat_map(|g| g.power_series.iter().map(|p| p[0]));
            s.2.samples.iter().map(|x| x.t_s).chain(ends).chain(gpus)
        })
        .filter(|t| t.is_finite())
        .fold(0.0, f64::max)
}

/// The server charts of the runs that have scraped series (none when no run has), over the
/// page's time range `span_s`.
pub(crate) fn server_charts(runs: &[Run<'_>], series: &[ServerRun<'_>], span_s: f64) -> Vec<Chart> {
    if series.iter().all(|s| s.2.samples.is_empty()) {
        return Vec::new();
    }
    let n = runs.len();
    let x = || time_axis("time since the start of the measured phase (s)", span_s);
    let mut queue = Vec::new();
    let mut kv = Vec::new();
    let mut hit = Vec::new();
    for &(i, l, s) in series {
        for (what, style, f) in [
            ("running", Style::Solid, (|x: &ScrapeSample| x.running) as fn(&ScrapeSample) -> Option<f64>),
            ("waiting", Style::Dashed, |x: &ScrapeSample| x.waiting),
        ] {
            let pts = pick(s, f);
            if !pts.is_empty() {
                queue.push(Series { run: i, name: name(n, l, what), style, kind: Kind::Step(pts) });
            }
        }
        let usage = pick(s, |x| x.kv_cache_usage.map(|v| v * 100.0));
        if !usage.is_empty() {
            kv.push(Series {
                run: i,
                name: name(n, l, "KV-cache usage"),
                style: Style::Solid,
                kind: Kind::Line(usage),
            });
        }
        let rate = s.prefix_hit_rate();
        if !rate.is_empty() {
            hit.push(Series {
                run: i,
                name: name(n, l, "prefix-cache hit rate"),
                style: Style::Solid,
                kind: Kind::Line(rate),
            });
        }
    }
    let mut out = vec![Chart {
        id: "server-requests".into(),
        title: "Server: requests running and waiting".into(),
        note: "vllm:num_requests_running (solid) and vllm:num_requests_waiting (dashed) at each scrape of \
               the server's /metrics (--scrape-metrics). Waiting requests are queued in the server."
            .into(),
        x: x(),
        y: AxisSpec { integer: true, ..AxisSpec::new("requests").starting_at_zero() },
        series: queue,
    }];
    out.push(Chart {
        id: "server-kv".into(),
        title: "Server: KV-cache usage".into(),
        note: "vllm:kv_cache_usage_perc at each scrape, as a percentage of the KV cache.".into(),
        x: x(),
        y: AxisSpec::new("KV-cache usage (%)").starting_at_zero(),
        series: kv,
    });
    if !hit.is_empty() {
        out.push(Chart {
            id: "server-prefix".into(),
            title: "Server: prefix-cache hit rate".into(),
            note: "Prefix-cache hits over queries (tokens) in each scrape interval, from the cumulative \
                   vllm:prefix_cache_hits and vllm:prefix_cache_queries counters."
                .into(),
            x: x(),
            y: AxisSpec { max: Some(100.0), ..AxisSpec::new("hit rate (%)").starting_at_zero() },
            series: hit,
        });
    }
    out
}
