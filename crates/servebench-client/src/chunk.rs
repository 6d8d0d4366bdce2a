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
    /// An `error` member (object or string): the server reports a failure.
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
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
    #[serde(default)]
    pub prompt_tokens: Option<u32>,
    #[serde(default)]
    pub completion_tokens: Option<u32>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct PromptTokensDetails {
    #[serde(default)]
    pub cached_tokens: Option<u32>,
}

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// What one choice contributed, summed over content kinds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    /// Characters of output text (content or completions text).
    pub content_chars: u64,
    /// Characters of reasoning text.
    pub reasoning_chars: u64,
    /// Characters of tool-call text (function name + arguments).
    pub tool_chars: u64,
}

impl Generated {
    /// Whether any generated content was present (the event counts as a token event).
    pub fn any(&self) -> bool {
        self.content_chars + self.reasoning_chars + self.tool_chars > 0
    }

    /// Characters of content plus reasoning (the record's `output_chars`).
    pub fn output_chars(&self) -> u64 {
        self.content_chars + self.reasoning_chars
    }
}

fn chars(t: &Option<Text<'_>>) -> u64 {
    t.as_ref().map_or(0, |t| t.0.chars().count() as u64)
}

impl Delta<'_> {
    fn generated(&self) -> Generated {
        let tool_chars = self
            .tool_calls
            .iter()
            .filter_map(|c| c.function.as_ref())
            .map(|f| chars(&f.name) + chars(&f.arguments))
            .sum();
        Generated {
            content_chars: chars(&self.content),
            reasoning_chars: chars(&self.reasoning_content) + chars(&self.reasoning),
            tool_chars,
        }
    }
}

impl Choice<'_> {
    /// Generated content of this choice (text, delta or message).
    pub fn generated(&self) -> Generated {
        let mut g = Generated { content_chars: chars(&self.text), ..Generated::default() };
        for d in [&self.delta, &self.message].into_iter().flatten() {
            let x = d.generated();
            g.content_chars += x.content_chars;
            g.reasoning_chars += x.reasoning_chars;
            g.tool_chars += x.tool_chars;
        }
        g
    }

    /// Appends this choice's output text (content/text, then reasoning) to `out`.
    pub fn append_text(&self, out: &mut String) {
        if let Some(t) = &self.text {
            out.push_str(t.as_str());
        }
        for d in [&self.delta, &self.message].into_iter().flatten() {
            for t in [&d.reasoning_content, &d.reasoning, &d.content].into_iter().flatten() {
                out.push_str(t.as_str());
            }
        }
    }
}

impl Chunk<'_> {
    /// Parses one chunk from event data: the hand-written scanner for the usual shapes,
    /// serde for everything else (and for every error), with identical results.
    pub fn parse(data: &str) -> Result<Chunk<'_>, serde_json::Error> {
        match crate::chunk_scan::scan(data) {
            Some(c) => Ok(c),
            None => serde_json::from_str(data),
        }
    }

    /// Generated content summed over all choices.
    pub fn generated(&self) -> Generated {
        self.choices.iter().fold(Generated::default(), |mut acc, c| {
            let g = c.generated();
            acc.content_chars += g.content_chars;
            acc.reasoning_chars += g.reasoning_chars;
            acc.tool_chars += g.tool_chars;
            acc
        })
    }

    /// The first non-null finish reason among the choices.
    pub fn finish_reason(&self) -> Option<&str> {
        self.choices.iter().find_map(|c| c.finish_reason.as_ref()).map(Text::as_str)
    }

    /// A human-readable message for the `error` member, if there is one (bounded length).
    pub fn error_message(&self) -> Option<String> {
        self.error.map(|raw| error_message(raw.get()))
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
        assert_eq!(c.generated().content_chars, 6);
        assert!(c.usage.is_none());
        assert!(matches!(c.choices[0].text.as_ref().unwrap().0, Cow::Borrowed(_)));
    }

    #[test]
    fn vllm_chat_role_chunk_is_not_content() {
        let c = Chunk::parse(r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#).unwrap();
        assert!(!c.generated().any());
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

    #[test]
    fn reasoning_and_escapes() {
        let c = Chunk::parse(r#"{"choices":[{"index":0,"delta":{"reasoning_content":"Let me\nthink \"é\""},"finish_reason":null}]}"#).unwrap();
        let g = c.generated();
        assert_eq!(g.reasoning_chars, "Let me\nthink \"é\"".chars().count() as u64);
        assert!(g.any());
        let c = Chunk::parse(r#"{"choices":[{"delta":{"reasoning":"hm"}}]}"#).unwrap();
        assert_eq!(c.generated().reasoning_chars, 2);
    }

    #[test]
    fn tool_call_arguments_count() {
        let c = Chunk::parse(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"a\""}}]},"finish_reason":null}]}"#).unwrap();
        assert_eq!(c.generated().tool_chars, 3 + 4);
        assert!(c.generated().any());
    }

    #[test]
    fn sglang_chunk_with_matched_stop_and_usage_null() {
        let c = Chunk::parse(r#"{"id":"b1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":null,"content":"Hi","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":"stop","matched_stop":2}],"usage":null}"#).unwrap();
        assert_eq!(c.finish_reason(), Some("stop"));
        assert_eq!(c.generated().content_chars, 2);
    }

    #[test]
    fn llama_cpp_chunk_with_timings() {
        let c = Chunk::parse(r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" the"}}],"created":1,"id":"chatcmpl-x","model":"gpt","system_fingerprint":"b1","object":"chat.completion.chunk","timings":{"prompt_n":5,"predicted_ms":1.5}}"#).unwrap();
        assert_eq!(c.generated().content_chars, 4);
    }

    #[test]
    fn tgi_openai_chunk_and_dynamo_usage_with_choices() {
        let c = Chunk::parse(r#"{"object":"chat.completion.chunk","id":"","created":1,"model":"m","system_fingerprint":"3.0","choices":[{"index":0,"delta":{"role":"assistant","content":"Deep"},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}"#).unwrap();
        assert_eq!(c.finish_reason(), Some("length"));
        assert_eq!(c.usage.unwrap().completion_tokens, Some(3));
        assert!(c.generated().any());
    }

    #[test]
    fn error_objects() {
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
    fn non_streaming_message() {
        let c = Chunk::parse(r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#).unwrap();
        assert_eq!(c.generated().content_chars, 11);
        let mut s = String::new();
        c.choices[0].append_text(&mut s);
        assert_eq!(s, "Hello there");
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo".into(), 2), "h");
        assert_eq!(truncate("abc".into(), 10), "abc");
    }
}
