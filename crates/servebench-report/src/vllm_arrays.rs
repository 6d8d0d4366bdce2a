//! Request records rebuilt from a result's per-request arrays (vLLM's `--save-detailed`:
//! `ttfts`, `itls`, `latencies`, `input_lens`, `output_lens`, `errors`, `start_times`), so
//! `servebench report` can draw a result that has no records file (vLLM's own result files).
//!
//! What the arrays give: per-request TTFT, inter-token gaps, E2EL and lengths, and (vLLM 0.33)
//! the start time of each request. What they lack: the scheduled send time (no response view, no
//! queue time), the token count of each event (one token per gap), the failure's kind.

use servebench_core::metrics::RunMetrics;
use servebench_core::record::{ErrorKind, Outcome, RequestRecord};

use crate::document::{DetailedArrays, Metrics};
use crate::result_keys::{Headline, MetricKey};

/// Where a run's records come from, which decides the charts that can be drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RecordSource {
    /// A records file (or the run itself): every chart.
    #[default]
    Records,
    /// Rebuilt from a result's per-request arrays (vLLM's `--save-detailed`); `timed` when its
    /// `start_times` put the requests on the run's clock. No scheduled send times.
    DetailedArrays { timed: bool },
    /// A result with neither records nor arrays: its summary keys only, no chart.
    SummaryOnly,
}

impl RecordSource {
    /// Whether the requests carry times on the run's clock (time charts).
    pub(crate) fn timed(self) -> bool {
        matches!(self, RecordSource::Records | RecordSource::DetailedArrays { timed: true })
    }

    /// Whether the requests carry their scheduled send time (response view, queue time).
    pub fn scheduled(self) -> bool {
        self == RecordSource::Records
    }
}

/// Records rebuilt from the arrays.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayRecords {
    pub records: Vec<RequestRecord>,
    /// Whether `start_times` placed the requests on the run's clock (time charts possible).
    pub timed: bool,
}

/// Seconds as µs, at most a quarter of `u64`'s range (about 146,000 years): sums of a few such
/// times cannot overflow (a `ttfts` entry of 1e308 panicked in a debug build).
fn us(seconds: f64) -> u64 {
    ((seconds.max(0.0) * 1e6).round() as u64).min(u64::MAX / 4)
}

/// The records of the arrays, one per request (the longest of `ttfts`, `latencies`, `errors`);
/// `None` when there are no per-request arrays. A request with a non-empty `errors` entry, or
/// without a TTFT or a positive latency ([`DetailedArrays::latency`]: rebuilt from `ttfts` and
/// `itls` when the result has no `latencies`), is failed (kind `server_error`: the arrays do not
/// say which); its `errors` text is its message.
pub fn records_from_arrays(d: &DetailedArrays) -> Option<ArrayRecords> {
    let len = |v: &Option<Vec<Option<f64>>>| v.as_ref().map_or(0, Vec::len);
    let n = len(&d.ttfts).max(len(&d.latencies)).max(d.errors.as_ref().map_or(0, Vec::len));
    if n == 0 {
        return None;
    }
    let at = |v: &Option<Vec<Option<f64>>>, i: usize| v.as_ref().and_then(|v| v.get(i).copied().flatten());
    let starts =
        d.start_times.as_ref().filter(|s| s.len() == n && s.iter().all(|x| x.is_some_and(f64::is_finite)));
    let t0 = starts.map_or(0.0, |s| s.iter().flatten().copied().fold(f64::INFINITY, f64::min));
    let records = (0..n)
        .map(|i| {
            let start = starts.map_or(0, |_| us(at(&d.start_times, i).unwrap_or(t0) - t0));
            let prompt = at(&d.input_lens, i).map_or(0, |v| v.max(0.0) as u32);
            let out = at(&d.output_lens, i).map_or(0, |v| v.max(0.0) as u32);
            let mut r = RequestRecord::scheduled(i as u64, format!("vllm-{i}"), start, prompt, out);
            r.dispatched_us = Some(start);
            r.attempts = 1;
            let error =
                d.errors.as_ref().and_then(|e| e.get(i)).and_then(|e| e.0.clone()).unwrap_or_default();
            let (ttft, lat) = (at(&d.ttfts, i), d.latency(i).filter(|l| *l > 0.0));
            match (ttft, lat) {
                (Some(ttft), Some(lat)) if error.is_empty() => {
                    let gaps: Vec<u32> = d.gaps(i).map(|x| us(x) as u32).collect();
                    let first = start.saturating_add(us(ttft));
                    // vLLM's latency ends at the last token: TPOT from the rebuilt record is
                    // vLLM's `(latency − ttft) / (output_len − 1)` even where the gaps do not add
                    // up to it.
                    let gaps_us = gaps.iter().map(|&g| u64::from(g)).sum::<u64>();
                    let last = first.saturating_add(gaps_us).max(start.saturating_add(us(lat)));
                    r.outcome = Outcome::Completed;
                    (r.first_event_us, r.first_token_us, r.last_token_us) =
                        (Some(first), Some(first), Some(last));
                    r.done_us = Some(last);
                    r.token_event_count = gaps.len() as u32 + 1;
                    r.token_events.gaps_us = gaps;
                    r.completion_tokens = Some(out);
                }
                _ => {
                    // Its time to failure only when the arrays give one (a 0 latency is
                    // vLLM's placeholder, not a failure at the start).
                    r.done_us = lat.map(|l| start.saturating_add(us(l)));
                    let msg = if error.is_empty() {
                        "failed (no TTFT or latency in the arrays)".into()
                    } else {
                        error
                    };
                    r.fail(ErrorKind::ServerError, msg);
                }
            }
            r
        })
        .collect();
    Some(ArrayRecords { records, timed: starts.is_some() })
}

