//! An OTLP/HTTP receiver on 127.0.0.1: accepts `POST /v1/traces` and `POST /v1/metrics` in
//! protobuf (`application/x-protobuf`), decodes them with `opentelemetry-proto` and keeps what
//! it received, so tests can check what servebench exported.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::sync::{Arc, Mutex};

pub use opentelemetry_proto::tonic as proto;

#[derive(Debug, Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
    /// Every request's headers, in arrival order (both signals).
    headers: Vec<HeaderMap>,
}

/// A running receiver: its base URL (the `--otlp-endpoint`) and what it received.
#[derive(Debug, Clone)]
pub struct OtlpReceiver {
    pub base_url: String,
    got: Arc<Mutex<Received>>,
}

impl OtlpReceiver {
    /// Starts a receiver in the background ([`crate::axum_server::serve_in_background`]).
    pub fn start() -> OtlpReceiver {
        let got = Arc::new(Mutex::new(Received::default()));
        let app = axum::Router::new()
            .route("/v1/traces", post(traces))
            .route("/v1/metrics", post(metrics))
            .with_state(got.clone());
        OtlpReceiver { base_url: crate::axum_server::serve_in_background(app), got }
    }

    /// Every span received, with the resource attributes of its request.
    pub fn spans(&self) -> Vec<(Vec<KeyValue>, Span)> {
        let got = self.got.lock().unwrap();
        let mut out = Vec::new();
        for req in &got.traces {
            for rs in &req.resource_spans {
                let res = rs.resource.as_ref().map(|r| r.attributes.clone()).unwrap_or_default();
                for ss in &rs.scope_spans {
                    out.extend(ss.spans.iter().map(|s| (res.clone(), s.clone())));
                }
            }
        }
        out
    }

    /// Every metric received (all requests, all scopes).
    pub fn metrics(&self) -> Vec<Metric> {
        let got = self.got.lock().unwrap();
        let scopes = got.metrics.iter().flat_map(|r| &r.resource_metrics).flat_map(|rm| &rm.scope_metrics);
        scopes.flat_map(|sm| sm.metrics.iter().cloned()).collect()
    }

    /// Number of OTLP requests received per signal: (traces, metrics).
    pub fn requests(&self) -> (usize, usize) {
        let got = self.got.lock().unwrap();
        (got.traces.len(), got.metrics.len())
    }

    /// The headers of every request received.
    pub fn headers(&self) -> Vec<HeaderMap> {
        self.got.lock().unwrap().headers.clone()
    }
}

/// The value of attribute `key` in `attrs`.
pub fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attrs.iter().find(|kv| kv.key == key)?.value.as_ref()?.value.as_ref()
}

/// The string attribute `key`.
pub fn attr_str<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attr(attrs, key)? {
        any_value::Value::StringValue(s) => Some(s),
        _ => None,
    }
}

/// The integer attribute `key`.
pub fn attr_i64(attrs: &[KeyValue], key: &str) -> Option<i64> {
    match attr(attrs, key)? {
        any_value::Value::IntValue(v) => Some(*v),
        _ => None,
    }
}

/// The floating-point attribute `key`.
pub fn attr_f64(attrs: &[KeyValue], key: &str) -> Option<f64> {
    match attr(attrs, key)? {
        any_value::Value::DoubleValue(v) => Some(*v),
        _ => None,
    }
}

/// A string [`AnyValue`] (for comparisons).
pub fn string_value(s: &str) -> AnyValue {
    AnyValue { value: Some(any_value::Value::StringValue(s.to_owned())) }
}

fn protobuf(body: Vec<u8>) -> (StatusCode, [(header::HeaderName, &'static str); 1], Vec<u8>) {
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/x-protobuf")], body)
}

async fn traces(
    State(got): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> impl axum::response::IntoResponse {
    let Ok(req) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "text/plain")], b"bad protobuf".to_vec());
    };
    let mut g = got.lock().unwrap();
    g.traces.push(req);
    g.headers.push(headers);
    protobuf(ExportTraceServiceResponse::default().encode_to_vec())
}

async fn metrics(
    State(got): State<Arc<Mutex<Received>>>,
    headers: HeaderMap,
    body: Bytes,
) -> impl axum::response::IntoResponse {
    let Ok(req) = ExportMetricsServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "text/plain")], b"bad protobuf".to_vec());
    };
    let mut g = got.lock().unwrap();
    g.metrics.push(req);
    g.headers.push(headers);
    protobuf(ExportMetricsServiceResponse::default().encode_to_vec())
}
