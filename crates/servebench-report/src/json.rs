//! The result JSON: every key `vllm bench serve` writes, with its names, order and units, then
//! servebench's own keys (documented in `docs/result.schema.json`).

use serde_json::{json, Map, Value};
use servebench_core::metrics::{MetricName, RequestTimes, RunMetrics};
use servebench_core::record::{Outcome, RequestRecord};
use servebench_core::RecordSet;

use crate::fmt::{
    insert_stats, insert_vllm_stats, int_or_float, metric_reported, number_or_inf, rate_json, secs,
    vllm_number, vllm_rate,
};
use crate::info::{python_isoformat, vllm_date, ClientHealth, RunInfo};
use crate::per_request::{Column, IndexOrder, PerRequestArrays};
use serde::Serialize;

/// The result document of one run (vLLM's keys and ours; the keys a run adds after them are
/// [`crate::written::RunDocument`]'s).
///
/// vLLM's keys come first in vLLM's order, units and JSON types (a vLLM key without data is
/// vLLM's `0.0`, never `null`; docs/metrics.md): `duration` in seconds, latency statistics in
/// ms, the per-request arrays `ttfts`, `itls`, `latencies`, `start_times`, `queue_times` in
/// seconds (one entry per record, by index; docs/metrics.md, "Per-request arrays", says what a
/// request that did not complete gets). As in vLLM, `latencies` and `queue_times` are written
/// even when `detailed` is false; the other arrays only when it is true. servebench's keys
/// follow.
pub fn result_json<S: RecordSet + ?Sized>(
    info: &RunInfo,
    m: &RunMetrics,
    records: &S,
    detailed: bool,
) -> Value {
    let (mut o, arrays) = result_object(info, m, records, detailed);
    arrays.fill(&mut o);
    Value::Object(o)
}

/// [`result_json`]'s keys as a map, for the documents that add their own after them
/// ([`crate::written::RunDocument`], [`crate::written::MergedDocument`]). The per-request
/// arrays are held apart, each key's place kept by a `null` ([`PerRequestArrays`]).
pub fn result_object<S: RecordSet + ?Sized>(
    info: &RunInfo,
    m: &RunMetrics,
    records: &S,
    detailed: bool,
) -> (Map<String, Value>, PerRequestArrays) {
    // A pooling backend's result has vLLM's reduced shape (`crate::sections::pooling`).
    let pooling = crate::sections::pooling::is_pooling_backend(&info.backend);
    let generation = !pooling;
    let mut arrays = PerRequestArrays::default();
    let mut o = Map::new();
    o.insert("date".into(), Value::from(vllm_date(info.date)));
    o.insert("endpoint_type".into(), Value::from(info.endpoint_type.clone()));
    o.insert("backend".into(), Value::from(info.backend.clone()));
    o.insert("label".into(), json!(info.label));
    o.insert("model_id".into(), Value::from(info.model_id.clone()));
    o.insert("tokenizer_id".into(), json!(info.tokenizer_id));
    o.insert("num_prompts".into(), Value::from(info.num_prompts));
    for (k, v) in &info.metadata {
        o.insert(k.clone(), Value::from(v.clone()));
    }
    o.insert("request_rate".into(), number_or_inf(info.request_rate));
    o.insert("burstiness".into(), number_or_inf(info.burstiness));
    o.insert("max_concurrency".into(), json!(info.max_concurrency));
    if let Some(r) = info.ramp_up {
        o.insert("ramp_up_strategy".into(), Value::from(r.strategy.as_str()));
        o.insert("ramp_up_start_rps".into(), int_or_float(r.start_rps));
        o.insert("ramp_up_end_rps".into(), int_or_float(r.end_rps));
    }
    o.insert("duration".into(), vllm_rate(m.duration_s, m.duration_s));
    o.insert("completed".into(), Value::from(m.completed));
    o.insert("failed".into(), Value::from(m.failed));
    let d = m.duration_s;
    if pooling {
        o.insert("total_input_tokens".into(), Value::from(m.server_first_input_tokens));
    } else {
        o.insert("total_input_tokens".into(), Value::from(m.total_input_tokens));
        o.insert("total_output_tokens".into(), Value::from(m.total_output_tokens));
    }
    o.insert("request_throughput".into(), vllm_rate(d, m.request_throughput));
    // vLLM: None without --goodput SLOs, else a float.
    let goodput = m.request_goodput.map_or(Value::Null, |g| vllm_rate(d, g));
    o.insert("request_goodput".into(), goodput);
    if pooling {
        let input = crate::sections::pooling::input_throughput(m);
        o.insert("total_token_throughput".into(), if input.is_null() { vllm_rate(d, 0.0) } else { input });
    } else {
        o.insert("output_throughput".into(), vllm_rate(d, m.output_throughput));
        o.insert("total_token_throughput".into(), vllm_rate(d, m.total_token_throughput));
    }
    insert_arrays(&mut o, &mut arrays, records, (detailed, pooling));
    if generation {
        o.insert("max_output_tokens_per_s".into(), vllm_rate(d, m.max_output_tokens_per_s));
    }
    // Peak concurrency is a figure of every run: a pooling run's console shows it, so its file
    // has it too (vLLM's pooling result lacks the key).
    o.insert("max_concurrent_requests".into(), Value::from(m.max_concurrent_requests));
    if generation {
        // RTFx (docs/metrics.md): vLLM's key, 0.0 for a run without audio, as vLLM writes it.
        o.insert("rtfx".into(), m.rtfx.map_or(vllm_number(false, 0.0), |r| vllm_rate(d, r)));
    }
    if !info.rps_change_events.is_empty() {
        let events: Vec<Value> = info
            .rps_change_events
            .iter()
            .map(|e| {
                let at =
                    info.origin_wall + time::Duration::microseconds(e.offset_us.min(i64::MAX as u64) as i64);
                json!({"rps": e.rps, "timestamp": python_isoformat(at)})
            })
            .collect();
        o.insert("rps_change_events".into(), Value::Array(events));
    }
    for metric in MetricName::ALL {
        if metric_reported(info, m, metric) {
            insert_vllm_stats(&mut o, metric.as_str(), m.summary(metric));
        }
    }
    insert_ours(&mut o, info, m, pooling);
    if pooling {
        crate::sections::pooling::insert_keys(&mut o, &mut arrays, m, records, detailed);
    }
    (o, arrays)
}

