//! Run metrics: one pure function from request records to every number a report shows.
//!
//! `docs/metrics.md` is the contract (formula, unit, source fields, difference from vLLM). In
//! short: counts by outcome; duration from the first dispatch to the last known end; service-view
//! latencies (from `dispatched`, vLLM parity) and response-view latencies (from `intended`); token
//! totals and throughputs; exact peaks; goodput. Latency statistics cover completed requests only.
//! Every latency summary in [`RunMetrics`] is in **milliseconds**.

pub mod agentic;
mod client_controls;
mod event_merge;
pub mod groups;
pub mod http_phases;
mod peaks;
pub mod prefix_cache;
mod request;
mod steady_state;
mod token_accounting;
mod ttfo;

use serde::{Deserialize, Serialize};
use std::borrow::Borrow;

use crate::compact_records::RecordSet;
use crate::error::{BenchError, Result};
use crate::record::{ErrorKind, Outcome, RequestRecord, TokenSource};
use crate::stats::{merge_weighted, sort_weighted, summary_weighted_sorted, Summary};
use event_merge::EventTimelines;
use peaks::{IntervalEnds, LevelChanges};

pub use client_controls::{prefill_wait_ms, DesignedCancellation};
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
    /// Σ `usage.prompt_tokens_details.cached_tokens` of completed requests; `None` when not one
    /// reported it (unknown, not 0 cached tokens).
    pub cached_input_tokens: Option<u64>,
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
    /// Time waiting for a prefill slot (`--max-prefill-concurrency`) of every request that got
    /// one, ms; `None` without a prefill cap (docs/metrics.md, "Prefill wait").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_wait: Option<Summary>,
    /// The requests chosen for cancellation by design, by how they ended; `None` when none was
    /// chosen (docs/metrics.md, "Cancelled by design").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub designed_cancellation: Option<DesignedCancellation>,
    /// Per-session figures of a session-tree (agentic) run; `None` for other runs
    /// (docs/metrics.md, "Session trees").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_trees: Option<agentic::SessionTreeMetrics>,
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

/// The summary in ms of samples in µs, consumed (sorted in place, then freed).
fn summary_ms(values_us: Vec<f64>, percentiles: &[f64]) -> Summary {
    Summary::of_vec(values_us, percentiles).scaled(1.0 / US_PER_MS)
}

fn per_second(x: f64, duration_s: f64) -> f64 {
    if duration_s > 0.0 {
        x / duration_s
    } else {
        0.0
    }
}

