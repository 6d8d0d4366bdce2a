//! Run metrics: one pure function from request records to every number a report shows.
//!
//! `docs/metrics.md` is the contract (formula, unit, source fields, difference from vLLM). In
//! short: counts by outcome; duration from the first dispatch to the last known end; service-view
//! latencies (from `dispatched`, vLLM parity) and response-view latencies (from `intended`); token
//! totals and throughputs; exact peaks; goodput. Latency statistics cover completed requests only.
//! Every latency summary in [`RunMetrics`] is in **milliseconds**.

pub mod groups;
mod peaks;
mod request;
mod steady_state;
mod token_accounting;
mod ttfo;

use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};
use crate::record::{ErrorKind, Outcome, RequestRecord, TokenSource};
use crate::stats::{summary_weighted, Summary};

pub use peaks::{peak_overlap, peak_rate, peak_window_sum, WINDOW_US};
pub use request::{is_completed, push_token_view_itls, token_event_times, token_event_weights, RequestTimes};
pub use steady_state::{steady_state, LoadMode, NoSteadyState, SteadyState, SteadyStateConfig};
pub use token_accounting::{CountDiscrepancy, TokenAccounting, OUTPUT_DISAGREEMENT_WARN};
pub use ttfo::{output_split, ttfo_us, OutputSplit};

/// A latency metric `--percentile-metrics` can select (vLLM names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricName {
    /// Time to first token.
    Ttft,
    /// Time per output token, excluding the first.
    Tpot,
    /// Inter-token latency (gaps between token events).
    Itl,
    /// End-to-end latency.
    E2el,
    /// Client-side queueing (`dispatched − intended`); vLLM reports it only with
    /// `--max-concurrency`.
    ClientQueueTime,
    /// E2EL including client queueing (`done − intended`); vLLM reports it only with
    /// `--max-concurrency` and a finite rate.
    E2elIncludingClientQueue,
}

impl MetricName {
    /// Every metric in vLLM's report order.
    pub const ALL: [MetricName; 6] = [
        MetricName::Ttft,
        MetricName::Tpot,
        MetricName::Itl,
        MetricName::E2el,
        MetricName::ClientQueueTime,
        MetricName::E2elIncludingClientQueue,
    ];

    /// The name used in flags and JSON keys (`ttft`, `tpot`, `itl`, `e2el`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            MetricName::Ttft => "ttft",
            MetricName::Tpot => "tpot",
            MetricName::Itl => "itl",
            MetricName::E2el => "e2el",
            MetricName::ClientQueueTime => "client_queue_time",
            MetricName::E2elIncludingClientQueue => "e2el_including_client_queue",
        }
    }

    /// Parses a name as `--percentile-metrics` / `--goodput` spell it.
    pub fn parse(s: &str) -> Option<MetricName> {
        MetricName::ALL.into_iter().find(|m| m.as_str() == s.trim())
    }
}

/// A service-level objective for goodput: `metric` (ttft, tpot or e2el) ≤ `threshold_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub metric: MetricName,
    pub threshold_ms: f64,
}

/// What `compute` should report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsConfig {
    /// Percentiles to report (0..=100), e.g. `[99.0]` (vLLM's default).
    pub percentiles: Vec<f64>,
    /// Metrics whose statistics are reported (vLLM default: ttft, tpot, itl).
    pub selected: Vec<MetricName>,
    /// Goodput SLOs; empty = no goodput.
    pub goodput: Vec<Slo>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            percentiles: vec![99.0],
            selected: vec![MetricName::Ttft, MetricName::Tpot, MetricName::Itl],
            goodput: Vec::new(),
        }
    }
}