/// vLLM's per-request arrays, one entry per record by index (docs/metrics.md, "Per-request
/// arrays"). A completed request has vLLM's values: `ttfts` = first token − dispatched,
/// `latencies` = **last token** − dispatched (vLLM's `latency`, so `(latency − ttft) /
/// (output_len − 1)` is our TPOT and `Σ itls = latency − ttft`), `itls` its token-event gaps.
/// A request that did not complete has what vLLM writes for a failed one, all of a piece: a
/// non-empty `errors` entry (`RequestRecord::error_entry`), `ttfts` 0.0, `itls` `[]`, `latencies` 0.0,
/// `output_lens` 0, `generated_texts` `""`; `input_lens`, `start_times` and `queue_times`
/// keep what was measured.
fn insert_arrays<S: RecordSet + ?Sized>(
    o: &mut Map<String, Value>,
    arrays: &mut PerRequestArrays,
    records: &S,
    (detailed, pooling): (bool, bool),
) {
    // Columns in index order, all filled in one walk of the records (a run's are decoded one at
    // a time, never all held as records), the gaps in a second.
    let order = IndexOrder::of(records);
    let c = ArrayColumns::of(records, &order, detailed, pooling);
    let mut put = |key: &str, column: Column| arrays.insert(o, key, column);
    if detailed {
        put("input_lens", Column::Counts(c.input_lens));
        put("output_lens", Column::Counts(c.output_lens));
        put("ttfts", Column::Floats(c.ttfts));
        put("itls", order.gaps_column_of_lens(records, &c.gap_counts, itls_of));
    }
    put("latencies", Column::Floats(c.latencies));
    if detailed {
        put("start_times", Column::Floats(c.start_times));
    }
    put("queue_times", Column::Floats(c.queue_times));
    // vLLM 0.34: the server's own per-request timing, seconds, `null` where a request had none;
    // both keys left out when no request had any (as vLLM's `_get_server_metrics_results`).
    if c.any_server_timing {
        put("server_queue_times", Column::Floats(c.server_queue_times));
        put("server_ttfts", Column::Floats(c.server_ttfts));
    }
    if detailed {
        put("generated_texts", Column::Texts(c.generated_texts));
        put("errors", Column::Texts(c.errors));
    }
}

