//! SGLang native `POST /generate` with `"stream": true`: every event carries the *cumulative*
//! `text` so far and `meta_info` (`id`, `prompt_tokens`, `completion_tokens`, `cached_tokens`,
//! `finish_reason` — `null`, or an object `{"type": "length"|"stop"|"abort", ...}`); the
//! stream ends with `data: [DONE]`.
//!
//! Deltas: when the new text extends the previous one (checked on its length and last bytes,
//! without keeping the whole text), the delta is the new suffix. When it does not (a server
//! started with incremental streaming output), the event's text is taken as a delta. A
//! `finish_reason` of type `abort` (e.g. the prompt is longer than the context) fails the
//! request with the server's message.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use servebench_core::{ErrorKind, Result};

use super::{
    malformed, nested, server_error, stream_true, wrong_dialect, ApiEvent, EventUsage, Parsed, Slot,
};
use crate::backend::{Dialect, TargetConfig};
use crate::chunk::{error_message, Text};

/// How much of the previous cumulative text is kept to check the next one extends it.
const TAIL: usize = 32;

/// What is remembered of the cumulative text between events.
#[derive(Debug, Default)]
pub(crate) struct Cumulative {
    len: usize,
    tail: String,
}

impl Cumulative {
    /// The new part of `full` (borrowed when possible), and remember `full`.
    fn delta<'a>(&mut self, full: Cow<'a, str>) -> Cow<'a, str> {
        let extends = full.len() >= self.len
            && full.is_char_boundary(self.len)
            && full[..self.len].ends_with(self.tail.as_str());
        let start = if extends { self.len } else { 0 };
        let total = if extends { full.len() } else { self.len + full.len() };
        // Remember the last TAIL bytes of the cumulative text.
        let mut cut = full.len().saturating_sub(TAIL);
        while !full.is_char_boundary(cut) {
            cut += 1;
        }
        if extends || full.len() >= TAIL {
            self.tail = full[cut..].to_owned();
        } else {
            self.tail.push_str(&full);
            let mut c = self.tail.len().saturating_sub(TAIL);
            while !self.tail.is_char_boundary(c) {
                c += 1;
            }
            self.tail.drain(..c);
        }
        self.len = total;
        match full {
            Cow::Borrowed(s) => Cow::Borrowed(&s[start..]),
            Cow::Owned(s) => Cow::Owned(s[start..].to_owned()),
        }
    }
}

#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
    #[serde(borrow, default)]
    meta_info: Option<Meta<'a>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    choices: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    /// An object `{"type": …}` (current SGLang) or a plain string (older versions).
    #[serde(borrow, default)]
    finish_reason: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    prompt_tokens: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    completion_tokens: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    cached_tokens: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct Finish<'a> {
    #[serde(borrow, rename = "type", default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
}

/// The fields of an SGLang body: `{text, sampling_params: {max_new_tokens, ignore_eos?,
/// <sampling>}, stream: true}`.
pub(super) fn body_fields(cfg: &TargetConfig) -> Result<Vec<(String, Slot)>> {
    let mut fixed = Map::new();
    if cfg.ignore_eos {
        fixed.insert("ignore_eos".into(), Value::Bool(true));
    }
    Ok(vec![
        ("text".into(), Slot::TextPrompt),
        ("sampling_params".into(), nested("max_new_tokens", fixed, &cfg.sampling)?),
        stream_true(),
    ])
}

pub(super) fn parse<'a>(data: &'a str, cum: &mut Cumulative) -> Parsed<'a> {
    let ev: Event<'a> = match serde_json::from_str(data) {
        Ok(e) => e,
        Err(e) => return malformed(&e, data),
    };
    if let Some(err) = ev.error.filter(|e| e.get() != "null") {
        return server_error(err.get());
    }
    if ev.choices.is_some() {
        return wrong_dialect(Dialect::Sglang);
    }
    let mut out = ApiEvent::default();
    if let Some(m) = &ev.meta_info {
        if let Some(raw) = m.finish_reason.filter(|r| r.get() != "null") {
            let f = match serde_json::from_str::<Text<'_>>(raw.get()) {
                Ok(kind) => Finish { kind: Some(kind), message: None },
                Err(_) => serde_json::from_str::<Finish<'_>>(raw.get())
                    .unwrap_or(Finish { kind: None, message: None }),
            };
            let kind = f.kind.as_ref().map_or("unknown", Text::as_str);
            if kind == "abort" {
                let msg = f.message.map_or_else(|| "no message".to_owned(), |m| error_message(m.get()));
                return Parsed::Fail(ErrorKind::ServerError, format!("server aborted the request: {msg}"));
            }
            out.finish_reason = Some(Cow::Owned(kind.to_owned()));
        }
        out.usage =
            EventUsage { prompt: m.prompt_tokens, completion: m.completion_tokens, cached: m.cached_tokens };
        out.cumulative_completion = m.completion_tokens;
        out.server_id = m.id.as_ref().map(|i| Cow::Owned(i.as_str().to_owned()));
    }
    if let Some(t) = ev.text {
        out.content = cum.delta(t.0);
    }
    Parsed::Event(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumulative_text_becomes_deltas() {
        let mut c = Cumulative::default();
        assert_eq!(c.delta(Cow::Borrowed("Hel")), "Hel");
        assert_eq!(c.delta(Cow::Borrowed("Hello")), "lo");
        assert_eq!(c.delta(Cow::Borrowed("Hello")), "");
        assert_eq!(c.delta(Cow::Owned("Hello, wörld".into())), ", wörld");
        let long = "x".repeat(100);
        assert_eq!(c.delta(Cow::Borrowed(long.as_str())), long.as_str()); // not an extension
                                                                          // The text is now "Hello, wörld" + long: an event extending that is cumulative again.
        let cumulative = format!("Hello, wörld{long}yz");
        assert_eq!(c.delta(Cow::Borrowed(cumulative.as_str())), "yz");
    }

    #[test]
    fn finish_reason_as_object_or_string() {
        let mut c = Cumulative::default();
        for (data, want) in [
            (r#"{"text":"a","meta_info":{"finish_reason":{"type":"stop","matched":2}}}"#, "stop"),
            (r#"{"text":"ab","meta_info":{"finish_reason":"length"}}"#, "length"),
        ] {
            match parse(data, &mut c) {
                Parsed::Event(e) => assert_eq!(e.finish_reason.as_deref(), Some(want)),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn incremental_text_is_taken_as_deltas() {
        let mut c = Cumulative::default();
        assert_eq!(c.delta(Cow::Borrowed("ab")), "ab");
        assert_eq!(c.delta(Cow::Borrowed("cd")), "cd");
        assert_eq!(c.delta(Cow::Borrowed("abcdef")), "ef"); // extends "abcd"
    }
}