/// The run-level figures of a run without records taken from its result's own keys (duration,
/// throughputs, peaks, counts), and no response view or queue time: records rebuilt from arrays
/// have no run clock to recompute them (without `start_times` every request starts at 0), and a
/// summary-only result has no requests. Returns the figures the result lacks (absent or not a
/// finite number): they are unknown, shown "–" (docs/metrics.md, "Metrics without data"), while
/// `m` keeps vLLM's type for them (0).
pub fn use_result_figures(m: &mut RunMetrics, result: &Metrics) -> Vec<Headline> {
    let mut lacks = Vec::new();
    let mut get = |h: Headline| {
        let v = result.get(&MetricKey::Headline(h)).filter(|v| v.is_finite());
        if v.is_none() {
            lacks.push(h);
        }
        v
    };
    m.duration_s = get(Headline::Duration).unwrap_or(0.0);
    m.request_throughput = get(Headline::RequestThroughput).unwrap_or(0.0);
    m.output_throughput = get(Headline::OutputThroughput).unwrap_or(0.0);
    m.total_token_throughput = get(Headline::TotalTokenThroughput).unwrap_or(0.0);
    m.max_output_tokens_per_s = get(Headline::MaxOutputTokensPerS).unwrap_or(0.0);
    m.max_concurrent_requests = get(Headline::MaxConcurrentRequests).map_or(0, |v| v as u64);
    m.request_goodput = get(Headline::RequestGoodput);
    // No scheduled send times: the response view and queue time are unknown, not equal to the
    // service view.
    (m.response_ttft, m.response_e2el, m.queue_time) = Default::default();
    if m.sent == 0 {
        m.completed = get(Headline::Completed).map_or(0, |v| v as u64);
        m.failed = get(Headline::Failed).map_or(0, |v| v as u64);
        m.sent = m.completed + m.failed;
    }
    lacks
}