/// Computes every run metric from the records (any order). Never panics.
pub fn compute<S: RecordSet + ?Sized>(records: &S, cfg: &MetricsConfig) -> RunMetrics {
    let pct = &cfg.percentiles;
    let mut outcomes = OutcomeTally::default();
    let mut span = Span::for_records(records.record_count());
    let mut tokens = TokenTotals::default();
    let mut samples = LatencySamples::for_records(records);
    for r in records.records() {
        let r = r.borrow();
        let t = RequestTimes::of(r);
        outcomes.add(r);
        span.add(r, &t);
        if r.outcome == Outcome::Completed {
            tokens.add(r, &t, cfg);
            samples.add(r, &t);
        }
    }
    // The summaries first, then the peaks' walk: the latency samples are freed before the token
    // events and intervals are held (at a million requests, 56 bytes each and then 48, not 104).
    let duration_us = span.duration_us();
    let latency = LatencySummaries::of(samples.sorted(), span.queue, pct);
    // The peak concurrency first: its lists are freed before the peak rate's merge runs.
    let (timelines, level_changes) = peaks_walk(records, outcomes.completed);
    let max_concurrent_requests = level_changes.peak();
    let duration_s = duration_us as f64 / 1e6;
    let (completed, total_in, total_out) = (outcomes.completed, tokens.total_in, tokens.total_out);
    let good_requests = (!cfg.goodput.is_empty()).then_some(tokens.good);
    RunMetrics {
        config: cfg.clone(),
        sent: completed + outcomes.failed + outcomes.cancelled - outcomes.never_sent,
        never_sent: outcomes.never_sent,
        completed,
        failed: outcomes.failed,
        cancelled: outcomes.cancelled,
        failures_by_kind: outcomes.by_kind,
        failures_unclassified: outcomes.unclassified,
        duration_s,
        total_input_tokens: total_in,
        server_total_input_tokens: tokens.server_in,
        server_input_tokens_reported: tokens.server_in_n,
        cached_input_tokens: tokens.cached_in,
        total_output_tokens: total_out,
        output_token_source: tokens.sources,
        request_throughput: per_second(completed as f64, duration_s),
        input_throughput: per_second(total_in as f64, duration_s),
        output_throughput: per_second(total_out as f64, duration_s),
        total_token_throughput: per_second((total_in + total_out) as f64, duration_s),
        good_requests,
        request_goodput: good_requests.map(|g| per_second(g as f64, duration_s)),
        // Never below the mean, even by the rounding of spread weights.
        max_output_tokens_per_s: event_merge::peak_output_rate(&timelines, WINDOW_US, duration_us)
            .max(per_second(total_out as f64, duration_s)),
        max_concurrent_requests,
        rtfx: (tokens.audio_n > 0 && duration_s > 0.0).then(|| tokens.audio_s / duration_s),
        ttft: latency.ttft,
        tpot: latency.tpot,
        itl: latency.itl,
        e2el: latency.e2el,
        itl_token_view: latency.itl_token_view,
        response_ttft: latency.response_ttft,
        response_e2el: latency.response_e2el,
        queue_time: latency.queue_time,
        client_queue_time: latency.client_queue_time,
        output_split: output_split(records, pct),
        server_first_input_tokens: tokens.server_first_in,
        token_accounting: TokenAccounting::of(records),
        prefill_wait: prefill_wait_ms(records, pct),
        designed_cancellation: DesignedCancellation::of(records),
        session_trees: agentic::session_tree_metrics(records, pct),
    }
}

/// How the requests ended: completed, failed (by error kind) or cancelled.
struct OutcomeTally {
    completed: u64,
    failed: u64,
    cancelled: u64,
    /// Cancelled before they were sent.
    never_sent: u64,
    by_kind: Vec<(ErrorKind, u64)>,
    /// Failed without an error kind.
    unclassified: u64,
}

impl Default for OutcomeTally {
    fn default() -> Self {
        OutcomeTally {
            completed: 0,
            failed: 0,
            cancelled: 0,
            never_sent: 0,
            by_kind: ErrorKind::ALL.iter().map(|&k| (k, 0)).collect(),
            unclassified: 0,
        }
    }
}

impl OutcomeTally {
    fn add(&mut self, r: &RequestRecord) {
        match r.outcome {
            Outcome::Completed => self.completed += 1,
            Outcome::Cancelled => {
                self.cancelled += 1;
                if r.dispatched_us.is_none() {
                    self.never_sent += 1;
                }
            }
            Outcome::Failed => {
                self.failed += 1;
                match r.error.as_ref().and_then(|e| self.by_kind.iter_mut().find(|(k, _)| *k == e.kind)) {
                    Some(slot) => slot.1 += 1,
                    None => self.unclassified += 1,
                }
            }
        }
    }
}

/// When the sent requests were in flight (any outcome): the run's span and the client queue
/// times (each request's interval is `peaks_walk`'s).
#[derive(Default)]
struct Span {
    first_dispatch: Option<u64>,
    last_end: Option<u64>,
    queue: Vec<f64>,
}

impl Span {
    /// Sized once for `n` requests (see `LatencySamples::for_records`).
    fn for_records(n: usize) -> Span {
        Span { queue: Vec::with_capacity(n), ..Span::default() }
    }