impl MetricsConfig {
    /// Checks percentiles are within 0..=100 and SLOs name ttft/tpot/e2el with a threshold ≥ 0.
    pub fn validate(&self) -> Result<()> {
        if let Some(p) = self.percentiles.iter().find(|p| !(0.0..=100.0).contains(*p)) {
            return Err(BenchError::config(
                "--metric-percentiles",
                format!("percentile {p} is outside 0..100"),
                "pass comma-separated numbers between 0 and 100, e.g. 50,90,99",
            ));
        }
        for s in &self.goodput {
            if !matches!(s.metric, MetricName::Ttft | MetricName::Tpot | MetricName::E2el) {
                return Err(BenchError::config(
                    "--goodput",
                    format!("SLO metric {} is not supported", s.metric.as_str()),
                    "use ttft, tpot or e2el, e.g. --goodput ttft:500 tpot:50",
                ));
            }
            if s.threshold_ms.is_nan() || s.threshold_ms < 0.0 {
                return Err(BenchError::config(
                    "--goodput",
                    format!(
                        "SLO {}:{} must be a non-negative number of ms",
                        s.metric.as_str(),
                        s.threshold_ms
                    ),
                    "use KEY:VALUE pairs with VALUE in milliseconds",
                ));
            }
        }
        Ok(())
    }
}

/// How many completed requests took their output-token count from each source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSourceCounts {
    pub usage: u64,
    pub retokenized: u64,
    pub events: u64,
}

/// Every number of one run. Latency summaries are in milliseconds, duration in seconds,
/// throughputs per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// The configuration the metrics were computed with.
    pub config: MetricsConfig,
    /// Requests actually sent (attempted): `completed + failed + cancelled − never_sent`.
    pub sent: u64,
    /// Cancelled before any byte was written (an interrupted run's requests never sent).
    #[serde(default)]
    pub never_sent: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Failed requests per error kind (every kind, `ErrorKind::ALL` order, zeros included).
    pub failures_by_kind: Vec<(ErrorKind, u64)>,
    /// Failed requests without an error kind (should be 0).
    pub failures_unclassified: u64,
    /// First dispatch → last known end of any dispatched request, seconds.
    pub duration_s: f64,
    /// Σ client-counted prompt tokens of completed requests.
    pub total_input_tokens: u64,
    /// Σ `usage.prompt_tokens` of completed requests that reported it.
    pub server_total_input_tokens: u64,
    /// Completed requests that reported `usage.prompt_tokens`.
    pub server_input_tokens_reported: u64,
    /// Σ `usage.prompt_tokens_details.cached_tokens` of completed requests.
    pub cached_input_tokens: u64,
    /// Σ output tokens of completed requests.
    pub total_output_tokens: u64,
    pub output_token_source: TokenSourceCounts,
    pub request_throughput: f64,
    pub input_throughput: f64,
    pub output_throughput: f64,
    pub total_token_throughput: f64,
    /// Completed requests meeting every SLO; `None` without SLOs.
    pub good_requests: Option<u64>,
    /// `good_requests / duration`; `None` without SLOs.
    pub request_goodput: Option<f64>,
    /// Most output tokens landing in any 1-s sliding window (rounded to 1e-6 tokens).
    pub max_output_tokens_per_s: f64,
    /// Most requests in flight at one instant (exact sweep over `[dispatched, end)`).
    pub max_concurrent_requests: u64,
    /// RTFx, the inverse real-time factor: seconds of input audio of the completed requests
    /// per second of `duration_s` (docs/metrics.md). `None` when no completed request carried
    /// audio (or the duration is 0).
    pub rtfx: Option<f64>,
    /// Service view (from `dispatched`), completed requests, ms.
    pub ttft: Summary,
    pub tpot: Summary,
    pub itl: Summary,
    pub e2el: Summary,
    /// ITL spread over the tokens each event carried, ms.
    pub itl_token_view: Summary,
    /// Response view (from `intended`), completed requests, ms.
    pub response_ttft: Summary,
    pub response_e2el: Summary,
    /// `dispatched − intended` of every dispatched request (any outcome), ms.
    pub queue_time: Summary,
    /// `dispatched − intended` of completed requests only (vLLM's `client_queue_time`), ms.
    pub client_queue_time: Summary,
    /// TTFO and the reasoning/content split of token events (docs/metrics.md, "TTFO").
    #[serde(default)]
    pub output_split: OutputSplit,
    /// Σ over completed requests of `usage.prompt_tokens`, else the client count: the input
    /// total of pooling backends (vLLM's rule for embeddings/pooling/rerank).
    #[serde(default)]
    pub server_first_input_tokens: u64,
    /// Output tokens by source side by side, and server vs client prompt tokens
    /// (docs/metrics.md, "Token accounting").
    #[serde(default)]
    pub token_accounting: TokenAccounting,
}

