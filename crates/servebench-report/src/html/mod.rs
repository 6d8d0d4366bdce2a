//! The HTML report: one self-contained file (no network: inline CSS, inline SVG charts rendered in
//! Rust, a small inline script for hover read-outs and toggling runs/series).
//!
//! Build one [`ReportRun`] per run (label, header, records, metrics) and call [`html_report`].
//! Several runs are drawn as a comparison: overlaid curves, one colour per run, and a summary
//! table with the change against the first run. See `docs/reports.md`.

mod charts;
mod data;
mod dataset_stats;
mod engine_charts;
mod experiment_error;
mod extra_charts;
mod multi_run;
mod page;
mod phase_chart;
mod search;
mod server_charts;
mod session_trees;
mod svg;
mod sweep;
mod timeline;

use servebench_core::metrics::{compute, MetricName, MetricsConfig, RunMetrics, Slo};
use servebench_core::record::RequestRecord;
use servebench_core::validity::Validity;

use crate::document::{ClientHealthDoc, ResultDocument};
use crate::env::Environment;
use crate::info::{python_float, vllm_date, RunInfo};

pub use charts::MAX_SCATTER_POINTS;
pub use dataset_stats::{dataset_stats_report, request_lens, RequestLens};
pub use experiment_error::ExperimentError;
pub use server_charts::ServerSeries;
pub use sweep::sweep_report;
pub use timeline::{timeline_report, timeline_rows, TimelineRow};

/// Percentiles the report computes (the summary table shows p50, p90, p99, p99.9).
pub const REPORT_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// The metrics configuration of a report: [`REPORT_PERCENTILES`], every metric, and `goodput`.
pub fn report_metrics_config(goodput: Vec<Slo>) -> MetricsConfig {
    MetricsConfig { percentiles: REPORT_PERCENTILES.to_vec(), selected: MetricName::ALL.to_vec(), goodput }
}

/// What the report shows above the charts for one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportHeader {
    /// Configuration summary as `(name, value)` rows (model, rate, concurrency, ...).
    pub config: Vec<(String, String)>,
    /// The host; `None` when unknown.
    pub environment: Option<Environment>,
    /// Client self-measurement as `(name, value)` rows (dispatch lateness, hiccups, CPU, RSS).
    pub client_health: Vec<(String, String)>,
    /// Warnings to show prominently (client may be the bottleneck, ...).
    pub warnings: Vec<String>,
    /// Notes on what the report could be built from (a result without records, …).
    pub notes: Vec<String>,
    /// The run's validity verdict (docs/metrics.md, "Run validity"), when known.
    pub validity: Option<Validity>,
    /// Whether the run used a pooling backend (embeddings, pooling, rerank): its total tokens/s
    /// is the pooling result's (`crate::sections::pooling`). False when the backend is unknown
    /// (a records file given alone).
    pub pooling: bool,
}

impl ReportHeader {
    /// The header of a run from its [`RunInfo`] (configuration, client health and its warnings)
    /// and the host it ran on.
    pub fn from_run_info(info: &RunInfo, environment: Option<Environment>) -> ReportHeader {
        let mut config: Vec<(String, String)> = vec![
            ("date".into(), vllm_date(info.date)),
            ("model".into(), info.model_id.clone()),
            ("tokenizer".into(), info.tokenizer_id.clone().unwrap_or_else(|| "-".into())),
            ("backend".into(), info.backend.clone()),
            ("prompts".into(), info.num_prompts.to_string()),
            ("request rate (req/s)".into(), python_float(info.request_rate)),
            ("burstiness".into(), python_float(info.burstiness)),
            ("max concurrency".into(), info.max_concurrency.map_or_else(|| "none".into(), |c| c.to_string())),
        ];
        if let Some(r) = info.ramp_up {
            config.push((
                "ramp-up".into(),
                format!("{} {} → {} req/s", r.strategy.as_str(), r.start_rps, r.end_rps),
            ));
        }
        if let Some(l) = &info.label {
            config.push(("label".into(), l.clone()));
        }
        config.extend(info.metadata.iter().cloned());
        let h = &info.client_health;
        let mut client_health = Vec::new();
        let rows = [
            ("dispatch lateness p50", crate::fmt::ms_label(h.dispatch_lateness_p50_us)),
            ("dispatch lateness p99", crate::fmt::ms_label(h.dispatch_lateness_p99_us)),
            ("event-loop hiccup p99", crate::fmt::ms_label(h.hiccup_p99_us)),
            ("client CPU (% of one core)", h.client_cpu_percent.map(|v| format!("{v:.0} %"))),
            ("available cores", h.available_cores.map(|v| format!("{v}"))),
            ("peak RSS", h.peak_rss_bytes.map(|b| format!("{:.1} MiB", b as f64 / 1_048_576.0))),
        ];
        for (k, v) in rows {
            if let Some(v) = v {
                client_health.push((k.to_string(), v));
            }
        }
        ReportHeader {
            config,
            environment,
            client_health,
            warnings: h.warnings(),
            notes: Vec::new(),
            validity: None,
            pooling: crate::sections::pooling::is_pooling_backend(&info.backend),
        }
    }

