//! Sending a run to the collector: spans in batches, then the metrics, each signal bounded by
//! the configured timeout (all attempts included), over OTLP/HTTP protobuf.

use super::config::{ExportScope, OtlpConfig};
use super::http::OtlpHttp;
use super::{metrics, spans};
use opentelemetry::KeyValue;
use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::SpanExporter as _;
use opentelemetry_sdk::Resource;
use servebench_core::BenchError;
use std::time::Duration;
use tokio::time::Instant;

/// Spans per OTLP request (the SDK batch processor's default batch size).
const SPANS_PER_REQUEST: usize = 512;

/// What an export sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportReport {
    /// Spans the collector accepted (= the records of the scope).
    pub spans: u64,
}

/// The resource of every span and metric: `service.name`, `service.version`.
fn resource(cfg: &OtlpConfig) -> Resource {
    Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", cfg.service_name.clone()),
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("telemetry.sdk.name", "opentelemetry"),
            KeyValue::new("telemetry.sdk.language", "rust"),
        ])
        .build()
}

/// Exports the scope: every record as one span, then the run metrics. Must run on a Tokio
/// runtime (the HTTP client, `OtlpHttp`, is hyper's). Errors are SB165 (the caller warns; the result files
/// are already written).
pub async fn export(cfg: &OtlpConfig, scope: &ExportScope<'_>) -> Result<ExportReport, BenchError> {
    let failed = |detail: String| BenchError::OtlpExportFailed {
        endpoint: servebench_core::secret::redact_url(&cfg.endpoint),
        detail,
    };
    let resource = resource(cfg);
    let spans = send_spans(cfg, scope, &resource).await.map_err(failed)?;
    send_metrics(cfg, scope, resource).await.map_err(failed)?;
    Ok(ExportReport { spans })
}

async fn send_spans(cfg: &OtlpConfig, scope: &ExportScope<'_>, resource: &Resource) -> Result<u64, String> {
    let mut exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(OtlpHttp::new(cfg.timeout))
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(cfg.traces_url())
        .with_timeout(cfg.timeout)
        .build()
        .map_err(|e| format!("traces exporter: {e}"))?;
    exporter.set_resource(resource);
    let deadline = Instant::now() + cfg.timeout;
    let mut sent = 0u64;
    // Decoded a chunk at a time: a run's records are never all held as records at once.
    let mut records = scope.records.iter().peekable();
    while records.peek().is_some() {
        let chunk: Vec<_> = records.by_ref().take(SPANS_PER_REQUEST).collect();
        let batch =
            chunk.iter().map(|r| spans::span_of(r, scope, (rand::random(), rand::random()))).collect();
        let n = chunk.len() as u64;
        let res = tokio::time::timeout_at(deadline, exporter.export(batch)).await;
        let why = match res {
            Ok(Ok(())) => {
                sent += n;
                continue;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {}", secs(cfg.timeout)),
        };
        return Err(format!("traces: {why} ({sent} of {} spans sent)", scope.records.len()));
    }
    Ok(sent)
}

async fn send_metrics(cfg: &OtlpConfig, scope: &ExportScope<'_>, resource: Resource) -> Result<(), String> {
    let exporter = MetricExporter::builder()
        .with_http()
        .with_http_client(OtlpHttp::new(cfg.timeout))
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(cfg.metrics_url())
        .with_timeout(cfg.timeout)
        .build()
        .map_err(|e| format!("metrics exporter: {e}"))?;
    let rm = metrics::collect(scope, resource)?;
    match tokio::time::timeout(cfg.timeout, exporter.export(&rm)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("metrics: {e} (every span was sent)")),
        Err(_) => Err(format!("metrics: no answer within {} (every span was sent)", secs(cfg.timeout))),
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}