/// The per-request arrays' values in index order (the detailed ones empty unless `detailed`).
#[derive(Default)]
struct ArrayColumns {
    input_lens: Vec<u64>,
    output_lens: Vec<u64>,
    ttfts: Vec<f64>,
    gap_counts: Vec<usize>,
    latencies: Vec<f64>,
    start_times: Vec<f64>,
    queue_times: Vec<f64>,
    server_queue_times: Vec<f64>,
    server_ttfts: Vec<f64>,
    any_server_timing: bool,
    /// The number of requests.
    len: usize,
    generated_texts: Vec<String>,
    errors: Vec<String>,
}

impl ArrayColumns {
    /// `pooling`: a pooling run's `input_lens` are the server's counts (the client's where the
    /// server gave none), as its result writes them without `--save-detailed`.
    fn of<S: RecordSet + ?Sized>(
        records: &S,
        order: &IndexOrder,
        detailed: bool,
        pooling: bool,
    ) -> ArrayColumns {
        let n = order.len();
        let (all, some) = (n, if detailed { n } else { 0 });
        let mut c = ArrayColumns {
            len: n,
            input_lens: vec![0; some],
            output_lens: vec![0; some],
            ttfts: vec![0.0; some],
            gap_counts: vec![0; some],
            latencies: vec![0.0; all],
            start_times: vec![0.0; some],
            queue_times: vec![0.0; all],
            // Sized at the first request with server timing (most runs have none).
            server_queue_times: Vec::new(),
            server_ttfts: Vec::new(),
            any_server_timing: false,
            generated_texts: vec![String::new(); some],
            errors: vec![String::new(); some],
        };
        order.walk(records, |i, r| c.fill(i, r, detailed, pooling));
        c
    }

    /// Record `r`'s values at place `i`.
    fn fill(&mut self, i: usize, r: &RequestRecord, detailed: bool, pooling: bool) {
        // `Some(times)` for a completed request, `None` for one that did not complete.
        let times = (r.outcome == Outcome::Completed).then(|| RequestTimes::of(r));
        set(&mut self.latencies, i, times.and_then(|_| vllm_latency_us(r)).map_or(0.0, secs));
        // Measured for every dispatched request, whatever its outcome (as vLLM's semaphore wait).
        set(&mut self.queue_times, i, RequestTimes::of(r).queue_us.map_or(0.0, secs));
        if !self.any_server_timing && (r.server_queue_time_ms.is_some() || r.server_ttft_ms.is_some()) {
            self.any_server_timing = true;
            self.server_queue_times = vec![f64::NAN; self.len];
            self.server_ttfts = vec![f64::NAN; self.len];
        }
        set(&mut self.server_queue_times, i, r.server_queue_time_ms.map_or(f64::NAN, |v| v / 1e3));
        set(&mut self.server_ttfts, i, r.server_ttft_ms.map_or(f64::NAN, |v| v / 1e3));
        if !detailed {
            return;
        }
        let input = if pooling { r.server_prompt_tokens.unwrap_or(r.prompt_tokens) } else { r.prompt_tokens };
        set(&mut self.input_lens, i, u64::from(input));
        set(&mut self.output_lens, i, times.map_or(0, |t| u64::from(t.output_tokens)));
        set(&mut self.ttfts, i, times.and_then(|t| t.ttft_us).map_or(0.0, secs));
        set(&mut self.gap_counts, i, itls_of(r).len());
        set(&mut self.start_times, i, secs(r.dispatched_us.unwrap_or(r.intended_us)));
        set(&mut self.generated_texts, i, times.and(r.generated_text.clone()).unwrap_or_default());
        set(&mut self.errors, i, r.error_entry());
    }
}

fn set<T>(column: &mut [T], i: usize, value: T) {
    if let Some(slot) = column.get_mut(i) {
        *slot = value;
    }
}

/// `itls`: a completed request's token-event gaps, `[]` for every other.
fn itls_of(r: &RequestRecord) -> &[u32] {
    match r.outcome == Outcome::Completed && r.first_token_us.is_some() {
        true => &r.token_events.gaps_us,
        false => &[],
    }
}

