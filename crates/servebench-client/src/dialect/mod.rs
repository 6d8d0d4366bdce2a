//! Native streaming dialects of servers that also (or only) speak their own API:
//! TGI `/generate_stream`, SGLang `/generate`, the llama.cpp server's `/completion`, and the
//! Anthropic Messages API (`/v1/messages`).
//!
//! Each dialect has two halves: the request body (`Dialect::body_fields`, laid out like the
//! OpenAI bodies in [`crate::backend`]) and a parser that turns one SSE event into a
//! `NativeEvent` — the dialect-neutral shape the stream state applies to the record (text
//! deltas, server-reported token counts, finish reason, terminal event). Cumulative-text
//! dialects (SGLang) are turned into deltas here, so every metric downstream sees deltas.

mod anthropic;
mod llamacpp;
mod sglang;
mod tgi;

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{Map, Value};
use servebench_core::{BenchError, ErrorKind, Result};

use crate::backend::{Slot, TargetConfig};
use crate::sse::SseEvent;

/// A native API dialect (`--backend tgi|sglang|llama.cpp|anthropic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Hugging Face Text Generation Inference, `POST /generate_stream`.
    Tgi,
    /// SGLang's native `POST /generate` (cumulative text, `meta_info`).
    Sglang,
    /// llama.cpp server `POST /completion` (`content`, `stop`, `timings`).
    LlamaCpp,
    /// Anthropic-style Messages API, `POST /v1/messages` (typed events).
    Anthropic,
}

/// The start of the message of a failure where the server speaks another dialect than
/// `--backend` (SB404; typed as `FailureCause::WrongDialect`, never recognised by the text).
pub const WRONG_DIALECT: &str = "wrong dialect";

/// Whether a failure message is a server complaint about its chat template (`SB403`).
pub fn mentions_chat_template(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("chat template") || m.contains("chat_template")
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 4] = [Dialect::Tgi, Dialect::Sglang, Dialect::LlamaCpp, Dialect::Anthropic];

    /// The `--backend` name.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Tgi => "tgi",
            Dialect::Sglang => "sglang",
            Dialect::LlamaCpp => "llama.cpp",
            Dialect::Anthropic => "anthropic",
        }
    }

    /// Parses a `--backend` name (`llamacpp` and `llama-cpp` are accepted for `llama.cpp`).
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name {
            "tgi" => Some(Dialect::Tgi),
            "sglang" => Some(Dialect::Sglang),
            "llama.cpp" | "llamacpp" | "llama-cpp" => Some(Dialect::LlamaCpp),
            "anthropic" => Some(Dialect::Anthropic),
            _ => None,
        }
    }

    /// The default endpoint path.
    pub fn default_endpoint(self) -> &'static str {
        match self {
            Dialect::Tgi => "/generate_stream",
            Dialect::Sglang => "/generate",
            Dialect::LlamaCpp => "/completion",
            Dialect::Anthropic => "/v1/messages",
        }
    }

    /// Whether prompts given as token ids can be sent (only llama.cpp's `prompt` takes them).
    pub fn accepts_token_ids(self) -> bool {
        self == Dialect::LlamaCpp
    }

    /// The body fields (unescaped keys) before `--extra-body` is laid on top. Sampling
    /// parameters go where the dialect expects them: inside `parameters` (TGI) or
    /// `sampling_params` (SGLang), top level otherwise.
    pub(crate) fn body_fields(self, cfg: &TargetConfig) -> Result<Vec<(String, Slot)>> {
        let mut f: Vec<(String, Slot)> = Vec::new();
        let stream = || Slot::Fixed("true".into());
        match self {
            Dialect::Tgi => {
                // `details` brings `generated_tokens`/`input_length` in the last event;
                // `decoder_input_details` must be false when streaming. TGI has no ignore_eos.
                let mut fixed = Map::new();
                fixed.insert("details".into(), Value::Bool(true));
                fixed.insert("decoder_input_details".into(), Value::Bool(false));
                f.push(("inputs".into(), Slot::TextPrompt));
                f.push(("parameters".into(), nested("max_new_tokens", fixed, &cfg.sampling)?));
                f.push(("stream".into(), stream()));
            }
            Dialect::Sglang => {
                let mut fixed = Map::new();
                if cfg.ignore_eos {
                    fixed.insert("ignore_eos".into(), Value::Bool(true));
                }
                f.push(("text".into(), Slot::TextPrompt));
                f.push(("sampling_params".into(), nested("max_new_tokens", fixed, &cfg.sampling)?));
                f.push(("stream".into(), stream()));
            }
            Dialect::LlamaCpp => {
                f.push(("prompt".into(), Slot::Prompt));
                f.push(("n_predict".into(), Slot::MaxTokens));
                f.push(("stream".into(), stream()));
                if cfg.ignore_eos {
                    f.push(("ignore_eos".into(), Slot::Fixed("true".into())));
                }
                top_level(&mut f, &cfg.sampling)?;
            }
            Dialect::Anthropic => {
                f.push(("model".into(), Slot::Fixed(to_json(&cfg.model)?)));
                f.push(("messages".into(), Slot::Messages));
                f.push(("max_tokens".into(), Slot::MaxTokens));
                f.push(("stream".into(), stream()));
                top_level(&mut f, &cfg.sampling)?;
            }
        }
        Ok(f)
    }
}

