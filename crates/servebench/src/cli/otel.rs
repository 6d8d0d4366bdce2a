//! Flags of the OpenTelemetry export (`--otlp`, `--otlp-endpoint`; docs/metrics.md,
//! "OpenTelemetry export").

use clap::Args;

/// OpenTelemetry export flags of a run (flattened into `RunArgs`).
#[derive(Debug, Clone, Args)]
pub struct OtelArgs {
    /// After the run, export one span per request and the run's GenAI client metrics to an
    /// OpenTelemetry collector over OTLP/HTTP (protobuf): to OTEL_EXPORTER_OTLP_ENDPOINT when
    /// set, else http://localhost:4318. Headers come from OTEL_EXPORTER_OTLP_HEADERS (never
    /// written anywhere). Off by default.
    #[arg(long, help_heading = "OpenTelemetry")]
    pub otlp: bool,
    /// Base URL of the OTLP/HTTP collector (http://HOST:PORT; /v1/traces and /v1/metrics are
    /// added); implies --otlp and overrides OTEL_EXPORTER_OTLP_ENDPOINT.
    #[arg(long, value_name = "URL", help_heading = "OpenTelemetry")]
    pub otlp_endpoint: Option<String>,
    /// service.name of the exported spans and metrics.
    #[arg(long, value_name = "NAME", default_value = "servebench", help_heading = "OpenTelemetry")]
    pub otlp_service_name: String,
    /// Bound of each signal's export (traces, then metrics), retries included; past it the
    /// export stops with warning SB165 and the run's files stay as written.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, help_heading = "OpenTelemetry")]
    pub otlp_timeout_seconds: f64,
}
