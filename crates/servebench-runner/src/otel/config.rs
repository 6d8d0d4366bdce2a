//! The validated OTLP settings (`OtlpConfig`) and what one export covers (`ExportScope`).

use servebench_client::BackendKind;
use servebench_core::{BenchError, RequestRecord};
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
        endpoint: endpoint.to_owned(),
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

/// What one export covers: the records of one run (or one experiment point, or one shard) and
/// the names every span and metric point carries.
#[derive(Debug, Clone)]
pub struct ExportScope<'a> {
    /// Every request of the run, whatever its outcome: one span each.
    pub records: &'a [RequestRecord],
    /// Wall-clock time (µs since the Unix epoch) of the run's monotonic origin: record offsets
    /// are added to it (`RunClock::wall_anchor_unix_us`).
    pub wall_anchor_unix_us: u64,
    /// `gen_ai.request.model`: the model id of the result.
    pub model: String,
    /// `gen_ai.provider.name`: the `--backend` name.
    pub provider: String,
    /// `gen_ai.operation.name` ([`operation_name`]).
    pub operation: &'static str,
    /// `server.address` and `server.port` of the benchmarked server.
    pub server: Option<(String, u16)>,
    /// Run labels added to every span and metric point (`servebench.label`,
    /// `servebench.shard.index`, `servebench.experiment.point`, …).
    pub labels: Vec<(String, String)>,
}

/// `gen_ai.operation.name` of a backend: the GenAI names where one fits (`chat`,
/// `text_completion`, `embeddings`), else our own (`rerank`, `transcription`).
pub fn operation_name(kind: BackendKind) -> &'static str {
    use BackendKind as K;
    match kind {
        K::Completions => "text_completion",
        K::Chat | K::Responses => "chat",
        K::Embeddings
        | K::EmbeddingsChat
        | K::EmbeddingsClip
        | K::EmbeddingsVlm2Vec
        | K::Infinity
        | K::InfinityClip
        | K::Pooling => "embeddings",
        K::Rerank => "rerank",
        K::Audio => "transcription",
        // TGI, SGLang and llama.cpp `generate`/`completion` take a prompt; Anthropic is chat.
        K::Native(servebench_client::Dialect::Anthropic) => "chat",
        K::Native(_) => "text_completion",
    }
}

/// `server.address` and `server.port` of a base URL (the scheme's port when none is given).
pub fn server_of(base_url: &str) -> Option<(String, u16)> {
    let uri: http::Uri = base_url.parse().ok()?;
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
    Some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_must_be_http_with_a_host() {
        assert_eq!(
            check_endpoint("--otlp-endpoint", "http://127.0.0.1:4318/").unwrap(),
            "http://127.0.0.1:4318"
        );
        assert_eq!(check_endpoint("x", "http://collector/otlp").unwrap(), "http://collector/otlp");
        for bad in ["https://c:4318", "collector:4318", "ftp://c", "http://c:4318/?a=1", "not a url"] {
            let e = check_endpoint("--otlp-endpoint", bad).unwrap_err();
            assert_eq!(e.code().to_string(), "SB167", "{bad}");
        }
    }

    #[test]
    fn signal_urls_append_the_otlp_paths() {
        let c = OtlpConfig {
            endpoint: "http://c:4318/prefix".into(),
            service_name: "servebench".into(),
            timeout: Duration::from_secs(1),
        };
        assert_eq!(c.traces_url(), "http://c:4318/prefix/v1/traces");
        assert_eq!(c.metrics_url(), "http://c:4318/prefix/v1/metrics");
    }

    #[test]
    fn server_address_and_port_of_base_urls() {
        assert_eq!(server_of("http://127.0.0.1:8000"), Some(("127.0.0.1".into(), 8000)));
        assert_eq!(server_of("https://api.example.com"), Some(("api.example.com".into(), 443)));
        assert_eq!(server_of("http://[::1]:9"), Some(("::1".into(), 9)));
    }

    #[test]
    fn operation_names_follow_the_genai_values() {
        assert_eq!(operation_name(BackendKind::Chat), "chat");
        assert_eq!(operation_name(BackendKind::Completions), "text_completion");
        assert_eq!(operation_name(BackendKind::Pooling), "embeddings");
    }
}
