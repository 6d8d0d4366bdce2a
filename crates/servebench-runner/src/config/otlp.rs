//! The validated OTLP export settings (`--otlp`; the export itself is `crate::otel`).

use servebench_core::BenchError;
use std::time::Duration;

/// The collector's OTLP/HTTP address when neither `--otlp-endpoint` nor
/// `OTEL_EXPORTER_OTLP_ENDPOINT` names one (the OpenTelemetry default).
pub const DEFAULT_OTLP_ENDPOINT: &str = "http://localhost:4318";

/// Where and how to export. No secret here: OTLP headers (`OTEL_EXPORTER_OTLP_HEADERS`) are
/// read by the exporter itself and never stored, printed or written.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpConfig {
    /// Base URL of the collector (`http://host:port[/prefix]`, no trailing `/`); the signal
    /// paths `/v1/traces` and `/v1/metrics` are added to it.
    pub endpoint: String,
    /// `service.name` of the resource (`--otlp-service-name`).
    pub service_name: String,
    /// Bound of each signal's export (traces, then metrics), all attempts included.
    pub timeout: Duration,
}

impl OtlpConfig {
    /// The traces URL: `{endpoint}/v1/traces`.
    pub fn traces_url(&self) -> String {
        format!("{}/v1/traces", self.endpoint)
    }

    /// The metrics URL: `{endpoint}/v1/metrics`.
    pub fn metrics_url(&self) -> String {
        format!("{}/v1/metrics", self.endpoint)
    }
}

/// Checks an OTLP endpoint (`source_name`: the flag or variable it came from) and returns it
/// without a trailing `/`. Only `http://` URLs with a host are accepted (SB167).
pub fn check_endpoint(source_name: &str, endpoint: &str) -> Result<String, BenchError> {
    let bad = |problem: &str| BenchError::OtlpEndpointInvalid {
        source_name: source_name.to_owned(),
        endpoint: servebench_core::secret::redact_url(endpoint),
        problem: problem.to_owned(),
    };
    let uri: http::Uri = endpoint.trim().parse().map_err(|_| bad("is not a URL"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => return Err(bad("uses https, and the OTLP export speaks plain HTTP only")),
        _ => return Err(bad("is not an http:// URL")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("has no host"));
    }
    if uri.query().is_some() {
        return Err(bad("has a query string"));
    }
    Ok(endpoint.trim().trim_end_matches('/').to_owned())
}