    /// The header of a run from its result document: its vLLM configuration keys as written
    /// and its `client_health` (numbers and warnings). No environment.
    pub fn from_result(doc: &ResultDocument) -> ReportHeader {
        let health = doc.client_health.as_ref();
        ReportHeader {
            config: doc.run.rows(),
            environment: None,
            client_health: health.map(ClientHealthDoc::rows).unwrap_or_default(),
            warnings: health
                .into_iter()
                .flat_map(|h| h.warning_texts().map(String::from))
                .chain(doc.early_stop.as_ref().map(|e| e.console_line()))
                .collect(),
            notes: Vec::new(),
            validity: doc.validity.clone(),
            pooling: doc
                .run
                .backend
                .as_ref()
                .and_then(|b| b.as_str())
                .is_some_and(crate::sections::pooling::is_pooling_backend),
        }
    }
}

pub use crate::vllm_arrays::RecordSource;

/// Charts that need each request's time on the run's clock.
const TIME_CHARTS: [&str; 5] = ["ttft-time", "e2el-time", "tokens-time", "inflight-time", "queue-time"];

/// One run of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRun {
    /// Name in legends and table headers.
    pub label: String,
    pub header: ReportHeader,
    /// The run's metrics (see [`ReportRun::new`] for the configuration the report expects).
    pub metrics: RunMetrics,
    /// The records, the source of every chart.
    pub records: Vec<RequestRecord>,
    /// Dispatch lateness per workload index (µs), when the run measured it (not in records).
    pub dispatch_lateness_us: Option<Vec<u64>>,
    /// Server metrics scraped during the run (`server_metrics` of its result), when any.
    pub server_metrics: Option<ServerSeries>,
    /// Where `records` come from.
    pub source: RecordSource,
    /// Run-level figures a result without records lacks
    /// ([`crate::vllm_arrays::use_result_figures`]): its table shows "–" for them, not the 0
    /// its metrics keep.
    pub lacks: Vec<crate::result_keys::Headline>,
    /// The run's `--metric-percentiles`, which the tables that follow them show (the session
    /// trees'); [`DEFAULT_RUN_PERCENTILES`] when not known. Set with
    /// [`ReportRun::with_percentiles`].
    pub percentiles: Vec<f64>,
}

/// The percentiles of a run whose `--metric-percentiles` is not known: the option's default.
pub const DEFAULT_RUN_PERCENTILES: [f64; 1] = [99.0];

impl ReportRun {
    /// A run whose metrics are computed from `records` with [`report_metrics_config`].
    pub fn new(
        label: impl Into<String>,
        header: ReportHeader,
        records: Vec<RequestRecord>,
        goodput: Vec<Slo>,
    ) -> Self {
        let metrics = compute(&records, &report_metrics_config(goodput));
        ReportRun {
            label: label.into(),
            header,
            metrics,
            records,
            dispatch_lateness_us: None,
            server_metrics: None,
            source: RecordSource::Records,
            lacks: Vec::new(),
            percentiles: DEFAULT_RUN_PERCENTILES.to_vec(),
        }
    }

