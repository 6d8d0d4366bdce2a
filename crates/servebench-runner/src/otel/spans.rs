//! One span per request, from its record (docs/metrics.md, "OpenTelemetry export"): GenAI
//! client span attributes, our latencies, the outcome, and the request's instants as events.

use super::config::ExportScope;
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use servebench_core::metrics::RequestTimes;
use servebench_core::{CancelReason, Outcome, RequestRecord};
use std::time::{Duration, SystemTime};

/// The instrumentation scope of every span and metric (`servebench`, its version).
pub(super) fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("servebench").with_version(env!("CARGO_PKG_VERSION")).build()
}

/// The wall-clock instant of a record offset (µs from the run origin).
pub(super) fn wall(scope: &ExportScope<'_>, offset_us: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_micros(scope.wall_anchor_unix_us.saturating_add(offset_us))
}

/// Milliseconds of a µs duration.
fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The span of one request. Start: `dispatched` (`intended` for a request never sent); end:
/// `done`, else the last instant known of it, else the start. Trace and span ids are random:
/// each request is the root of its own trace (no parent, no sampling).
pub(super) fn span_of(r: &RequestRecord, s: &ExportScope<'_>, ids: (u128, u64)) -> SpanData {
    let t = RequestTimes::of(r);
    let start_us = r.dispatched_us.unwrap_or(r.intended_us);
    let end_us = r.done_us.or(t.last_known_us).unwrap_or(start_us).max(start_us);
    let ctx = SpanContext::new(
        TraceId::from(ids.0.max(1)),
        SpanId::from(ids.1.max(1)),
        TraceFlags::SAMPLED,
        false,
        TraceState::default(),
    );
    SpanData {
        span_context: ctx,
        parent_span_id: SpanId::INVALID,
        parent_span_is_remote: false,
        span_kind: SpanKind::Client,
        name: format!("{} {}", s.operation, s.model).into(),
        start_time: wall(s, start_us),
        end_time: wall(s, end_us),
        attributes: attributes(r, s, &t),
        dropped_attributes_count: 0,
        events: events(r, s),
        links: SpanLinks::default(),
        status: status(r),
        instrumentation_scope: scope(),
    }
}

/// The labels and GenAI names every span and metric point carries.
pub(super) fn common_attributes(s: &ExportScope<'_>) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("gen_ai.operation.name", s.operation),
        KeyValue::new("gen_ai.provider.name", s.provider.clone()),
        KeyValue::new("gen_ai.request.model", s.model.clone()),
    ];
    if let Some((host, port)) = &s.server {
        a.push(KeyValue::new("server.address", host.clone()));
        a.push(KeyValue::new("server.port", i64::from(*port)));
    }
    a.extend(s.labels.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())));
    a
}

/// `error.type` of a request that did not complete: the failure's kind, or `cancelled`.
pub(super) fn error_type(r: &RequestRecord) -> Option<&'static str> {
    match r.outcome {
        Outcome::Completed => None,
        Outcome::Failed => Some(r.error.as_ref().map_or("_OTHER", |e| e.kind.as_str())),
        Outcome::Cancelled => Some("cancelled"),
    }
}

/// The stable snake_case name of the cancel reason (as in the records).
pub(super) fn cancel_reason(r: &RequestRecord) -> Option<&'static str> {
    r.cancelled_by.map(CancelReason::name)
}

/// `gen_ai.usage.input_tokens`: the server's `usage.prompt_tokens` when it reported it, else
/// the client's count (the record's `prompt_tokens`).
pub(super) fn input_tokens(r: &RequestRecord) -> u32 {
    r.server_prompt_tokens.unwrap_or(r.prompt_tokens)
}

pub(super) fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Completed => "completed",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "cancelled",
    }
}