    fn add(&mut self, r: &RequestRecord, t: &RequestTimes) {
        let Some(d) = r.dispatched_us else { return };
        self.first_dispatch = Some(self.first_dispatch.map_or(d, |f| f.min(d)));
        if let Some(end) = t.last_known_us {
            self.last_end = Some(self.last_end.map_or(end, |l| l.max(end)));
        }
        if let Some(q) = t.queue_us {
            self.queue.push(q as f64);
        }
    }

    /// First dispatch to last known end, µs (0 without a sent request that ended).
    fn duration_us(&self) -> u64 {
        match (self.first_dispatch, self.last_end) {
            (Some(f), Some(l)) => l.saturating_sub(f),
            _ => 0,
        }
    }
}

/// Token and audio totals of the completed requests, and how many met every SLO.
#[derive(Default)]
struct TokenTotals {
    total_in: u64,
    server_in: u64,
    server_in_n: u64,
    cached_in: Option<u64>,
    total_out: u64,
    sources: TokenSourceCounts,
    /// The server's prompt-token count where it gave one, else the client's.
    server_first_in: u64,
    audio_s: f64,
    audio_n: u64,
    good: u64,
}

impl TokenTotals {
    fn add(&mut self, r: &RequestRecord, t: &RequestTimes, cfg: &MetricsConfig) {
        self.server_first_in += u64::from(r.server_prompt_tokens.unwrap_or(r.prompt_tokens));
        self.total_in += u64::from(r.prompt_tokens);
        if let Some(a) = r.audio_seconds {
            self.audio_s += a;
            self.audio_n += 1;
        }
        if let Some(s) = r.server_prompt_tokens {
            self.server_in += u64::from(s);
            self.server_in_n += 1;
        }
        if let Some(c) = r.cached_prompt_tokens {
            *self.cached_in.get_or_insert(0) += u64::from(c);
        }
        self.total_out += u64::from(t.output_tokens);
        match t.output_source {
            TokenSource::Usage => self.sources.usage += 1,
            TokenSource::Retokenized => self.sources.retokenized += 1,
            TokenSource::Events => self.sources.events += 1,
        }
        if !cfg.goodput.is_empty() && meets_slos(t, &cfg.goodput) {
            self.good += 1;
        }
    }
}

/// Latency samples of the completed requests, µs. Per-token samples are held as compactly as
/// their values allow (a long run has millions): event gaps as `u32`, and the token events for
/// the peak rate not at all (`event_merge` walks the records instead).
#[derive(Default)]
struct LatencySamples {
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    /// Event gaps (sorted once collected: `sorted`).
    itl: Vec<u32>,
    e2el: Vec<f64>,
    /// The token view's ITLs are exactly `itl` (every request one token per event, the common
    /// case): `itl_tok_gaps` stays empty and the token view reads `itl`.
    token_view_is_itl: bool,
    /// ITL per token where they are the event gaps as they are (one token each).
    itl_tok_gaps: Vec<u32>,
    /// ITL per token otherwise: (value, tokens it spans).
    itl_tok: Vec<(f64, u64)>,
    response_ttft: Vec<f64>,
    response_e2el: Vec<f64>,
    client_queue: Vec<f64>,
}

/// The latency summaries of [`RunMetrics`], ms.
struct LatencySummaries {
    ttft: Summary,
    tpot: Summary,
    itl: Summary,
    e2el: Summary,
    itl_token_view: Summary,
    response_ttft: Summary,
    response_e2el: Summary,
    queue_time: Summary,
    client_queue_time: Summary,
}