fn to_json(v: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(v).map_err(|e| BenchError::config("--extra-body", e.to_string(), "pass valid JSON"))
}

/// `{"<max_key>": N, <fixed...>, <sampling...>}` with N written per request.
fn nested(max_key: &str, mut fixed: Map<String, Value>, sampling: &Map<String, Value>) -> Result<Slot> {
    for (k, v) in sampling {
        fixed.insert(k.clone(), v.clone());
    }
    fixed.remove(max_key);
    let before = format!("{{{}:", to_json(&max_key)?);
    let mut after = String::new();
    for (k, v) in &fixed {
        let _ = write!(after, ",{}:{}", to_json(k)?, to_json(v)?);
    }
    after.push('}');
    Ok(Slot::MaxTokensIn(before, after))
}

fn top_level(fields: &mut Vec<(String, Slot)>, sampling: &Map<String, Value>) -> Result<()> {
    for (k, v) in sampling {
        let value = Slot::Fixed(to_json(v)?);
        match fields.iter_mut().find(|(key, _)| key == k) {
            Some(f) => f.1 = value,
            None => fields.push((k.clone(), value)),
        }
    }
    Ok(())
}

/// Server-reported token counts carried by one event (each `None` when absent).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NativeUsage {
    pub prompt: Option<u32>,
    pub completion: Option<u32>,
    pub cached: Option<u32>,
}

/// What one native event contributed, dialect-neutral.
#[derive(Debug, Default)]
pub(crate) struct NativeEvent<'a> {
    /// Visible output text of this event (a delta).
    pub content: Cow<'a, str>,
    /// Reasoning ("thinking") text of this event.
    pub reasoning: Cow<'a, str>,
    /// Characters of tool-call text (arguments) of this event.
    pub tool_chars: u64,
    /// The event is a generated token even without text (TGI special tokens, llama.cpp
    /// tokens held back as incomplete UTF-8).
    pub token_without_text: bool,
    /// Tokens this event carried, when the dialect says (TGI: 1, llama.cpp: `tokens`).
    pub tokens: Option<u32>,
    /// Cumulative completion tokens after this event (SGLang `meta_info`).
    pub cumulative_completion: Option<u32>,
    pub usage: NativeUsage,
    pub finish_reason: Option<String>,
    pub server_id: Option<String>,
    /// The dialect's final event: the response is complete after it.
    pub terminal: bool,
}

impl NativeEvent<'_> {
    /// Whether the event carries generated content (a token event).
    pub(crate) fn is_token_event(&self) -> bool {
        !self.content.is_empty()
            || !self.reasoning.is_empty()
            || self.tool_chars > 0
            || self.token_without_text
    }
}