fn attributes(r: &RequestRecord, s: &ExportScope<'_>, t: &RequestTimes) -> Vec<KeyValue> {
    let mut a = common_attributes(s);
    a.push(KeyValue::new("servebench.request.index", r.index as i64));
    a.push(KeyValue::new("servebench.request.id", r.request_id.clone()));
    a.push(KeyValue::new("servebench.outcome", outcome_name(r.outcome)));
    a.push(KeyValue::new("servebench.sent", r.dispatched_us.is_some()));
    if let Some(id) = &r.server_request_id {
        a.push(KeyValue::new("gen_ai.response.id", id.clone()));
    }
    if let Some(f) = &r.finish_reason {
        let v = Value::Array(Array::String(vec![StringValue::from(f.clone())]));
        a.push(KeyValue::new("gen_ai.response.finish_reasons", v));
    }
    if r.outcome == Outcome::Completed {
        a.push(KeyValue::new("gen_ai.usage.input_tokens", i64::from(input_tokens(r))));
        a.push(KeyValue::new("gen_ai.usage.output_tokens", i64::from(t.output_tokens)));
        if let Some(c) = r.cached_prompt_tokens {
            a.push(KeyValue::new("gen_ai.usage.cache_read.input_tokens", i64::from(c)));
        }
    }
    if let Some(e) = error_type(r) {
        a.push(KeyValue::new("error.type", e));
    }
    if let Some(c) = cancel_reason(r) {
        a.push(KeyValue::new("servebench.cancel_reason", c));
    }
    let ids = [("servebench.stage", r.stage), ("servebench.turn", r.turn)];
    for (key, v) in ids.into_iter().filter_map(|(k, v)| Some((k, v?))) {
        a.push(KeyValue::new(key, i64::from(v)));
    }
    if let Some(c) = r.conversation {
        a.push(KeyValue::new("servebench.conversation", c as i64));
    }
    if let Some(code) = r.http_status {
        a.push(KeyValue::new("http.response.status_code", i64::from(code)));
    }
    latencies(r, t, &mut a);
    a
}

/// Our per-request latencies (docs/metrics.md, service view): TTFT, E2EL, TPOT, ITL (the event
/// gaps), client queue time; and `gen_ai.response.time_to_first_chunk` (TTFT in seconds).
fn latencies(r: &RequestRecord, t: &RequestTimes, a: &mut Vec<KeyValue>) {
    if let Some(v) = t.ttft_us {
        a.push(KeyValue::new("gen_ai.response.time_to_first_chunk", v as f64 / 1e6));
        a.push(KeyValue::new("servebench.ttft_ms", ms(v)));
    }
    if let Some(v) = t.e2el_us {
        a.push(KeyValue::new("servebench.e2el_ms", ms(v)));
    }
    if let Some(v) = t.tpot_us {
        a.push(KeyValue::new("servebench.tpot_ms", v / 1000.0));
    }
    if let Some(v) = t.queue_us {
        a.push(KeyValue::new("servebench.queue_ms", ms(v)));
    }
    if !r.token_events.gaps_us.is_empty() {
        let itl: Vec<f64> = r.token_events.gaps_us.iter().map(|&g| f64::from(g) / 1000.0).collect();
        a.push(KeyValue::new("servebench.itl_ms", Value::Array(Array::F64(itl))));
    }
}

/// The request's instants as span events: response headers, first token, last token.
fn events(r: &RequestRecord, s: &ExportScope<'_>) -> SpanEvents {
    let marks = [
        ("servebench.response_headers", r.headers_us),
        ("servebench.first_token", r.first_token_us),
        ("servebench.last_token", r.last_token_us),
    ];
    let events = marks
        .into_iter()
        .filter_map(|(name, at)| Some(opentelemetry::trace::Event::new(name, wall(s, at?), Vec::new(), 0)))
        .collect();
    let mut out = SpanEvents::default();
    out.events = events;
    out
}

