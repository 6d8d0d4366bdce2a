//! Anthropic Messages API, `POST /v1/messages` with `"stream": true`: named events
//! `message_start` (`message.usage.input_tokens`, cache counts), `content_block_start`,
//! `content_block_delta` (`text_delta.text`, `thinking_delta.thinking`,
//! `input_json_delta.partial_json`, `signature_delta`), `content_block_stop`, `message_delta`
//! (`delta.stop_reason`, cumulative `usage.output_tokens`), `message_stop`, `ping`, and `error`
//! (`{"type":"error","error":{"type":"overloaded_error","message":…}}`). The event type is
//! read from the `event:` line, or from the data's `type` when the line is missing.
//!
//! Prompt tokens are `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`
//! (Anthropic's `input_tokens` excludes cached tokens); cached are `cache_read_input_tokens`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use servebench_core::{BenchError, ErrorKind, Result};

use super::{lay_over, malformed, model, stream_true, wrong_dialect, ApiEvent, EventUsage, Parsed, Slot};
use crate::backend::{Dialect, TargetConfig};
use crate::chunk::{error_message, Text};

#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    #[serde(borrow, default)]
    content_block: Option<Delta<'a>>,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    choices: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
}

/// A content-block delta, a content block start, or a message delta (`stop_reason`).
#[derive(Debug, Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Text<'a>>,
    #[serde(borrow, default)]
    partial_json: Option<Text<'a>>,
    #[serde(borrow, default)]
    stop_reason: Option<Text<'a>>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct Usage {
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    input_tokens: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    output_tokens: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    cache_read_input_tokens: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    cache_creation_input_tokens: Option<u32>,
}

impl Usage {
    fn prompt(&self) -> Option<u32> {
        let cached =
            self.cache_read_input_tokens.unwrap_or(0) + self.cache_creation_input_tokens.unwrap_or(0);
        self.input_tokens.map(|i| i + cached)
    }
}

fn text<'a>(t: Option<Text<'a>>) -> Cow<'a, str> {
    t.map(|t| t.0).unwrap_or_default()
}

/// The fields of a Messages body: `{model, messages, max_tokens, stream: true}`, sampling
/// parameters at the top level (the API has no `ignore_eos`).
pub(super) fn body_fields(cfg: &TargetConfig) -> Result<Vec<(String, Slot)>> {
    let mut f =
        vec![model(cfg)?, ("messages".into(), Slot::Messages), ("max_tokens".into(), Slot::MaxTokens)];
    f.push(stream_true());
    lay_over(&mut f, &cfg.sampling)?;
    Ok(f)
}

pub(super) fn parse<'a>(event: Option<&'a str>, data: &'a str) -> Parsed<'a> {
    let ev: Event<'a> = match serde_json::from_str(data) {
        Ok(e) => e,
        Err(e) if event == Some("error") => {
            let _ = e;
            return Parsed::Fail(
                ErrorKind::ServerError,
                format!("server error event: {}", error_message(data)),
            );
        }
        Err(e) => return malformed(&e, data),
    };
    let kind = event.or(ev.kind.as_ref().map(Text::as_str)).unwrap_or("");
    // Borrow checker: `kind` may borrow from `ev.kind`; copy the few names we match on.
    let kind = match kind {
        "message_start" => "message_start",
        "content_block_start" => "content_block_start",
        "content_block_delta" => "content_block_delta",
        "message_delta" => "message_delta",
        "message_stop" => "message_stop",
        "error" => "error",
        _ => "",
    };
    if kind == "error" || ev.error.is_some_and(|e| e.get() != "null") {
        let msg = ev.error.map_or_else(|| error_message(data), |e| describe_error(e.get()));
        return Parsed::Fail(ErrorKind::ServerError, format!("server error event: {msg}"));
    }
    if ev.choices.is_some() {
        return wrong_dialect(Dialect::Anthropic);
    }
    let mut out = ApiEvent::default();
    match kind {
        "message_start" => {
            let Some(m) = ev.message else { return Parsed::Skip };
            out.server_id = m.id.map(|i| i.0);
            if let Some(u) = m.usage {
                out.usage =
                    EventUsage { prompt: u.prompt(), completion: None, cached: u.cache_read_input_tokens };
            }
        }
        "content_block_start" | "content_block_delta" => {
            let Some(d) = (if kind == "content_block_start" { ev.content_block } else { ev.delta }) else {
                return Parsed::Skip;
            };
            out.content = text(d.text);
            out.reasoning = text(d.thinking);
            out.tool_chars = d.partial_json.map_or(0, |j| j.as_str().chars().count() as u64);
        }
        "message_delta" => {
            out.finish_reason = ev.delta.and_then(|d| d.stop_reason).map(|s| s.0);
            if let Some(u) = ev.usage {
                out.usage = EventUsage {
                    prompt: u.prompt(),
                    completion: u.output_tokens,
                    cached: u.cache_read_input_tokens,
                };
            }
        }
        "message_stop" => out.terminal = true,
        // ping, content_block_stop, unknown future events.
        _ => return Parsed::Skip,
    }
    Parsed::Event(out)
}

/// `{"type":"overloaded_error","message":"Overloaded"}` → `Overloaded (overloaded_error)`.
fn describe_error(raw: &str) -> String {
    #[derive(Deserialize)]
    struct E<'a> {
        #[serde(borrow, rename = "type", default)]
        kind: Option<Text<'a>>,
    }
    let msg = error_message(raw);
    match serde_json::from_str::<E<'_>>(raw).ok().and_then(|e| e.kind) {
        Some(k) => format!("{msg} ({})", k.as_str()),
        None => msg,
    }
}

/// The `anthropic-version` header sent unless `--header anthropic-version=…` overrides it.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic authentication and version headers: `x-api-key` (marked sensitive, never logged)
/// instead of `Authorization: Bearer`, and `anthropic-version`.
pub(crate) fn headers(h: &mut http::HeaderMap, key: Option<&servebench_core::secret::Secret>) -> Result<()> {
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