impl LatencySummaries {
    /// Summarizes the samples (sorted) and the client queue times, consuming them: each list
    /// is sorted in place and freed once summarized.
    fn of(samples: LatencySamples, queue: Vec<f64>, pct: &[f64]) -> LatencySummaries {
        let itl = Summary::of_sorted(&samples.itl, pct).scaled(1.0 / US_PER_MS);
        let itl_token_view = token_view_summary(&samples, pct).scaled(1.0 / US_PER_MS);
        let LatencySamples {
            ttft,
            tpot,
            e2el,
            response_ttft,
            response_e2el,
            client_queue,
            itl: gaps,
            itl_tok_gaps,
            itl_tok,
            ..
        } = samples;
        drop((gaps, itl_tok_gaps, itl_tok));
        LatencySummaries {
            ttft: summary_ms(ttft, pct),
            tpot: summary_ms(tpot, pct),
            itl,
            e2el: summary_ms(e2el, pct),
            itl_token_view,
            response_ttft: summary_ms(response_ttft, pct),
            response_e2el: summary_ms(response_e2el, pct),
            queue_time: summary_ms(queue, pct),
            client_queue_time: summary_ms(client_queue, pct),
        }
    }
}

/// The completed requests' token events (the peak output rate's) and the changes of the number
/// of requests in flight — every sent request's non-empty `[dispatched, last known)` interval,
/// as its start and end (the peak concurrency's) — in one walk; `completed` sizes the events'
/// list.
fn peaks_walk<S: RecordSet + ?Sized>(records: &S, completed: u64) -> (EventTimelines, LevelChanges) {
    let mut timelines = EventTimelines::with_capacity(usize::try_from(completed).unwrap_or(0));
    let mut in_flight = IntervalEnds::with_capacity(records.record_count());
    for r in records.records() {
        let r = r.borrow();
        if let Some(interval) = request::in_flight_interval(r) {
            in_flight.push(interval);
        }
        if r.outcome == Outcome::Completed {
            timelines.push(r);
        }
    }
    (timelines, in_flight.into_changes())
}

impl LatencySamples {
    fn for_records<S: RecordSet + ?Sized>(records: &S) -> LatencySamples {
        // One walk: the completed requests, and whether each one's token view is its gaps.
        let (mut n, mut token_view_is_itl) = (0, true);
        for r in records.records() {
            let r = r.borrow();
            if r.outcome == Outcome::Completed {
                n += 1;
                token_view_is_itl &= r.first_token_us.is_none() || request::token_view_is_event_gaps(r);
            }
        }
        // Sized once for the completed requests: growing by doubling would copy each vector on
        // the way and could leave up to twice its size allocated (a million requests: 56 MB).
        let per_request = || Vec::with_capacity(n);
        LatencySamples {
            token_view_is_itl,
            ttft: per_request(),
            tpot: per_request(),
            e2el: per_request(),
            response_ttft: per_request(),
            response_e2el: per_request(),
            client_queue: per_request(),
            ..LatencySamples::default()
        }
    }

    /// Sorts the per-token samples, once all are in.
    fn sorted(mut self) -> Self {
        self.itl.sort_unstable();
        self.itl_tok_gaps.sort_unstable();
        sort_weighted(&mut self.itl_tok);
        self
    }

    fn add(&mut self, r: &RequestRecord, t: &RequestTimes) {
        push_opt(&mut self.ttft, t.ttft_us);
        push_opt(&mut self.e2el, t.e2el_us);
        if let Some(v) = t.tpot_us {
            self.tpot.push(v);
        }
        push_opt(&mut self.response_ttft, t.response_ttft_us);
        push_opt(&mut self.response_e2el, t.response_e2el_us);
        push_opt(&mut self.client_queue, t.queue_us);
        if r.first_token_us.is_some() {
            self.itl.extend_from_slice(&r.token_events.gaps_us);
        }
        if self.token_view_is_itl {
            // Its gaps are in `itl` already.
        } else if request::token_view_is_event_gaps(r) {
            self.itl_tok_gaps.extend_from_slice(&r.token_events.gaps_us);
        } else {
            push_token_view_itls(r, &mut self.itl_tok);
        }
    }
}

/// The token-view ITL summary (`stats::summary_weighted`) over both kinds of samples at once.
fn token_view_summary(s: &LatencySamples, pct: &[f64]) -> Summary {
    let gaps = if s.token_view_is_itl { &s.itl } else { &s.itl_tok_gaps };
    summary_weighted_sorted(|| merge_weighted(gaps, &s.itl_tok), pct)
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