/// `Error` with the failure (or cancel reason) for a request that did not complete, else unset.
fn status(r: &RequestRecord) -> Status {
    match r.outcome {
        Outcome::Completed => Status::Unset,
        Outcome::Failed | Outcome::Cancelled => Status::error(r.error_entry()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::ErrorKind;
    use servebench_testkit::records::RecordBuilder;

    fn scope_of(records: &[RequestRecord]) -> ExportScope<'_> {
        ExportScope {
            records: crate::otel::config::ExportRecords::Slice(records),
            wall_anchor_unix_us: 1_700_000_000_000_000,
            model: "m".into(),
            provider: "vllm".into(),
            operation: "text_completion",
            server: Some(("127.0.0.1".into(), 8000)),
            labels: vec![("servebench.label".into(), "l".into())],
        }
    }

    fn attr<'a>(s: &'a SpanData, key: &str) -> Option<&'a Value> {
        s.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
    }

    #[test]
    fn completed_span_has_the_record_instants_and_counts() {
        let r = RecordBuilder::new(0)
            .intended_at(100)
            .sent_at(1_000)
            .stream(51_000, &[10_000, 12_000])
            .done_at(74_000)
            .usage(3)
            .prompt_usage(12, Some(4))
            .completed();
        let recs = [r.clone()];
        let s = scope_of(&recs);
        let span = span_of(&r, &s, (7, 9));
        assert_eq!(span.start_time, wall(&s, 1_000));
        assert_eq!(span.end_time, wall(&s, 74_000));
        assert_eq!(span.name, "text_completion m");
        // TTFT = first_token - dispatched = 50 ms; TPOT = 22 ms / 2; E2EL = 73 ms.
        assert_eq!(attr(&span, "servebench.ttft_ms"), Some(&Value::F64(50.0)));
        assert_eq!(attr(&span, "gen_ai.response.time_to_first_chunk"), Some(&Value::F64(0.05)));
        assert_eq!(attr(&span, "servebench.tpot_ms"), Some(&Value::F64(11.0)));
        assert_eq!(attr(&span, "servebench.e2el_ms"), Some(&Value::F64(73.0)));
        assert_eq!(attr(&span, "servebench.queue_ms"), Some(&Value::F64(0.9)));
        assert_eq!(attr(&span, "servebench.itl_ms"), Some(&Value::Array(Array::F64(vec![10.0, 12.0]))));
        assert_eq!(attr(&span, "gen_ai.usage.output_tokens"), Some(&Value::I64(3)));
        assert_eq!(attr(&span, "gen_ai.usage.input_tokens"), Some(&Value::I64(12)));
        assert_eq!(attr(&span, "gen_ai.usage.cache_read.input_tokens"), Some(&Value::I64(4)));
        assert_eq!(attr(&span, "server.port"), Some(&Value::I64(8000)));
        assert!(attr(&span, "error.type").is_none());
        let at: Vec<_> = span.events.events.iter().map(|e| (e.name.to_string(), e.timestamp)).collect();
        assert_eq!(
            at,
            vec![
                ("servebench.response_headers".to_owned(), wall(&s, 50_000)),
                ("servebench.first_token".to_owned(), wall(&s, 51_000)),
                ("servebench.last_token".to_owned(), wall(&s, 73_000)),
            ]
        );
    }

    #[test]
    fn failed_and_cancelled_spans_carry_error_type_and_reason() {
        let f = RecordBuilder::new(1).sent_at(10).done_at(20).failed(ErrorKind::HttpStatus, "503");
        let c = RecordBuilder::new(2)
            .intended_at(500)
            .with(|r| r.cancelled_by = Some(CancelReason::DurationEnd))
            .cancelled();
        let recs = [f.clone(), c.clone()];
        let s = scope_of(&recs);
        let fs = span_of(&f, &s, (1, 1));
        assert_eq!(attr(&fs, "error.type"), Some(&Value::from("http_status")));
        assert!(matches!(fs.status, Status::Error { .. }));
        assert!(attr(&fs, "gen_ai.usage.output_tokens").is_none());
        let cs = span_of(&c, &s, (1, 2));
        assert_eq!(attr(&cs, "error.type"), Some(&Value::from("cancelled")));
        assert_eq!(attr(&cs, "servebench.cancel_reason"), Some(&Value::from("duration_end")));
        assert_eq!(attr(&cs, "servebench.sent"), Some(&Value::Bool(false)));
        // A request never sent: a zero-length span at its intended time.
        assert_eq!(cs.start_time, wall(&s, 500));
        assert_eq!(cs.end_time, cs.start_time);
    }
}
