//! API dialects: which endpoint, which request body, which headers.
//!
//! Bodies are laid out as `vllm bench serve` sends them, then sampling parameters and
//! `--extra-body` are laid on top (extra-body wins over everything, including `stream`).
//! The field list is resolved once per run ([`BodyTemplate`]); per request only the prompt and
//! the output length are written, straight into the output buffer (the prompt is escaped once,
//! never copied into an intermediate JSON tree).

use std::fmt;
use std::str::FromStr;

use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{Map, Value};
use servebench_core::config::Secret;
use servebench_core::{BenchError, Prompt, Result};

/// The API dialect of the generation requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BackendKind {
    /// `/v1/completions` (`--backend vllm` or `openai`).
    #[default]
    Completions,
    /// `/v1/chat/completions` (`--backend openai-chat`).
    Chat,
    /// `/v1/responses`, event-typed SSE (`--backend openai-responses`; `body_ext.rs`).
    Responses,
    /// `/v1/embeddings` with `input` (`--backend openai-embeddings`; non-streaming).
    Embeddings,
    /// `/v1/embeddings` with chat `messages` (`--backend openai-embeddings-chat`).
    EmbeddingsChat,
    /// `/v1/embeddings`, CLIP-style chat `messages`: an image request sends an empty text part
    /// (`--backend openai-embeddings-clip`; `body_embed.rs`).
    EmbeddingsClip,
    /// `/v1/embeddings`, VLM2Vec chat `messages`: images first, vLLM's "Represent the given
    /// image" text (`--backend openai-embeddings-vlm2vec`; `body_embed.rs`).
    EmbeddingsVlm2Vec,
    /// `/v1/embeddings` of an Infinity server: `input` text (`--backend infinity-embeddings`).
    Infinity,
    /// `/v1/embeddings` of an Infinity server: an image request sends its URL as `input` with
    /// `modality` (`--backend infinity-embeddings-clip`).
    InfinityClip,
    /// `/pooling` (`--backend vllm-pooling`; non-streaming).
    Pooling,
    /// `/v1/rerank` with `query` and `documents` (`--backend vllm-rerank`; non-streaming).
    Rerank,
    /// `/v1/audio/transcriptions`, a multipart/form-data upload of the request's audio,
    /// streamed (`--backend openai-audio`; `body_audio.rs`).
    Audio,
    /// A native server dialect: `tgi`, `sglang`, `llama.cpp`, `anthropic` (`dialect/`).
    Native(crate::dialect::Dialect),
}

impl BackendKind {
    /// The default endpoint path.
    pub fn default_endpoint(self) -> &'static str {
        match self {
            BackendKind::Completions => "/v1/completions",
            BackendKind::Chat => "/v1/chat/completions",
            BackendKind::Responses => "/v1/responses",
            BackendKind::Embeddings
            | BackendKind::EmbeddingsChat
            | BackendKind::EmbeddingsClip
            | BackendKind::EmbeddingsVlm2Vec
            | BackendKind::Infinity
            | BackendKind::InfinityClip => "/v1/embeddings",
            BackendKind::Pooling => "/pooling",
            BackendKind::Audio => "/v1/audio/transcriptions",
            BackendKind::Rerank => "/v1/rerank",
            BackendKind::Native(d) => d.default_endpoint(),
        }
    }
}

