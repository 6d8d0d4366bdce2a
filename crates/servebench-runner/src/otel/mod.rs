//! OpenTelemetry export of a finished run (`--otlp`, `--otlp-endpoint`; docs/metrics.md,
//! "OpenTelemetry export"): one span per request and the run's GenAI client metrics, sent to an
//! OTLP/HTTP (protobuf) collector **after** the run, from the records.
//!
//! Nothing here runs while requests are in flight: the spans and metric points are built from
//! the finished records (each span carries the request's own instants, mapped from the run's
//! monotonic clock to the wall clock through the run's anchor), so the client's I/O threads pay
//! nothing for the feature, used or not. The export is bounded by a timeout per signal and its
//! failure is a coded warning (SB165), never a lost result: the result files are written first.
//!
//! `config` (the validated settings and the scope of one export) is always built; the export
//! itself (`spans`, `metrics`, `send`, `http`) only with the `otel` cargo feature.

pub mod config;
#[cfg(feature = "otel")]
mod http;
#[cfg(feature = "otel")]
mod metrics;
pub mod run_export;
#[cfg(feature = "otel")]
mod send;
#[cfg(feature = "otel")]
mod spans;

pub use config::{check_endpoint, operation_name, server_of, ExportScope, OtlpConfig, DEFAULT_OTLP_ENDPOINT};
pub use run_export::{export_results, ExportLine};
#[cfg(feature = "otel")]
pub use send::{export, ExportReport};
