//! Typed, borrowed deserialization of OpenAI-style stream chunks and response bodies.
//!
//! Only the fields servebench uses are declared; everything else is skipped by serde without
//! building a tree. Strings borrow from the event text when they contain no escapes
//! ([`Text`]), so a typical delta costs no allocation beyond the `choices` vector.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

mod scan;
mod surrogates;

pub(crate) use surrogates::lone_surrogates_replaced;

/// A JSON string that borrows from the input when it can (no escapes) and owns it otherwise.
///
/// (`Option<Cow<'a, str>>` with `#[serde(borrow)]` always allocates in serde; this type does not.)
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Text<'a>(pub Cow<'a, str>);

impl Text<'_> {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// One streamed chunk (`data:` payload) or a whole non-streaming response body.
#[derive(Debug, Default, Deserialize)]
pub struct Chunk<'a> {
    #[serde(borrow, default)]
    pub id: Option<Text<'a>>,
    #[serde(borrow, default, deserialize_with = "null_as_empty")]
    pub choices: Vec<Choice<'a>>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// llama.cpp's non-standard `timings` (on the final chunk): only `cache_n` is read.
    #[serde(default)]
    pub timings: Option<Timings>,
    /// An `error` member (object or string): the server reports a failure.
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
    /// `object`: `"error"` marks a top-level error payload (vLLM's `ErrorResponse`,
    /// `{"object":"error","message":…}`); other values are kept as given.
    #[serde(borrow, default)]
    pub object: Option<Text<'a>>,
    /// The top-level `message` of an `object: "error"` payload.
    #[serde(borrow, default)]
    pub message: Option<&'a RawValue>,
    /// vLLM 0.34's per-request server timing on the usage chunk (`metrics`): anything but an
    /// object is no timing, as vLLM's client tolerates it.
    #[serde(default, deserialize_with = "server_timing")]
    pub metrics: Option<ServerTiming>,
}

/// The server's own timing of one request (vLLM 0.34: the usage chunk's `metrics`), ms.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ServerTiming {
    /// `metrics.queue_time_ms`: time the request waited in the server's queue.
    pub queue_time_ms: Option<f64>,
    /// `metrics.time_to_first_token_ms`: the server's time to its first token.
    pub ttft_ms: Option<f64>,
}

/// `metrics` as [`ServerTiming`]: each value a finite number ≥ 0, else absent; a `metrics` that is
/// not an object (`null`, a string) or has neither value is no timing.
fn server_timing<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ServerTiming>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    // A negative or non-finite time is no time (a server's clock gone wrong).
    let ms =
        |key: &str| v.get(key).and_then(serde_json::Value::as_f64).filter(|x| x.is_finite() && *x >= 0.0);
    let t = ServerTiming { queue_time_ms: ms("queue_time_ms"), ttft_ms: ms("time_to_first_token_ms") };
    Ok((t.queue_time_ms.is_some() || t.ttft_ms.is_some()).then_some(t))
}

/// One entry of `choices`.
#[derive(Debug, Default, Deserialize)]
pub struct Choice<'a> {
    /// Completions: the generated text of this chunk.
    #[serde(borrow, default)]
    pub text: Option<Text<'a>>,
    /// Chat streaming: the delta.
    #[serde(borrow, default)]
    pub delta: Option<Delta<'a>>,
    /// Chat non-streaming: the whole message.
    #[serde(borrow, default)]
    pub message: Option<Delta<'a>>,
    #[serde(borrow, default)]
    pub finish_reason: Option<Text<'a>>,
}

/// A chat delta (or a whole message in non-streaming responses).
#[derive(Debug, Default, Deserialize)]
pub struct Delta<'a> {
    #[serde(borrow, default)]
    pub role: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub content: Option<Text<'a>>,
    /// vLLM/DeepSeek-style reasoning text.
    #[serde(borrow, default)]
    pub reasoning_content: Option<Text<'a>>,
    /// OpenRouter/newer vLLM-style reasoning text.
    #[serde(borrow, default)]
    pub reasoning: Option<Text<'a>>,
    #[serde(borrow, default, deserialize_with = "null_as_empty")]
    pub tool_calls: Vec<ToolCall<'a>>,
}

/// A tool-call delta; only the function arguments text (and name) matter.
#[derive(Debug, Default, Deserialize)]
pub struct ToolCall<'a> {
    #[serde(borrow, default)]
    pub function: Option<FunctionCall<'a>>,
}

/// The function part of a tool-call delta.
#[derive(Debug, Default, Deserialize)]
pub struct FunctionCall<'a> {
    #[serde(borrow, default)]
    pub name: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub arguments: Option<Text<'a>>,
}

/// `usage` (final chunk, per chunk with continuous usage stats, or the whole response).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Usage {
    #[serde(default, deserialize_with = "token_count")]
    pub prompt_tokens: Option<u32>,
    #[serde(default, deserialize_with = "token_count")]
    pub completion_tokens: Option<u32>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct PromptTokensDetails {
    #[serde(default, deserialize_with = "token_count")]
    pub cached_tokens: Option<u32>,
}

/// llama.cpp's `timings` object.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Timings {
    /// Prompt tokens reused from the slot's cache (`prompt_n` more were computed).
    #[serde(default, deserialize_with = "token_count")]
    pub cache_n: Option<u32>,
}

/// A token count of a server's usage: `null`, or a whole number in `u32` — also written as a
/// float (`16.0`, as a Python gateway that computed it may send); a fraction, a negative number
/// or anything else is a protocol error, as before.
pub(crate) fn token_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let Some(v) = Option::<f64>::deserialize(d)? else { return Ok(None) };
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX) {
        Ok(Some(v as u32))
    } else {
        Err(serde::de::Error::custom(format!("{v} is not a token count")))
    }
}

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