impl FromStr for BackendKind {
    type Err = BenchError;
    fn from_str(s: &str) -> Result<Self> {
        if let Some(d) = crate::dialect::Dialect::from_name(s) {
            return Ok(BackendKind::Native(d));
        }
        match s {
            "vllm" | "openai" => Ok(BackendKind::Completions),
            "openai-chat" => Ok(BackendKind::Chat),
            "openai-responses" => Ok(BackendKind::Responses),
            "openai-embeddings" => Ok(BackendKind::Embeddings),
            "openai-embeddings-chat" => Ok(BackendKind::EmbeddingsChat),
            "openai-embeddings-clip" => Ok(BackendKind::EmbeddingsClip),
            "openai-embeddings-vlm2vec" => Ok(BackendKind::EmbeddingsVlm2Vec),
            "infinity-embeddings" => Ok(BackendKind::Infinity),
            "infinity-embeddings-clip" => Ok(BackendKind::InfinityClip),
            "vllm-pooling" => Ok(BackendKind::Pooling),
            "openai-audio" => Ok(BackendKind::Audio),
            "vllm-rerank" => Ok(BackendKind::Rerank),
            other => Err(BenchError::config(
                "--backend",
                format!("unknown backend '{other}'"),
                "use vllm, openai, openai-chat, openai-audio, openai-responses, openai-embeddings, \
                 openai-embeddings-chat, openai-embeddings-clip, openai-embeddings-vlm2vec, \
                 infinity-embeddings, infinity-embeddings-clip, vllm-pooling, vllm-rerank, tgi, \
                 sglang, llama.cpp or anthropic",
            )),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Completions => "openai",
            BackendKind::Chat => "openai-chat",
            BackendKind::Responses => "openai-responses",
            BackendKind::Embeddings => "openai-embeddings",
            BackendKind::EmbeddingsChat => "openai-embeddings-chat",
            BackendKind::EmbeddingsClip => "openai-embeddings-clip",
            BackendKind::EmbeddingsVlm2Vec => "openai-embeddings-vlm2vec",
            BackendKind::Infinity => "infinity-embeddings",
            BackendKind::InfinityClip => "infinity-embeddings-clip",
            BackendKind::Pooling => "vllm-pooling",
            BackendKind::Audio => "openai-audio",
            BackendKind::Rerank => "vllm-rerank",
            BackendKind::Native(d) => d.name(),
        })
    }
}

/// Everything that shapes generation requests, fixed for a run.
#[derive(Debug, Clone, Default)]
pub struct TargetConfig {
    pub backend: BackendKind,
    /// Endpoint path (with optional query); `None` = the backend's default.
    pub endpoint: Option<String>,
    /// The served model name sent as `model`.
    pub model: String,
    /// `Authorization: Bearer <key>` when set (`x-api-key` for Anthropic). A [`Secret`]: never
    /// printed by `Debug`, logged or recorded; the header built from it is marked sensitive.
    pub api_key: Option<Secret>,
    /// Extra headers (`--header K=V`), applied after the defaults. Values are [`Secret`]s (a
    /// header may carry a token); those of credential-like names are marked sensitive.
    pub headers: Vec<(String, Secret)>,
    /// `logprobs` (completions only; sent as `null` when unset).
    pub logprobs: Option<u32>,
    pub ignore_eos: bool,
    /// Sampling parameters (`--temperature`, `--top-p`, ...), laid over the base body.
    pub sampling: Map<String, Value>,
    /// `--extra-body`, laid over everything.
    pub extra_body: Map<String, Value>,
    /// `--random-batch-size`: prompts per request of the pooling backends (0 or 1 = one).
    pub batch_size: usize,
}

/// One body field: a fixed, pre-serialized value or a per-request slot.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    Fixed(String),
    Prompt,
    Messages,
    MaxTokens,
    /// A text-only prompt (native dialects whose prompt field takes no token ids).
    TextPrompt,
    /// An object around the output length: `before`, the number, `after` (`parameters`).
    MaxTokensIn(String, String),
}

/// The resolved field list of request bodies.
#[derive(Debug, Clone)]
pub struct BodyTemplate {
    /// `(pre-escaped JSON key, value)` in output order.
    fields: Vec<(String, Slot)>,
    fixed_len: usize,
    /// Responses and pooling bodies (`body_ext.rs`); `None` for completions and chat.
    ext: Option<Box<crate::body_ext::ExtBody>>,
}

fn json(v: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(v).map_err(|e| BenchError::config("--extra-body", e.to_string(), "pass valid JSON"))
}

