//! The API families servebench speaks, one module each. A family has two halves:
//!
//! - its **request body**: the field list of `body_fields` (keys and [`Slot`]s, laid out as the
//!   server's own clients or `vllm bench serve` send them), written per request by
//!   [`crate::body`];
//! - its **response parser**: each SSE event (or a whole non-streaming body) becomes a
//!   [`Parsed`] — a dialect-neutral [`ApiEvent`] (text deltas, server-reported token counts,
//!   finish reason, terminal event), a pooling result, or a failure. [`crate::stream`] applies
//!   those to the record, the same way for every family.
//!
//! Families: [`openai`] (completions and chat), [`responses`] (the Responses API), [`pooling`]
//! (embeddings, pooling, rerank; [`embed`] for the multimodal embedding bodies), [`audio`]
//! (transcriptions), and the native dialects [`tgi`], [`sglang`], [`llamacpp`],
//! [`anthropic`]. Adding an API means adding a module here and its `BackendKind` variant.

mod anthropic;
pub(crate) mod audio;
mod embed;
mod llamacpp;
mod openai;
mod pooling;
mod responses;
mod sglang;
mod tgi;

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{Map, Value};
use servebench_core::{BenchError, ErrorKind, FailureCause, Prompt, Result};

use crate::backend::{ApiFamily, BackendKind, Dialect, TargetConfig};
use crate::sse::SseEvent;
use crate::transport::control::snippet;

pub(crate) use anthropic::headers as anthropic_headers;
pub use anthropic::ANTHROPIC_VERSION;
pub(crate) use audio::CONTENT_TYPE as AUDIO_CONTENT_TYPE;
pub(crate) use embed::{write_infinity_input, write_messages as write_embed_messages, EmbedKind};

/// The start of the message of a failure where the server speaks another dialect than
/// `--backend` (SB404; typed as `FailureCause::WrongDialect`, never recognised by the text).
pub(crate) const WRONG_DIALECT: &str = "wrong dialect";

/// The typed cause of a failure whose error text came from the server (an error status's
/// body, an error event): [`FailureCause::ChatTemplate`] (SB403) when the server complains
/// about its chat template. The one place that reads server error text for a code; callers
/// downstream read the cause, never the message.
pub(crate) fn server_text_cause(server_text: &str) -> Option<FailureCause> {
    let m = server_text.to_ascii_lowercase();
    (m.contains("chat template") || m.contains("chat_template")).then_some(FailureCause::ChatTemplate)
}

/// One body field of a JSON request body: a fixed, pre-serialized value or a per-request slot.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    Fixed(String),
    /// The prompt as it is: a text, token ids, or the texts of a batch.
    Prompt,
    /// A text-only prompt (the field takes no token ids or batches).
    TextPrompt,
    /// Chat `messages`: the request's pre-built messages, or one user turn of its text and
    /// multimodal parts.
    Messages,
    /// The `messages` of a multimodal embedding body (CLIP, VLM2Vec; `embed.rs`).
    EmbedMessages(EmbedKind),
    /// Infinity's `input` (and `modality` for an image; `embed.rs`).
    InfinityInput(EmbedKind),
    /// The output length.
    MaxTokens,
    /// An object around the output length: `before`, the number, `after` (`parameters`).
    MaxTokensIn(String, String),
    /// Rerank `query`.
    Query,
    /// Rerank `documents`.
    Documents,
}

impl Slot {
    /// Whether the field can carry multimodal parts or pre-built messages.
    pub(crate) fn takes_media(&self) -> bool {
        matches!(self, Slot::Messages | Slot::EmbedMessages(_) | Slot::InfinityInput(EmbedKind::InfinityClip))
    }
}

/// How a family's requests are encoded.
#[derive(Debug)]
pub(crate) enum BodyShape {
    /// A JSON object of these fields (unescaped keys), `--extra-body` not yet laid on top.
    Json(Vec<(String, Slot)>),
    /// A multipart/form-data upload (`openai-audio`).
    Multipart(audio::AudioForm),
}

/// The body of `backend`'s requests, from its family.
pub(crate) fn body_shape(backend: BackendKind, cfg: &TargetConfig) -> Result<BodyShape> {
    let fields = match backend.family() {
        ApiFamily::OpenAi => openai::body_fields(backend, cfg)?,
        ApiFamily::Responses => responses::body_fields(cfg)?,
        ApiFamily::Audio => {
            let over = cfg.sampling.iter().chain(cfg.extra_body.iter());
            return audio::AudioForm::new(&cfg.model, cfg.ignore_eos, over).map(BodyShape::Multipart);
        }
        ApiFamily::Pooling => pooling::body_fields(backend, cfg)?,
        ApiFamily::Native(Dialect::Tgi) => tgi::body_fields(cfg)?,
        ApiFamily::Native(Dialect::Sglang) => sglang::body_fields(cfg)?,
        ApiFamily::Native(Dialect::LlamaCpp) => llamacpp::body_fields(cfg)?,
        ApiFamily::Native(Dialect::Anthropic) => anthropic::body_fields(cfg)?,
    };
    Ok(BodyShape::Json(fields))
}