/// The outcome of parsing one event.
#[derive(Debug)]
pub(crate) enum Parsed<'a> {
    Event(NativeEvent<'a>),
    /// Keep-alive, ping, bookkeeping events: nothing to record.
    Skip,
    /// `data: [DONE]`.
    Done,
    /// The request failed.
    Fail(ErrorKind, String),
    /// The event is in another dialect than `--backend` speaks (SB404): a protocol failure.
    WrongDialect(String),
}

/// Per-response parsing state of a native dialect.
#[derive(Debug)]
pub(crate) struct DialectState {
    dialect: Dialect,
    sglang: sglang::Cumulative,
}

impl DialectState {
    pub(crate) fn new(dialect: Dialect) -> Self {
        DialectState { dialect, sglang: sglang::Cumulative::default() }
    }

    /// Parses one SSE event (or a whole non-streaming body given as one event).
    pub(crate) fn parse<'a>(&mut self, ev: SseEvent<'a>) -> Parsed<'a> {
        let data = ev.data.trim_ascii();
        if data == "[DONE]" {
            return Parsed::Done;
        }
        if data.is_empty() {
            return match ev.event {
                Some("error") => {
                    Parsed::Fail(ErrorKind::ServerError, "server error event without data".into())
                }
                _ => Parsed::Skip,
            };
        }
        match self.dialect {
            Dialect::Tgi => tgi::parse(data),
            Dialect::Sglang => sglang::parse(data, &mut self.sglang),
            Dialect::LlamaCpp => llamacpp::parse(data),
            Dialect::Anthropic => anthropic::parse(ev.event, data),
        }
    }
}

/// A JSON syntax failure of a dialect event.
fn malformed(e: &serde_json::Error, data: &str) -> Parsed<'static> {
    let data = servebench_core::text::one_line(data, 200);
    Parsed::Fail(ErrorKind::Protocol, format!("malformed JSON event ({e}): {data}"))
}

/// The event is an OpenAI-style chunk (`choices`): the server speaks another dialect.
fn wrong_dialect(dialect: Dialect) -> Parsed<'static> {
    Parsed::WrongDialect(format!(
        "{WRONG_DIALECT}: --backend {} got an OpenAI-style chunk (`choices`); use --backend openai or openai-chat for this endpoint",
        dialect.name()
    ))
}

/// A server error payload inside the stream.
fn server_error(raw: &str) -> Parsed<'static> {
    Parsed::Fail(
        ErrorKind::ServerError,
        format!("server error in stream: {}", crate::chunk::error_message(raw)),
    )
}

#[cfg(test)]
mod tests;

/// The `anthropic-version` header sent unless `--header anthropic-version=…` overrides it.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic authentication and version headers: `x-api-key` (marked sensitive, never logged)
/// instead of `Authorization: Bearer`, and `anthropic-version`.
pub(crate) fn anthropic_headers(
    h: &mut http::HeaderMap,
    key: Option<&servebench_core::config::Secret>,
) -> Result<()> {
    use http::header::{HeaderName, HeaderValue};
    h.insert(HeaderName::from_static("anthropic-version"), HeaderValue::from_static(ANTHROPIC_VERSION));
    if let Some(key) = key.map(|k| k.expose()).filter(|k| !k.is_empty()) {
        let mut v = HeaderValue::from_str(key).map_err(|_| {
            BenchError::config(
                "ANTHROPIC_API_KEY",
                "contains characters not allowed in a header",
                "check the key",
            )
        })?;
        v.set_sensitive(true);
        h.insert(HeaderName::from_static("x-api-key"), v);
    }
    Ok(())
}

/// The API key of `--backend name` from the environment (`env` looks a variable up):
/// `ANTHROPIC_API_KEY` first for `anthropic`, else `OPENAI_API_KEY`. Empty values count as
/// unset. The key is a [`Secret`](servebench_core::config::Secret) from here on.
pub fn api_key_from_env(
    backend: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Option<servebench_core::config::Secret> {
    let get = |k: &str| env(k).filter(|v| !v.is_empty()).map(servebench_core::config::Secret::new);
    let anthropic = Dialect::from_name(backend) == Some(Dialect::Anthropic);
    anthropic.then(|| get("ANTHROPIC_API_KEY")).flatten().or_else(|| get("OPENAI_API_KEY"))
}