impl BodyTemplate {
    /// Builds the field list for `backend` from `cfg`.
    pub fn new(backend: BackendKind, cfg: &TargetConfig) -> Result<Self> {
        if let Some(ext) = crate::body_ext::ExtBody::new(backend, cfg)? {
            return Ok(BodyTemplate { fields: Vec::new(), fixed_len: 0, ext: Some(Box::new(ext)) });
        }
        let mut fields: Vec<(String, Slot)> = Vec::new();
        let model = json(&cfg.model)?;
        let include_usage = r#"{"include_usage":true}"#.to_owned();
        match backend {
            BackendKind::Completions => {
                fields.push(("model".into(), Slot::Fixed(model)));
                fields.push(("prompt".into(), Slot::Prompt));
                fields.push(("max_tokens".into(), Slot::MaxTokens));
                fields.push(("stream".into(), Slot::Fixed("true".into())));
                fields.push(("stream_options".into(), Slot::Fixed(include_usage)));
                let lp = cfg.logprobs.map_or_else(|| "null".to_owned(), |n| n.to_string());
                fields.push(("logprobs".into(), Slot::Fixed(lp)));
            }
            BackendKind::Chat => {
                fields.push(("model".into(), Slot::Fixed(model)));
                fields.push(("messages".into(), Slot::Messages));
                fields.push(("max_completion_tokens".into(), Slot::MaxTokens));
                fields.push(("stream".into(), Slot::Fixed("true".into())));
                fields.push(("stream_options".into(), Slot::Fixed(include_usage)));
            }
            // Built by `body_ext::ExtBody` above.
            BackendKind::Responses
            | BackendKind::Embeddings
            | BackendKind::EmbeddingsChat
            | BackendKind::EmbeddingsClip
            | BackendKind::EmbeddingsVlm2Vec
            | BackendKind::Infinity
            | BackendKind::InfinityClip
            | BackendKind::Pooling
            | BackendKind::Rerank
            | BackendKind::Audio => {}
            // Native dialects place ignore_eos and sampling themselves (`dialect/`).
            BackendKind::Native(d) => fields = d.body_fields(cfg)?,
        }
        let native = matches!(backend, BackendKind::Native(_));
        if cfg.ignore_eos && !native {
            fields.push(("ignore_eos".into(), Slot::Fixed("true".into())));
        }
        for (k, v) in cfg.sampling.iter().filter(|_| !native).chain(cfg.extra_body.iter()) {
            let value = Slot::Fixed(json(v)?);
            match fields.iter_mut().find(|(key, _)| key == k) {
                Some(f) => f.1 = value,
                None => fields.push((k.clone(), value)),
            }
        }
        let mut out = Vec::with_capacity(fields.len());
        let mut fixed_len = 2;
        for (k, v) in fields {
            let key = json(&k)?;
            fixed_len += key.len() + 2 + if let Slot::Fixed(s) = &v { s.len() } else { 64 };
            out.push((key, v));
        }
        Ok(BodyTemplate { fields: out, fixed_len, ext: None })
    }

    /// Whether the body asks for a streamed response (`stream` not overridden to false).
    pub fn streams(&self) -> bool {
        if let Some(e) = &self.ext {
            return e.streams();
        }
        !self.fields.iter().any(|(k, v)| k == "\"stream\"" && matches!(v, Slot::Fixed(s) if s == "false"))
    }

    /// Serializes the body of one workload request (its prompt, multimodal parts, rerank
    /// payload and output length).
    pub fn build_spec(&self, spec: &servebench_core::RequestSpec) -> Result<Bytes> {
        match (&self.ext, &spec.messages) {
            (Some(e), _) => e.build(spec),
            (None, Some(m)) => self.build_with_messages(
                &m.json,
                spec.expected_output_tokens,
                MESSAGES_FIX,
                spec.overrides.as_deref(),
            ),
            (None, None) => {
                self.build_with_parts(&spec.prompt, spec.multimodal.as_deref(), spec.expected_output_tokens)
            }
        }
    }

    /// Serializes the body of one request.
    pub fn build(&self, prompt: &Prompt, max_tokens: u32) -> Result<Bytes> {
        self.build_with_parts(prompt, None, max_tokens)
    }

