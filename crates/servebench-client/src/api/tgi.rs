//! TGI `POST /generate_stream`: one event per generated token,
//! `data:{"index":1,"token":{"id":..,"text":..,"logprob":..,"special":false},"generated_text":null,"details":null}`;
//! the last event carries `generated_text` and (with `details: true`) `details`
//! `{finish_reason, generated_tokens, input_length, seed}`. There is no `[DONE]`. Errors are
//! sent as `data:{"error":"...","error_type":"..."}`.
//!
//! A special token (EOS) is a generated token (TGI counts it in `generated_tokens`) but its text
//! is not output: it counts as a token event without adding text.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use servebench_core::Result;

use super::{
    malformed, nested, server_error, stream_true, wrong_dialect, ApiEvent, EventUsage, Parsed, Slot,
};
use crate::backend::{Dialect, TargetConfig};
use crate::chunk::Text;

#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(borrow, default)]
    token: Option<Token<'a>>,
    #[serde(borrow, default)]
    generated_text: Option<Text<'a>>,
    #[serde(borrow, default)]
    details: Option<Details<'a>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error_type: Option<Text<'a>>,
    #[serde(borrow, default)]
    choices: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
struct Token<'a> {
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
    #[serde(default)]
    special: bool,
}

#[derive(Debug, Deserialize)]
struct Details<'a> {
    #[serde(borrow, default)]
    finish_reason: Option<Text<'a>>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    generated_tokens: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    input_length: Option<u32>,
}

/// The fields of a TGI body: `{inputs, parameters: {max_new_tokens, details: true,
/// decoder_input_details: false, <sampling>}, stream: true}`. `details` brings
/// `generated_tokens`/`input_length` in the last event; `decoder_input_details` must be false
/// when streaming. TGI has no `ignore_eos`.
pub(super) fn body_fields(cfg: &TargetConfig) -> Result<Vec<(String, Slot)>> {
    let mut fixed = Map::new();
    fixed.insert("details".into(), Value::Bool(true));
    fixed.insert("decoder_input_details".into(), Value::Bool(false));
    Ok(vec![
        ("inputs".into(), Slot::TextPrompt),
        ("parameters".into(), nested("max_new_tokens", fixed, &cfg.sampling)?),
        stream_true(),
    ])
}

pub(super) fn parse(data: &str) -> Parsed<'_> {
    let ev: Event<'_> = match serde_json::from_str(data) {
        Ok(e) => e,
        Err(e) => return malformed(&e, data),
    };
    if let Some(err) = ev.error.filter(|e| e.get() != "null") {
        let Parsed::Fail(kind, msg) = server_error(err.get()) else { return Parsed::Skip };
        let msg = match ev.error_type {
            Some(t) => format!("{msg} ({})", t.as_str()),
            None => msg,
        };
        return Parsed::Fail(kind, msg);
    }
    if ev.choices.is_some() {
        return wrong_dialect(Dialect::Tgi);
    }
    let mut out = ApiEvent::default();
    if let Some(tok) = ev.token {
        out.tokens = Some(1);
        if tok.special {
            out.token_without_text = true;
        } else {
            out.content = tok.text.map(|t| t.0).unwrap_or_default();
            out.token_without_text = out.content.is_empty();
        }
    }
    if let Some(d) = &ev.details {
        out.usage = EventUsage { prompt: d.input_length, completion: d.generated_tokens, cached: None };
        out.finish_reason = d.finish_reason.as_ref().map(|f| Cow::Owned(f.as_str().to_owned()));
    }
    out.terminal = ev.details.is_some() || ev.generated_text.is_some();
    Parsed::Event(out)
}