/// Writes `v` as JSON into a request body.
pub(crate) fn write_json(out: &mut Vec<u8>, v: &(impl serde::Serialize + ?Sized)) -> Result<()> {
    serde_json::to_writer(out, v).map_err(|e| BenchError::protocol("request body", e))
}

/// Writes a prompt as its JSON value: a string, a token-id list, or a list of strings.
pub(crate) fn write_prompt(out: &mut Vec<u8>, prompt: &Prompt) -> Result<()> {
    match prompt {
        Prompt::Text(t) => write_json(out, &**t),
        Prompt::TokenIds(ids) => write_json(out, &**ids),
        Prompt::Batch(texts) => write_json(out, &**texts),
    }
}

/// A value as JSON text (a body field).
pub(crate) fn to_json(v: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(v).map_err(|e| BenchError::config("--extra-body", e.to_string(), "pass valid JSON"))
}

/// The `model` field.
fn model(cfg: &TargetConfig) -> Result<(String, Slot)> {
    Ok(("model".into(), Slot::Fixed(to_json(&cfg.model)?)))
}

/// `stream: true`.
fn stream_true() -> (String, Slot) {
    ("stream".into(), Slot::Fixed("true".into()))
}

/// `ignore_eos: true` when `--ignore-eos` is set.
fn ignore_eos(fields: &mut Vec<(String, Slot)>, cfg: &TargetConfig) {
    if cfg.ignore_eos {
        fields.push(("ignore_eos".into(), Slot::Fixed("true".into())));
    }
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

/// Lays `values` over `fields` at the top level: a key already there is replaced in place, a
/// new one appended.
pub(crate) fn lay_over<'a>(
    fields: &mut Vec<(String, Slot)>,
    values: impl IntoIterator<Item = (&'a String, &'a Value)>,
) -> Result<()> {
    for (k, v) in values {
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
pub(crate) struct EventUsage {
    pub prompt: Option<u32>,
    pub completion: Option<u32>,
    pub cached: Option<u32>,
}

/// What one event of any family contributed, dialect-neutral.
#[derive(Debug, Default)]
pub(crate) struct ApiEvent<'a> {
    /// Visible output text of this event (a delta).
    pub content: Cow<'a, str>,
    /// Reasoning ("thinking") text of this event.
    pub reasoning: Cow<'a, str>,
    /// Characters of tool-call text (function name and arguments) of this event.
    pub tool_chars: u64,
    /// The event is a generated token even without text (TGI special tokens, llama.cpp
    /// tokens held back as incomplete UTF-8).
    pub token_without_text: bool,
    /// Tokens this event carried, when the dialect says (TGI: 1, llama.cpp: `tokens`).
    pub tokens: Option<u32>,
    /// Cumulative completion tokens after this event (OpenAI continuous usage, SGLang
    /// `meta_info`).
    pub cumulative_completion: Option<u32>,
    pub usage: EventUsage,
    pub finish_reason: Option<Cow<'a, str>>,
    pub server_id: Option<Cow<'a, str>>,
    /// The family's final event (or a whole body): the response is complete after it.
    pub terminal: bool,
    /// An OpenAI usage-only chunk (`choices: []` with `usage`): after a finish reason, the
    /// stream's last event before `[DONE]` (`stream_options.include_usage`).
    pub usage_only: bool,
    /// The server's own timing of the request (vLLM 0.34's `metrics` on the usage chunk).
    pub server_timing: Option<crate::chunk::ServerTiming>,
}

impl ApiEvent<'_> {
    /// The event with its texts owned (no borrow of the event's data).
    pub(crate) fn into_owned(self) -> ApiEvent<'static> {
        let owned = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
        ApiEvent {
            content: owned(self.content),
            reasoning: owned(self.reasoning),
            finish_reason: self.finish_reason.map(owned),
            server_id: self.server_id.map(owned),
            tool_chars: self.tool_chars,
            token_without_text: self.token_without_text,
            tokens: self.tokens,
            cumulative_completion: self.cumulative_completion,
            usage: self.usage,
            terminal: self.terminal,
            usage_only: self.usage_only,
            server_timing: self.server_timing,
        }
    }

    /// Whether the event carries generated content (a token event).
    pub(crate) fn is_token_event(&self) -> bool {
        !self.content.is_empty()
            || !self.reasoning.is_empty()
            || self.tool_chars > 0
            || self.token_without_text
    }
}