    /// The run was measured with `--metric-percentiles` `percentiles` (valid ones, 0–100): the
    /// session-tree figures are computed with them too, and shown for them.
    pub fn with_percentiles(mut self, percentiles: &[f64]) -> Self {
        let valid: Vec<f64> = percentiles.iter().copied().filter(|p| (0.0..=100.0).contains(p)).collect();
        if valid.is_empty() {
            return self;
        }
        if self.metrics.session_trees.is_some() {
            let mut all = REPORT_PERCENTILES.to_vec();
            all.extend(valid.iter().filter(|p| !REPORT_PERCENTILES.contains(*p)));
            self.metrics.session_trees =
                servebench_core::metrics::agentic::session_tree_metrics(&self.records, &all);
        }
        self.percentiles = valid;
        self
    }
}

/// Warnings derived from the metrics: failed and cancelled requests.
fn metric_warnings(m: &RunMetrics) -> Vec<String> {
    let mut out = Vec::new();
    if m.failed > 0 {
        let kinds: Vec<String> = m
            .failures_by_kind
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{} {n}", k.as_str()))
            .collect();
        // A result without records counts its failures but not their kinds: no "()".
        let kinds = if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) };
        out.push(format!("{} of {} requests failed{kinds}", m.failed, m.sent));
    }
    if m.cancelled > m.never_sent {
        let n = m.cancelled - m.never_sent;
        out.push(format!("{n} of {} sent requests were cancelled (run stopped early)", m.sent));
    }
    if m.never_sent > 0 {
        out.push(format!("{} requests of the workload were never sent (run interrupted)", m.never_sent));
    }
    out
}

/// Renders the report of `runs` as one self-contained HTML document. Deterministic: the same runs
/// give the same bytes. With no runs, a page saying so.
pub fn html_report(runs: &[ReportRun]) -> String {
    let datas: Vec<data::RunData> = runs
        .iter()
        .map(|r| {
            let mut d = data::RunData::of(&r.records, r.dispatch_lateness_us.as_deref());
            if !r.source.scheduled() {
                // No scheduled send times: no response view and no queue time.
                (d.ttft_response, d.e2el_response, d.queue) = Default::default();
            }
            if !r.source.timed() {
                d = data::RunData {
                    by_send: Vec::new(),
                    tokens_per_s: Vec::new(),
                    in_flight: Vec::new(),
                    span_s: 0.0,
                    ..d
                };
            }
            d
        })
        .collect();
    let labeled: Vec<charts::Run<'_>> = runs.iter().zip(&datas).map(|(r, d)| (r.label.as_str(), d)).collect();
    let scraped: Vec<server_charts::ServerRun<'_>> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.server_metrics.as_ref().map(|s| (i, r.label.as_str(), s)))
        .collect();
    // Every time chart of the page covers the same seconds: the longest run (or scrape).
    let span_s = datas.iter().map(|d| d.span_s).fold(server_charts::last_scrape_s(&scraped), f64::max);
    let mut groups = if runs.is_empty() { Vec::new() } else { charts::all_charts(&labeled, span_s) };
    if let Some(c) = extra_charts::ttfo_chart(&labeled) {
        if let Some((_, latency)) = groups.first_mut() {
            latency.push(c);
        }
    }
    let turns = extra_charts::turn_charts(&labeled);
    if !turns.is_empty() {
        groups.push(("Multi-turn", turns));
    }
    if let Some(c) = phase_chart::phase_chart(runs) {
        groups.push(("HTTP phases", vec![c]));
    }
    let mut server = server_charts::server_charts(&labeled, &scraped, span_s);
    server.extend(engine_charts::engine_charts(&labeled, &scraped, span_s));
    if !server.is_empty() {
        groups.push(("Server metrics", server));
    }
    // Charts no run has the data for are left out (each run's card says why).
    if runs.iter().all(|r| !r.source.timed()) {
        for (_, charts) in &mut groups {
            charts.retain(|c| !TIME_CHARTS.contains(&c.id.as_str()));
        }
    }
    if runs.iter().all(|r| r.source == RecordSource::SummaryOnly) {
        groups.clear();
    }
    groups.retain(|(_, charts)| !charts.is_empty());
    let warnings: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut w = r.header.warnings.clone();
            if let Some(e) = &r.header.environment {
                w.extend(e.warnings());
            }
            w.extend(metric_warnings(&r.metrics));
            w
        })
        .collect();
    page::render(runs, &warnings, &groups)
}

#[cfg(test)]
pub(crate) mod tests;