/// What the report of a run says about its source: which charts are drawn from what, and which
/// are absent and why. Empty for a records file.
pub fn source_notes(source: RecordSource) -> Vec<String> {
    const TIME: &str = "TTFT and E2EL over time, output tokens/s over time, requests in flight";
    match source {
        RecordSource::Records => Vec::new(),
        RecordSource::DetailedArrays { timed } => {
            let mut v = vec![format!(
                "No records file: this run is drawn from the result's per-request arrays (vLLM's \
                 --save-detailed: ttfts, itls, latencies, input_lens, output_lens, errors; without \
                 latencies, each is ttft + the sum of its itls). Throughputs, \
                 duration and peaks are the result's own; latency statistics are recomputed from the arrays. \
                 The response view and queue time need each request's scheduled send time, which the arrays \
                 lack (they are absent); each inter-token gap counts as one token; failed requests are \
                 counted as server_error (the arrays keep the text, not the kind)."
            )];
            v.push(if timed {
                format!("Time charts ({TIME}) place requests by the result's start_times.")
            } else {
                format!(
                    "Time charts ({TIME}, queue time) are absent: they need each request's start time, \
                     which this result's arrays lack (no start_times). A servebench records file has them."
                )
            });
            v
        }
        RecordSource::SummaryOnly => vec![format!(
            "No records file and no per-request arrays: only the result's summary keys are shown (the \
             table and the configuration rows). Every chart needs per-request data: a servebench records \
             file, or a vLLM result saved with --save-detailed (distributions; {TIME} also need start_times)."
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::ResultDocument;
    use servebench_core::metrics::RequestTimes;

    fn arrays(v: serde_json::Value) -> DetailedArrays {
        serde_json::from_value::<ResultDocument>(v).unwrap().detailed
    }

    #[test]
    fn arrays_become_records_with_their_times() {
        let d = arrays(serde_json::json!({
            "ttfts": [0.1, 0.0, 0.05], "latencies": [0.5, 0.0, 0.25], "output_lens": [5, 0, 3],
            "input_lens": [12, 20, 9], "itls": [[0.1, 0.1, 0.1, 0.1], [], [0.1, 0.1]],
            "errors": ["", "HTTP 503", ""], "start_times": [100.0, 100.01, 100.02]}));
        let a = records_from_arrays(&d).unwrap();
        assert!(a.timed);
        let [ok, failed, third] = a.records.as_slice() else { panic!("three records") };
        let t = RequestTimes::of(ok);
        assert_eq!((t.ttft_us, t.e2el_us, ok.prompt_tokens), (Some(100_000), Some(500_000), 12));
        assert_eq!(ok.token_events.gaps_us, vec![100_000; 4]);
        assert_eq!(
            (failed.outcome, failed.error.as_ref().map(|e| e.message.as_str())),
            (Outcome::Failed, Some("HTTP 503"))
        );
        assert_eq!((third.intended_us, third.dispatched_us), (20_000, Some(20_000)));
        // Without start times every request starts at 0: not timed.
        let d = arrays(serde_json::json!({"ttfts": [0.1], "latencies": [0.2], "itls": [[0.1]]}));
        assert!(!records_from_arrays(&d).unwrap().timed);
        assert!(records_from_arrays(&arrays(serde_json::json!({"completed": 3}))).is_none());
    }

    /// Pins huge times in the arrays (a `ttfts` entry of 1e308, an integer beyond `u64`): the
    /// rebuilt record's sums overflowed ("attempt to add with overflow", exit 101); they are
    /// held at a quarter of `u64`'s range, and the report's metrics are computed without a panic.
    #[test]
    fn huge_times_in_the_arrays_are_no_overflow() {
        let d = arrays(serde_json::json!({
            "ttfts": [1e308, 123456789012345678901234567890.0, 0.1], "latencies": [1e308, 1e308, 1e300],
            "itls": [[1e308], [0.1], [1e300, 0.5]], "errors": ["", "", ""], "start_times": [0.0, 1e308, 2.0]}));
        let a = records_from_arrays(&d).unwrap();
        assert_eq!(a.records.len(), 3);
        assert!(a.records.iter().all(|r| r.done_us.is_some_and(|t| t < u64::MAX)));
        let m = servebench_core::metrics::compute(
            &a.records,
            &servebench_core::metrics::MetricsConfig::default(),
        );
        assert_eq!(m.completed + m.failed, 3);
    }

    /// Pins TPOT on arrays whose gaps fall short of the latency: the rebuilt record used to end
    /// its tokens at `ttft + Σ itls`, so the report's mean TPOT (10.20 ms) differed from the
    /// file's own `mean_tpot_ms` (10.21), which vLLM computes as `(latency − ttft) / (n − 1)`.
    #[test]
    fn tpot_of_rebuilt_records_is_vllms_from_latency() {
        let d = arrays(serde_json::json!({
            "ttfts": [0.1], "latencies": [0.5], "output_lens": [5], "itls": [[0.09, 0.09, 0.09, 0.09]],
            "errors": [""]}));
        let a = records_from_arrays(&d).unwrap();
        let t = RequestTimes::of(&a.records[0]);
        assert_eq!(t.tpot_us, Some(100_000.0), "(0.5 − 0.1) / 4 s");
        assert_eq!(t.e2el_us, Some(500_000));
    }

    /// Pins older vLLM's `--save-detailed` keys (`ttfts`, `itls`, `errors`, no `latencies`):
    /// `errors[i] == ""` is a success and the latency is rebuilt as `ttft + Σ itls`; every
    /// request used to be counted as failed (`server_error`).
    #[test]
    fn arrays_without_latencies_count_empty_errors_as_completed() {
        let d = arrays(serde_json::json!({
            "ttfts": [0.1, 0.0], "output_lens": [5, 0], "itls": [[0.1, 0.1, 0.1, 0.1], []],
            "errors": ["", "HTTP 500"]}));
        let a = records_from_arrays(&d).unwrap();
        let [ok, failed] = a.records.as_slice() else { panic!("two records") };
        assert_eq!(ok.outcome, Outcome::Completed);
        let t = RequestTimes::of(ok);
        assert_eq!((t.ttft_us, t.e2el_us, t.tpot_us), (Some(100_000), Some(500_000), Some(100_000.0)));
        assert_eq!(failed.outcome, Outcome::Failed);
    }
}