    /// Serializes the body of one request whose chat content also carries `parts`
    /// (pre-serialized multimodal content objects, written after the text part). Completions
    /// bodies have no place for them: a request with parts is refused there.
    pub fn build_with_parts(
        &self,
        prompt: &Prompt,
        parts: Option<&[std::sync::Arc<str>]>,
        max_tokens: u32,
    ) -> Result<Bytes> {
        let parts = parts.unwrap_or(&[]);
        if !parts.is_empty() && !self.fields.iter().any(|(_, s)| matches!(s, Slot::Messages)) {
            return Err(BenchError::config(
                "--backend",
                "multimodal requests need the chat API",
                "use --backend openai-chat",
            ));
        }
        let extra = parts.iter().map(|p| p.len() + 1).sum::<usize>()
            + match prompt {
                Prompt::Text(t) => t.len() + t.len() / 8 + 16,
                Prompt::TokenIds(ids) => ids.len() * 7,
                Prompt::Batch(texts) => texts.iter().map(|t| t.len() + t.len() / 8 + 16).sum(),
            };
        let mut out: Vec<u8> = Vec::with_capacity(self.fixed_len + extra);
        out.push(b'{');
        for (i, (key, slot)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(key.as_bytes());
            out.push(b':');
            match slot {
                Slot::Fixed(s) => out.extend_from_slice(s.as_bytes()),
                Slot::MaxTokens => out.extend_from_slice(max_tokens.to_string().as_bytes()),
                Slot::Prompt => write_prompt(&mut out, prompt)?,
                Slot::TextPrompt => match prompt {
                    Prompt::Text(t) => write_json(&mut out, &**t)?,
                    _ => {
                        return Err(BenchError::config(
                            "--backend",
                            "this backend takes one text prompt (no token ids or batches)",
                            "use --backend llama.cpp or openai for token-id prompts",
                        ))
                    }
                },
                Slot::MaxTokensIn(before, after) => {
                    out.extend_from_slice(before.as_bytes());
                    out.extend_from_slice(max_tokens.to_string().as_bytes());
                    out.extend_from_slice(after.as_bytes());
                }
                Slot::Messages => {
                    let Prompt::Text(text) = prompt else {
                        return Err(BenchError::config(
                            "--backend",
                            "the chat backend cannot send token-id prompts",
                            "use --backend openai (completions) for token-id prompts",
                        ));
                    };
                    out.extend_from_slice(br#"[{"role":"user","content":[{"type":"text","text":"#);
                    write_json(&mut out, &**text)?;
                    out.push(b'}');
                    for part in parts {
                        out.push(b',');
                        out.extend_from_slice(part.as_bytes());
                    }
                    out.extend_from_slice(b"]}]");
                }
            }
        }
        out.push(b'}');
        Ok(Bytes::from(out))
    }
}

impl BodyTemplate {
    /// Serializes a chat body whose `messages` is `messages_json`, a pre-serialized JSON array
    /// (multi-turn history). Refused for completions bodies, which have no `messages`.
    pub fn build_messages(&self, messages_json: &str, max_tokens: u32) -> Result<Bytes> {
        self.build_with_messages(
            messages_json,
            max_tokens,
            ("--multi-turn", "multi-turn conversations"),
            None,
        )
    }

