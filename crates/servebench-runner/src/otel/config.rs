//! What one export covers (`ExportScope`) and the names it derives; the validated settings
//! (`OtlpConfig`) live in `config::otlp` (re-exported here).

pub use crate::config::otlp::{check_endpoint, OtlpConfig, DEFAULT_OTLP_ENDPOINT};
use servebench_client::BackendKind;
use servebench_core::{CompactRecords, RequestRecord};
use std::borrow::Cow;

/// What one export covers: the records of one run (or one experiment point, or one shard) and
/// the names every span and metric point carries.
#[derive(Debug, Clone)]
pub struct ExportScope<'a> {
    /// Every request of the run, whatever its outcome: one span each.
    pub records: ExportRecords<'a>,
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

/// The records an export covers: a run's compact records (decoded one at a time as they are
/// sent, never all at once) or records already decoded.
#[derive(Debug, Clone, Copy)]
pub enum ExportRecords<'a> {
    Compact(&'a CompactRecords),
    Slice(&'a [RequestRecord]),
}

impl<'a> ExportRecords<'a> {
    /// The number of records.
    pub fn len(&self) -> usize {
        match self {
            ExportRecords::Compact(c) => c.len(),
            ExportRecords::Slice(s) => s.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every record, in order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = Cow<'a, RequestRecord>> + 'a> {
        match *self {
            ExportRecords::Compact(c) => Box::new(c.iter().map(Cow::Owned)),
            ExportRecords::Slice(s) => Box::new(s.iter().map(Cow::Borrowed)),
        }
    }
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
    use std::time::Duration;

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