/// A complete answer of a pooling API (embeddings, pooling, rerank): no tokens generated.
#[derive(Debug, Default)]
pub(crate) struct Pooled<'a> {
    pub server_id: Option<Cow<'a, str>>,
    /// The server's prompt-token count (`usage.prompt_tokens`, else `total_tokens`).
    pub prompt_tokens: Option<u32>,
}

/// The outcome of parsing one event or body.
#[derive(Debug)]
pub(crate) enum Parsed<'a> {
    Event(ApiEvent<'a>),
    Pooled(Pooled<'a>),
    /// Keep-alive, ping, bookkeeping events: nothing to record.
    Skip,
    /// `data: [DONE]`.
    Done,
    /// The request failed.
    Fail(ErrorKind, String),
    /// The event is in another dialect than `--backend` speaks (SB404): a protocol failure.
    WrongDialect(String),
}

/// Per-response parsing state of a backend's family.
#[derive(Debug)]
pub(crate) enum ResponseParser {
    /// OpenAI-style chunks (completions, chat, transcriptions).
    OpenAi,
    Responses,
    Pooling,
    Tgi,
    Sglang(sglang::Cumulative),
    LlamaCpp,
    Anthropic,
}

impl ResponseParser {
    /// The parser of `backend`'s responses.
    pub(crate) fn for_backend(backend: BackendKind) -> Self {
        match backend.family() {
            ApiFamily::OpenAi | ApiFamily::Audio => ResponseParser::OpenAi,
            ApiFamily::Responses => ResponseParser::Responses,
            ApiFamily::Pooling => ResponseParser::Pooling,
            ApiFamily::Native(Dialect::Tgi) => ResponseParser::Tgi,
            ApiFamily::Native(Dialect::Sglang) => ResponseParser::Sglang(sglang::Cumulative::default()),
            ApiFamily::Native(Dialect::LlamaCpp) => ResponseParser::LlamaCpp,
            ApiFamily::Native(Dialect::Anthropic) => ResponseParser::Anthropic,
        }
    }

    /// Parses one SSE event.
    pub(crate) fn parse_event<'a>(&mut self, ev: SseEvent<'a>) -> Parsed<'a> {
        if matches!(ev.event, Some("error") | Some("response.failed")) {
            let msg = crate::chunk::error_message(ev.data);
            return Parsed::Fail(ErrorKind::ServerError, format!("server error event: {msg}"));
        }
        let data = ev.data.trim_ascii();
        match self {
            ResponseParser::OpenAi | ResponseParser::Pooling => openai::parse_event(data),
            ResponseParser::Responses => responses::parse_event(ev.event, data),
            // Native dialects: an OpenAI-style end marker or an empty event carries nothing.
            _ if data == "[DONE]" => Parsed::Done,
            _ if data.is_empty() => Parsed::Skip,
            ResponseParser::Tgi => tgi::parse(data),
            ResponseParser::Sglang(cum) => sglang::parse(data, cum),
            ResponseParser::LlamaCpp => llamacpp::parse(data),
            ResponseParser::Anthropic => anthropic::parse(ev.event, data),
        }
    }

    /// Parses a whole non-streaming body.
    pub(crate) fn parse_body<'a>(&mut self, body: &'a [u8]) -> Parsed<'a> {
        let text = match std::str::from_utf8(body) {
            Ok(t) => t,
            Err(e) => return Parsed::Fail(ErrorKind::Protocol, e.to_string()),
        };
        match self {
            ResponseParser::OpenAi => openai::parse_body(text),
            ResponseParser::Responses => responses::parse_body(text),
            ResponseParser::Pooling => pooling::parse_body(text),
            // Native dialects are measured as streams only.
            ResponseParser::Tgi
            | ResponseParser::Sglang(_)
            | ResponseParser::LlamaCpp
            | ResponseParser::Anthropic => Parsed::Fail(
                ErrorKind::Protocol,
                format!("expected an event stream, got a JSON body: {}", snippet(body)),
            ),
        }
    }
}

/// A whole body that is not the JSON expected.
fn not_json(e: &serde_json::Error, body: &str) -> Parsed<'static> {
    let excerpt = snippet(body.trim_start().as_bytes());
    Parsed::Fail(ErrorKind::Protocol, format!("response is not JSON ({e}): {excerpt}"))
}

/// A JSON syntax failure of a stream event.
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