    /// A body whose `messages` is `messages_json`; `why` (flag, what) names the cause when the
    /// body has no `messages` field. `overrides` replace the fields of their names and are
    /// written last (vLLM's per-request overrides win over `--extra-body`).
    fn build_with_messages(
        &self,
        messages_json: &str,
        max_tokens: u32,
        why: (&str, &str),
        overrides: Option<&servebench_core::BodyOverrides>,
    ) -> Result<Bytes> {
        let (flag, what) = why;
        if !self.fields.iter().any(|(_, s)| matches!(s, Slot::Messages)) {
            return Err(BenchError::config(
                flag,
                format!("{what} need the chat API"),
                "use --backend openai-chat",
            ));
        }
        let replaced: Vec<String> = overrides
            .map(|o| o.keys.iter().map(json).collect::<Result<_>>())
            .transpose()?
            .unwrap_or_default();
        let extra = overrides.map_or(0, |o| o.json.len() + 1);
        let mut out: Vec<u8> = Vec::with_capacity(self.fixed_len + messages_json.len() + extra);
        out.push(b'{');
        let mut first = true;
        for (key, slot) in self.fields.iter().filter(|(k, _)| !replaced.contains(k)) {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(key.as_bytes());
            out.push(b':');
            match slot {
                Slot::Fixed(s) => out.extend_from_slice(s.as_bytes()),
                Slot::MaxTokens => out.extend_from_slice(max_tokens.to_string().as_bytes()),
                Slot::Messages => out.extend_from_slice(messages_json.as_bytes()),
                _ => {
                    return Err(BenchError::config(
                        flag,
                        "this backend's body has no messages field",
                        "use --backend openai-chat",
                    ))
                }
            }
        }
        if let Some(o) = overrides.filter(|o| !o.json.is_empty()) {
            if !first {
                out.push(b',');
            }
            out.extend_from_slice(o.json.as_bytes());
        }
        out.push(b'}');
        Ok(Bytes::from(out))
    }
}

/// Why a request carries pre-built messages (named when the body cannot take them).
const MESSAGES_FIX: (&str, &str) = ("--enable-multimodal-chat", "pre-built chat messages");

pub(crate) fn write_json(out: &mut Vec<u8>, v: &(impl serde::Serialize + ?Sized)) -> Result<()> {
    serde_json::to_writer(out, v).map_err(|e| BenchError::protocol("request body", e))
}

pub(crate) fn write_prompt(out: &mut Vec<u8>, prompt: &Prompt) -> Result<()> {
    match prompt {
        Prompt::Text(t) => write_json(out, &**t),
        Prompt::TokenIds(ids) => write_json(out, &**ids),
        Prompt::Batch(texts) => write_json(out, &**texts),
    }
}

/// Builds the header template: `Content-Type`, `Authorization` (marked sensitive), user headers.
/// `x-request-id` is added per request.
pub fn build_headers(cfg: &TargetConfig) -> Result<HeaderMap> {
    let mut h = HeaderMap::new();
    let content_type =
        if cfg.backend == BackendKind::Audio { crate::body_audio::CONTENT_TYPE } else { "application/json" };
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Uncompressed answers (a `--header Accept-Encoding=...` below replaces it).
    h.insert(http::header::ACCEPT_ENCODING, crate::transport::coding::ACCEPT_IDENTITY);
    let anthropic = cfg.backend == BackendKind::Native(crate::dialect::Dialect::Anthropic);
    if anthropic {
        crate::dialect::anthropic_headers(&mut h, cfg.api_key.as_ref())?;
    } else if let Some(key) = cfg.api_key.as_ref().map(Secret::expose).filter(|k| !k.is_empty()) {
        let mut v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            BenchError::config(
                "OPENAI_API_KEY",
                "contains characters not allowed in a header",
                "check the key",
            )
        })?;
        v.set_sensitive(true);
        h.insert(AUTHORIZATION, v);
    }
    for (k, v) in &cfg.headers {
        let name = HeaderName::from_bytes(k.trim().as_bytes()).map_err(|_| {
            BenchError::config("--header", format!("invalid header name '{k}'"), "use --header Name=value")
        })?;
        // The value is not echoed: it may be a secret.
        let mut value = HeaderValue::from_str(v.expose().trim()).map_err(|_| {
            BenchError::config("--header", format!("invalid value for header '{k}'"), "use printable ASCII")
        })?;
        if name == AUTHORIZATION || name.as_str().contains("key") || name.as_str().contains("token") {
            value.set_sensitive(true);
        }
        h.insert(name, value);
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn cfg() -> TargetConfig {
        TargetConfig { model: "m".into(), ..TargetConfig::default() }
    }

    fn body(kind: BackendKind, cfg: &TargetConfig, p: Prompt) -> Value {
        let t = BodyTemplate::new(kind, cfg).unwrap();
        serde_json::from_slice(&t.build(&p, 7).unwrap()).unwrap()
    }

    #[test]
    fn names_and_endpoints() {
        assert_eq!("vllm".parse::<BackendKind>().unwrap(), BackendKind::Completions);
        assert_eq!("openai".parse::<BackendKind>().unwrap(), BackendKind::Completions);
        assert_eq!("openai-chat".parse::<BackendKind>().unwrap(), BackendKind::Chat);
        assert!("tgi-native".parse::<BackendKind>().is_err());
        assert_eq!(BackendKind::Chat.default_endpoint(), "/v1/chat/completions");
    }

    #[test]
    fn completions_body_like_vllm() {
        let b = body(BackendKind::Completions, &cfg(), Prompt::Text(Arc::from("hi \"x\"\n")));
        assert_eq!(
            b,
            serde_json::json!({"model":"m","prompt":"hi \"x\"\n","max_tokens":7,"stream":true,
                "stream_options":{"include_usage":true},"logprobs":null})
        );
        let mut c = cfg();
        c.ignore_eos = true;
        c.logprobs = Some(2);
        let b = body(BackendKind::Completions, &c, Prompt::TokenIds(Arc::from(vec![1u32, 2, 3])));
        assert_eq!(b["prompt"], serde_json::json!([1, 2, 3]));
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["logprobs"], 2);
    }

    #[test]
    fn chat_body_like_vllm() {
        let b = body(BackendKind::Chat, &cfg(), Prompt::Text(Arc::from("hello")));
        assert_eq!(
            b,
            serde_json::json!({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}],
                "max_completion_tokens":7,"stream":true,"stream_options":{"include_usage":true}})
        );
        let t = BodyTemplate::new(BackendKind::Chat, &cfg()).unwrap();
        assert!(t.build(&Prompt::TokenIds(Arc::from(vec![1u32])), 1).is_err());
    }

    #[test]
    fn extra_body_wins_over_everything() {
        let mut c = cfg();
        c.sampling.insert("temperature".into(), 0.5.into());
        c.sampling.insert("max_tokens".into(), 3.into());
        c.extra_body.insert("temperature".into(), 0.0.into());
        c.extra_body.insert("stream".into(), false.into());
        c.extra_body.insert("model".into(), "other".into());
        let t = BodyTemplate::new(BackendKind::Completions, &c).unwrap();
        assert!(!t.streams());
        let raw = t.build(&Prompt::Text(Arc::from("p")), 7).unwrap();
        let b: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(b["temperature"], 0.0);
        assert_eq!(b["max_tokens"], 3);
        assert_eq!(b["stream"], false);
        assert_eq!(b["model"], "other");
        // No duplicate keys.
        assert_eq!(String::from_utf8_lossy(&raw).matches("\"stream\"").count(), 1);
        assert!(BodyTemplate::new(BackendKind::Completions, &cfg()).unwrap().streams());
    }

    #[test]
    fn headers_mark_secrets_sensitive() {
        let mut c = cfg();
        c.api_key = Some("sk-secret".into());
        c.headers = vec![("X-Api-Key".into(), "v".into()), ("X-Trace".into(), "1".into())];
        let h = build_headers(&c).unwrap();
        assert!(h[AUTHORIZATION].is_sensitive());
        assert!(h["x-api-key"].is_sensitive());
        assert!(!h["x-trace"].is_sensitive());
        assert_eq!(h[CONTENT_TYPE], "application/json");
        assert!(!format!("{h:?}").contains("sk-secret"));
        c.headers = vec![("bad name".into(), "v".into())];
        assert!(build_headers(&c).is_err());
    }

    #[test]
    fn debug_of_the_target_config_never_shows_the_key_or_header_values() {
        let mut c = cfg();
        c.api_key = Some("sk-live-0123456789".into());
        c.headers = vec![("X-Session-Token".into(), "session=abcdef".into())];
        let shown = format!("{c:?} {c:#?}");
        assert!(!shown.contains("sk-live-0123456789") && !shown.contains("abcdef"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        let h = build_headers(&c).unwrap();
        assert!(h[AUTHORIZATION].is_sensitive() && h["x-session-token"].is_sensitive());
        assert_eq!(h[AUTHORIZATION], "Bearer sk-live-0123456789");
    }
}