/// vLLM's per-request `latency` of a record: dispatched → the last event carrying generated
/// content (vLLM stops the clock at the last token chunk, not at the usage chunk or
/// `[DONE]`); `done` when there was no token event (a whole body).
pub fn vllm_latency_us(r: &RequestRecord) -> Option<u64> {
    Some(r.last_token_us.or(r.done_us)?.saturating_sub(r.dispatched_us?))
}

fn insert_ours(o: &mut Map<String, Value>, info: &RunInfo, m: &RunMetrics, pooling: bool) {
    // A pooling result writes its input throughput last (`crate::sections::pooling`).
    if !pooling {
        o.insert("input_throughput".into(), rate_json(m.duration_s, m.input_throughput));
    }
    o.insert("sent".into(), Value::from(m.sent));
    o.insert("never_sent".into(), Value::from(m.never_sent));
    // Wall-clock time of the run's monotonic origin (µs since the Unix epoch): record times are
    // offsets from it, so records of different processes (shards, the simulator's ground truth)
    // can be put on one time line.
    o.insert(
        "run_origin_unix_us".into(),
        Value::from((info.origin_wall.unix_timestamp_nanos() / 1000).clamp(0, i128::from(i64::MAX)) as i64),
    );
    o.insert("cancelled".into(), Value::from(m.cancelled));
    let mut kinds = Map::new();
    for &(k, n) in m.failures_by_kind.iter().filter(|(_, n)| *n > 0) {
        kinds.insert(k.as_str().into(), Value::from(n));
    }
    if m.failures_unclassified > 0 {
        kinds.insert("unclassified".into(), Value::from(m.failures_unclassified));
    }
    o.insert("error_kinds".into(), Value::Object(kinds));
    o.insert(
        "server_total_input_tokens".into(),
        if m.server_input_tokens_reported > 0 {
            Value::from(m.server_total_input_tokens)
        } else {
            Value::Null
        },
    );
    o.insert("server_input_tokens_reported".into(), Value::from(m.server_input_tokens_reported));
    // `null` when no request reported cached tokens: unknown, not "no prefix-cache hits".
    o.insert("cached_input_tokens".into(), m.cached_input_tokens.map_or(Value::Null, Value::from));
    let s = m.output_token_source;
    o.insert(
        "output_token_source".into(),
        json!({"usage": s.usage, "retokenized": s.retokenized, "events": s.events}),
    );
    o.insert(
        "token_accounting".into(),
        crate::sections::token_accounting::json(&m.token_accounting, m.completed),
    );
    crate::sections::output_split::json(o, &m.output_split);
    o.insert("good_requests".into(), json!(m.good_requests));
    o.insert(
        "percentiles".into(),
        Value::Array(m.config.percentiles.iter().map(|&p| Value::from(p)).collect()),
    );
    for (name, s) in [
        ("response_ttft", &m.response_ttft),
        ("response_e2el", &m.response_e2el),
        ("queue_time", &m.queue_time),
        ("itl_token_view", &m.itl_token_view),
    ] {
        insert_stats(o, name, s);
    }
    // The client's own load controls, only when the run used them (docs/metrics.md).
    if let Some(s) = &m.prefill_wait {
        insert_stats(o, "prefill_wait", s);
    }
    if let Some(d) = &m.designed_cancellation {
        o.insert("cancelled_by_design".into(), Value::from(d.cancelled));
        o.insert(
            "request_cancellation".into(),
            json!({"selected": d.selected, "cancelled": d.cancelled, "completed": d.completed, "failed": d.failed}),
        );
    }
    if let Some(t) = &m.session_trees {
        o.insert("session_trees".into(), crate::sections::session_trees::json(t, &m.config.percentiles));
    }
    let client_health = serde_json::to_value(ClientHealthJson::of(&info.client_health));
    o.insert("client_health".into(), client_health.unwrap_or(Value::Null));
}