impl RunMetrics {
    /// The service- or response-view summary vLLM reports under `metric`'s name.
    pub fn summary(&self, metric: MetricName) -> &Summary {
        match metric {
            MetricName::Ttft => &self.ttft,
            MetricName::Tpot => &self.tpot,
            MetricName::Itl => &self.itl,
            MetricName::E2el => &self.e2el,
            MetricName::ClientQueueTime => &self.client_queue_time,
            MetricName::E2elIncludingClientQueue => &self.response_e2el,
        }
    }
}

const US_PER_MS: f64 = 1000.0;

fn summary_ms(values_us: &[f64], percentiles: &[f64]) -> Summary {
    Summary::of(values_us, percentiles).scaled(1.0 / US_PER_MS)
}

fn per_second(x: f64, duration_s: f64) -> f64 {
    if duration_s > 0.0 {
        x / duration_s
    } else {
        0.0
    }
}

/// Computes every run metric from the records (any order). Never panics.
pub fn compute(records: &[RequestRecord], cfg: &MetricsConfig) -> RunMetrics {
    let pct = &cfg.percentiles;
    let (mut completed, mut failed, mut cancelled, mut unclassified) = (0u64, 0u64, 0u64, 0u64);
    let mut by_kind: Vec<(ErrorKind, u64)> = ErrorKind::ALL.iter().map(|&k| (k, 0)).collect();
    let (mut total_in, mut server_in, mut server_in_n, mut cached_in, mut total_out) = (0u64, 0, 0, 0, 0);
    let mut sources = TokenSourceCounts::default();
    let (mut ttft, mut tpot, mut itl, mut e2el) = (vec![], vec![], vec![], vec![]);
    let mut itl_tok: Vec<(f64, u64)> = Vec::new();
    let (mut r_ttft, mut r_e2el, mut queue, mut client_queue) = (vec![], vec![], vec![], vec![]);
    let mut token_events: Vec<(u64, f64)> = Vec::new();
    let mut intervals: Vec<(u64, u64)> = Vec::new();
    let mut good = 0u64;
    let (mut audio_s, mut audio_n) = (0.0f64, 0u64);
    let mut server_first_in = 0u64;
    let mut never_sent = 0u64;
    let (mut first_dispatch, mut last_end): (Option<u64>, Option<u64>) = (None, None);

    for r in records {
        let t = RequestTimes::of(r);
        if r.outcome == Outcome::Completed {
            server_first_in += u64::from(r.server_prompt_tokens.unwrap_or(r.prompt_tokens));
        }
        match r.outcome {
            Outcome::Completed => completed += 1,
            Outcome::Cancelled => {
                cancelled += 1;
                if r.dispatched_us.is_none() {
                    never_sent += 1;
                }
            }
            Outcome::Failed => {
                failed += 1;
                match r.error.as_ref().and_then(|e| by_kind.iter_mut().find(|(k, _)| *k == e.kind)) {
                    Some(slot) => slot.1 += 1,
                    None => unclassified += 1,
                }
            }
        }
        if let Some(d) = r.dispatched_us {
            first_dispatch = Some(first_dispatch.map_or(d, |f| f.min(d)));
            if let Some(end) = t.last_known_us {
                last_end = Some(last_end.map_or(end, |l| l.max(end)));
                intervals.push((d, end));
            }
            if let Some(q) = t.queue_us {
                queue.push(q as f64);
            }
        }
        if r.outcome != Outcome::Completed {
            continue;
        }
        total_in += u64::from(r.prompt_tokens);
        if let Some(a) = r.audio_seconds {
            audio_s += a;
            audio_n += 1;
        }
        if let Some(s) = r.server_prompt_tokens {
            server_in += u64::from(s);
            server_in_n += 1;
        }
        cached_in += r.cached_prompt_tokens.map_or(0, u64::from);
        total_out += u64::from(t.output_tokens);
        match t.output_source {
            TokenSource::Usage => sources.usage += 1,
            TokenSource::Retokenized => sources.retokenized += 1,
            TokenSource::Events => sources.events += 1,
        }
        push_opt(&mut ttft, t.ttft_us);
        push_opt(&mut e2el, t.e2el_us);
        if let Some(v) = t.tpot_us {
            tpot.push(v);
        }
        push_opt(&mut r_ttft, t.response_ttft_us);
        push_opt(&mut r_e2el, t.response_e2el_us);
        push_opt(&mut client_queue, t.queue_us);
        if r.first_token_us.is_some() {
            itl.extend(r.token_events.gaps_us.iter().map(|&g| f64::from(g)));
        }
        push_token_view_itls(r, &mut itl_tok);
        token_events.extend(token_event_times(r).into_iter().zip(token_event_weights(r)));
        if !cfg.goodput.is_empty() && meets_slos(&t, &cfg.goodput) {
            good += 1;
        }
    }

    let duration_us = match (first_dispatch, last_end) {
        (Some(f), Some(l)) => l.saturating_sub(f),
        _ => 0,
    };
    let duration_s = duration_us as f64 / 1e6;
    let good_requests = (!cfg.goodput.is_empty()).then_some(good);
    RunMetrics {
        config: cfg.clone(),
        sent: completed + failed + cancelled - never_sent,
        never_sent,
        completed,
        failed,
        cancelled,
        failures_by_kind: by_kind,
        failures_unclassified: unclassified,
        duration_s,
        total_input_tokens: total_in,
        server_total_input_tokens: server_in,
        server_input_tokens_reported: server_in_n,
        cached_input_tokens: cached_in,
        total_output_tokens: total_out,
        output_token_source: sources,
        request_throughput: per_second(completed as f64, duration_s),
        input_throughput: per_second(total_in as f64, duration_s),
        output_throughput: per_second(total_out as f64, duration_s),
        total_token_throughput: per_second((total_in + total_out) as f64, duration_s),
        good_requests,
        request_goodput: good_requests.map(|g| per_second(g as f64, duration_s)),
        // Never below the mean, even by the rounding of spread weights.
        max_output_tokens_per_s: peak_rate(&mut token_events, WINDOW_US, duration_us)
            .max(per_second(total_out as f64, duration_s)),
        max_concurrent_requests: peak_overlap(&intervals),
        rtfx: (audio_n > 0 && duration_s > 0.0).then(|| audio_s / duration_s),
        ttft: summary_ms(&ttft, pct),
        tpot: summary_ms(&tpot, pct),
        itl: summary_ms(&itl, pct),
        e2el: summary_ms(&e2el, pct),
        itl_token_view: summary_weighted(&itl_tok, pct).scaled(1.0 / US_PER_MS),
        response_ttft: summary_ms(&r_ttft, pct),
        response_e2el: summary_ms(&r_e2el, pct),
        queue_time: summary_ms(&queue, pct),
        client_queue_time: summary_ms(&client_queue, pct),
        output_split: output_split(records, pct),
        server_first_input_tokens: server_first_in,
        token_accounting: TokenAccounting::of(records),
    }
}

fn push_opt(v: &mut Vec<f64>, x: Option<u64>) {
    if let Some(x) = x {
        v.push(x as f64);
    }
}

/// A completed request is good iff every SLO holds (`value_ms ≤ threshold_ms`); TPOT of a request
/// with ≤ 1 output token counts as 0; a missing TTFT/E2EL fails its SLO.
fn meets_slos(t: &RequestTimes, slos: &[Slo]) -> bool {
    slos.iter().all(|s| {
        let value_us = match s.metric {
            MetricName::Ttft => t.ttft_us.map(|v| v as f64),
            MetricName::Tpot => Some(t.tpot_for_goodput_us()),
            MetricName::E2el => t.e2el_us.map(|v| v as f64),
            // Rejected by `MetricsConfig::validate`; ignored here.
            _ => return true,
        };
        value_us.is_some_and(|v| v / US_PER_MS <= s.threshold_ms)
    })
}

#[cfg(test)]
mod tests;