impl Chunk<'_> {
    /// Parses one chunk from event data: the hand-written scanner for the usual shapes,
    /// serde for everything else (and for every error), with identical results.
    pub fn parse(data: &str) -> Result<Chunk<'_>, serde_json::Error> {
        match scan::scan(data) {
            Some(c) => Ok(c),
            None => serde_json::from_str(data),
        }
    }

    /// A human-readable message for the `error` member, if there is one (bounded length).
    /// An `error` member wins; else a top-level `{"object":"error","message":…}` payload.
    pub fn error_message(&self) -> Option<String> {
        if let Some(raw) = self.error.filter(|e| e.get() != "null") {
            return Some(error_message(raw.get()));
        }
        if self.object.as_ref().is_some_and(|o| o.as_str() == "error") {
            return Some(self.message.map_or_else(|| "no message".to_owned(), |m| error_message(m.get())));
        }
        None
    }
}

/// Extracts a readable message from an error payload (`{"message": ...}`, `{"error":
/// {"message": ...}}`, a plain string, or anything else shown raw), at most 512 bytes.
pub fn error_message(raw: &str) -> String {
    #[derive(Deserialize)]
    struct Obj<'a> {
        #[serde(borrow, default)]
        message: Option<Text<'a>>,
        #[serde(borrow, default)]
        error: Option<&'a RawValue>,
    }
    let msg = if let Ok(s) = serde_json::from_str::<Text<'_>>(raw) {
        s.0.into_owned()
    } else if let Ok(o) = serde_json::from_str::<Obj<'_>>(raw) {
        match (o.message, o.error) {
            (Some(m), _) => m.0.into_owned(),
            (None, Some(inner)) => return error_message(inner.get()),
            (None, None) => raw.to_owned(),
        }
    } else {
        raw.to_owned()
    };
    servebench_core::text::one_line(&msg, 512)
}

/// Truncates `s` to at most `max` bytes on a char boundary.
pub fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_completions_chunk() {
        let c = Chunk::parse(r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" world","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}"#).unwrap();
        assert_eq!(c.id.as_ref().unwrap().as_str(), "cmpl-1");
        assert_eq!(c.choices[0].text.as_ref().unwrap().as_str(), " world");
        assert!(c.usage.is_none());
        assert!(matches!(c.choices[0].text.as_ref().unwrap().0, Cow::Borrowed(_)));
    }

    #[test]
    fn vllm_chat_role_chunk_is_not_content() {
        let c = Chunk::parse(r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#).unwrap();
        assert_eq!(c.choices[0].delta.as_ref().unwrap().content.as_ref().unwrap().as_str(), "");
        assert_eq!(c.choices[0].delta.as_ref().unwrap().role.as_ref().unwrap().as_str(), "assistant");
    }

    #[test]
    fn vllm_final_usage_chunk_with_empty_choices() {
        let c = Chunk::parse(r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"total_tokens":22,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":8}}}"#).unwrap();
        let u = c.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(12), Some(10)));
        assert_eq!(u.prompt_tokens_details.unwrap().cached_tokens, Some(8));
        assert!(c.choices.is_empty());
    }

    /// Pins usage counts written as whole floats (`16.0`, a Python gateway's arithmetic): they
    /// failed the whole request as a protocol error. Fractions and negatives still do.
    #[test]
    fn usage_counts_written_as_whole_floats_are_counts() {
        let c = Chunk::parse(r#"{"id":"c","choices":[],"usage":{"prompt_tokens":12.0,"completion_tokens":1e1,"prompt_tokens_details":{"cached_tokens":null}}}"#).unwrap();
        let u = c.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(12), Some(10)));
        assert_eq!(u.prompt_tokens_details.unwrap().cached_tokens, None);
        for bad in ["16.5", "-1", "4294967296", "\"16\""] {
            let text = format!(r#"{{"id":"c","choices":[],"usage":{{"completion_tokens":{bad}}}}}"#);
            assert!(Chunk::parse(&text).is_err(), "{bad}");
        }
    }

    #[test]
    fn error_members_of_every_shape_yield_a_readable_message() {
        let c = Chunk::parse(
            r#"{"error":{"object":"error","message":"boom","type":"BadRequestError","code":400}}"#,
        )
        .unwrap();
        assert_eq!(c.error_message().as_deref(), Some("boom"));
        let c = Chunk::parse(r#"{"error":"plain"}"#).unwrap();
        assert_eq!(c.error_message().as_deref(), Some("plain"));
        let c = Chunk::parse(r#"{"error":null,"choices":null}"#).unwrap();
        assert!(c.error_message().is_none());
        assert_eq!(error_message(r#"{"error":{"message":"nested"}}"#), "nested");
        assert_eq!(error_message("not json"), "not json");
    }

    #[test]
    fn a_top_level_object_error_payload_is_an_error_and_other_objects_are_not() {
        let c = Chunk::parse(
            r#"{"object":"error","message":"too long","type":"BadRequestError","param":null,"code":400}"#,
        )
        .unwrap();
        assert_eq!(c.error_message().as_deref(), Some("too long"));
        let c = Chunk::parse(r#"{"message":"first","object":"error"}"#).unwrap();
        assert_eq!(c.error_message().as_deref(), Some("first"), "member order does not matter");
        let c = Chunk::parse(r#"{"object":"error"}"#).unwrap();
        assert_eq!(c.error_message().as_deref(), Some("no message"));
        let c =
            Chunk::parse(r#"{"id":"x","object":"text_completion","choices":[{"text":"a"}],"message":"m"}"#)
                .unwrap();
        assert!(c.error_message().is_none());
        assert_eq!(c.choices.len(), 1);
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo".into(), 2), "h");
        assert_eq!(truncate("abc".into(), 10), "abc");
    }
}