/// `client_health` as a run writes it (docs/metrics.md, "Client health"): latencies in ms,
/// `null` for a figure without data; `resent_requests` and `pooling_disabled` only when known
/// (a run knows them; an older result or a merge may not). The reader's
/// [`crate::document::ClientHealthDoc`] is another type on purpose: it reads older files as
/// lenient `Option<f64>`s and skips what is absent, where this writes integers as integers and
/// `null` for a figure without data.
#[derive(Debug, Serialize)]
struct ClientHealthJson {
    dispatch_lateness_p50_ms: Option<f64>,
    dispatch_lateness_p99_ms: Option<f64>,
    hiccup_p99_ms: Option<f64>,
    client_cpu_percent: Option<f64>,
    available_cores: Option<f64>,
    peak_rss_bytes: Option<u64>,
    client_cpu_seconds: Option<f64>,
    connections_opened: Option<u64>,
    stale_connections: Option<u64>,
    warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resent_requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pooling_disabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    receive_timestamps: Option<ReceiveTimesJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_slice: Option<TimeSliceJson>,
}

/// `client_health.time_slice` (docs/metrics.md, "Receive timestamps"): the custom slice in ms,
/// `null` for the kernel's default, and one line saying which and why.
#[derive(Debug, Serialize)]
struct TimeSliceJson {
    short_ms: Option<f64>,
    detail: String,
}

/// `client_health.receive_timestamps` (docs/metrics.md, "Receive timestamps"): lags in ms.
#[derive(Debug, Serialize)]
struct ReceiveTimesJson {
    source: String,
    detail: String,
    kernel_stamped_reads: u64,
    unstamped_reads: u64,
    clock_anomalies: u64,
    read_lag_p50_ms: Option<f64>,
    read_lag_p99_ms: Option<f64>,
    read_lag_max_ms: Option<f64>,
}

impl ReceiveTimesJson {
    fn of(r: &crate::info::ReceiveTimesHealth) -> ReceiveTimesJson {
        let ms = |us: Option<f64>| us.map(|v| v / 1000.0);
        ReceiveTimesJson {
            source: r.source.clone(),
            detail: r.detail.clone(),
            kernel_stamped_reads: r.kernel_stamped_reads,
            unstamped_reads: r.unstamped_reads,
            clock_anomalies: r.clock_anomalies,
            read_lag_p50_ms: ms(r.read_lag_p50_us),
            read_lag_p99_ms: ms(r.read_lag_p99_us),
            read_lag_max_ms: ms(r.read_lag_max_us),
        }
    }
}

impl ClientHealthJson {
    fn of(h: &ClientHealth) -> ClientHealthJson {
        let ms = |us: Option<f64>| us.map(|v| v / 1000.0);
        ClientHealthJson {
            dispatch_lateness_p50_ms: ms(h.dispatch_lateness_p50_us),
            dispatch_lateness_p99_ms: ms(h.dispatch_lateness_p99_us),
            hiccup_p99_ms: ms(h.hiccup_p99_us),
            client_cpu_percent: h.client_cpu_percent,
            available_cores: h.available_cores,
            peak_rss_bytes: h.peak_rss_bytes,
            client_cpu_seconds: h.client_cpu_seconds,
            connections_opened: h.connections_opened,
            stale_connections: h.stale_connections,
            warnings: h.warnings(),
            resent_requests: h.resent_requests,
            pooling_disabled: h.pooling_disabled,
            receive_timestamps: h.receive_timestamps.as_ref().map(ReceiveTimesJson::of),
            time_slice: h.time_slice.as_ref().map(|t| TimeSliceJson {
                short_ms: t.short_us.map(|us| us as f64 / 1000.0),
                detail: t.detail.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fmt::percentile_word;

    #[test]
    fn percentile_words_match_vllm() {
        assert_eq!(percentile_word(99.0), "99");
        assert_eq!(percentile_word(99.9), "99.9");
        assert_eq!(percentile_word(50.0), "50");
        assert_eq!(percentile_word(0.5), "0.5");
        // Pins Python's exponent form below 1e-4 (`p0.00001_ttft_ms` was written for vLLM's
        // `p1e-05_ttft_ms`).
        assert_eq!(percentile_word(1e-5), "1e-05");
        assert_eq!(percentile_word(1.5e-5), "1.5e-05");
        assert_eq!(percentile_word(0.0001), "0.0001");
        assert_eq!(percentile_word(33.333333333333336), "33.333333333333336");
    }

    #[test]
    fn inf_and_int_rendering() {
        assert_eq!(number_or_inf(f64::INFINITY), Value::from("inf"));
        assert_eq!(number_or_inf(2.5), Value::from(2.5));
        assert_eq!(int_or_float(5.0), Value::from(5));
        assert_eq!(int_or_float(5.5), Value::from(5.5));
    }
}
