//! OpenAI completions (`/v1/completions`, `--backend vllm|openai`) and chat completions
//! (`/v1/chat/completions`, `--backend openai-chat`); transcription streams use the same chunks.
//!
//! Bodies, as `vllm bench serve` sends them:
//! - completions → `{model, prompt, max_tokens, stream: true, stream_options: {include_usage:
//!   true}, logprobs}` (+ `ignore_eos`), then sampling parameters;
//! - chat → `{model, messages: [{role: user, content: [{type: text, text}, <parts>]}],
//!   max_completion_tokens, stream: true, stream_options}` (+ `ignore_eos`), then sampling.
//!
//! Responses: `data:` chunks ([`crate::chunk::Chunk`]) until `[DONE]`, or one whole JSON body.
//! A chunk's text (completions `text`, chat `content`), reasoning (`reasoning_content`,
//! `reasoning`) and tool-call text (function name and arguments) make it a token event; a
//! chat role chunk with empty content is not one (vLLM counts it as the first token,
//! vllm#15106). `usage.completion_tokens` is cumulative (vLLM's `continuous_usage_stats`).

use std::borrow::Cow;

use servebench_core::{ErrorKind, Result};

use super::{ignore_eos, lay_over, model, not_json, stream_true, ApiEvent, EventUsage, Parsed, Slot};
use crate::backend::{BackendKind, TargetConfig};
use crate::chunk::{Chunk, Text};

/// The fields of a completions or chat body, sampling parameters laid on top.
pub(super) fn body_fields(backend: BackendKind, cfg: &TargetConfig) -> Result<Vec<(String, Slot)>> {
    let include_usage = || Slot::Fixed(r#"{"include_usage":true}"#.to_owned());
    let mut f = vec![model(cfg)?];
    if backend == BackendKind::Chat {
        f.push(("messages".into(), Slot::Messages));
        f.push(("max_completion_tokens".into(), Slot::MaxTokens));
        f.push(stream_true());
        f.push(("stream_options".into(), include_usage()));
    } else {
        f.push(("prompt".into(), Slot::Prompt));
        f.push(("max_tokens".into(), Slot::MaxTokens));
        f.push(stream_true());
        f.push(("stream_options".into(), include_usage()));
        let lp = cfg.logprobs.map_or_else(|| "null".to_owned(), |n| n.to_string());
        f.push(("logprobs".into(), Slot::Fixed(lp)));
    }
    ignore_eos(&mut f, cfg);
    lay_over(&mut f, &cfg.sampling)?;
    Ok(f)
}

/// One `data:` payload of a stream (trimmed).
pub(super) fn parse_event(data: &str) -> Parsed<'_> {
    if data == "[DONE]" {
        return Parsed::Done;
    }
    if data.is_empty() {
        return Parsed::Skip;
    }
    match Chunk::parse(data) {
        Ok(chunk) => from_chunk(chunk, false),
        // JSON's grammar allows a `\u` escape of half a UTF-16 pair (a gateway that cuts text by
        // UTF-16 units sends an emoji's halves in two events; Python's json reads them): read
        // as U+FFFD, so the request keeps its timing instead of failing.
        Err(e) => lossy_surrogates(data, false).unwrap_or_else(|| super::malformed(&e, data)),
    }
}

/// A whole non-streaming body: one terminal event.
pub(super) fn parse_body(body: &str) -> Parsed<'_> {
    match Chunk::parse(body) {
        Ok(chunk) => from_chunk(chunk, true),
        Err(e) => lossy_surrogates(body, true).unwrap_or_else(|| not_json(&e, body)),
    }
}

/// `data` read again with its lone surrogate escapes as U+FFFD (see `chunk::surrogates`), when it
/// has some and then parses; its event owns its text.
fn lossy_surrogates(data: &str, terminal: bool) -> Option<Parsed<'static>> {
    let fixed = crate::chunk::lone_surrogates_replaced(data)?;
    match from_chunk(Chunk::parse(&fixed).ok()?, terminal) {
        Parsed::Event(ev) => Some(Parsed::Event(ev.into_owned())),
        Parsed::Fail(kind, m) => Some(Parsed::Fail(kind, m)),
        _ => None,
    }
}

/// The neutral event of one chunk (choices summed; the first finish reason wins).
fn from_chunk(chunk: Chunk<'_>, terminal: bool) -> Parsed<'_> {
    if let Some(msg) = chunk.error_message() {
        let place = if terminal { "body" } else { "stream" };
        return Parsed::Fail(ErrorKind::ServerError, format!("server error in {place}: {msg}"));
    }
    let usage_only = chunk.choices.is_empty() && chunk.usage.is_some();
    let server_timing = chunk.metrics;
    let mut e = ApiEvent {
        server_id: chunk.id.map(|t| t.0),
        terminal,
        usage_only,
        server_timing,
        ..ApiEvent::default()
    };
    // Cached prompt tokens: `usage.prompt_tokens_details.cached_tokens`, else llama.cpp's
    // `timings.cache_n` (its builds without prompt_tokens_details send only that).
    let cache_n = chunk.timings.and_then(|t| t.cache_n);
    if let Some(u) = chunk.usage {
        let cached = u.prompt_tokens_details.and_then(|d| d.cached_tokens).or(cache_n);
        e.usage = EventUsage { prompt: u.prompt_tokens, completion: u.completion_tokens, cached };
        e.cumulative_completion = u.completion_tokens;
    } else {
        e.usage.cached = cache_n;
    }
    for c in chunk.choices {
        let failed =
            c.finish_reason.as_ref().and_then(|t| ["abort", "error"].into_iter().find(|r| *r == &*t.0));
        if e.finish_reason.is_none() {
            e.finish_reason = c.finish_reason.map(|t| t.0);
        }
        if let Some(reason) = failed {
            // vLLM and SGLang end a request their engine aborted (a KV-cache preemption gone
            // wrong, a scheduler error, an admin abort) with `finish_reason: "abort"`, and vLLM
            // one its engine failed (`FinishReason.ERROR`: a KV-cache load failure) with
            // "error": the generation stopped short, it is not a completed request.
            let place = if terminal { "body" } else { "stream" };
            let what = if reason == "abort" { "aborted the request" } else { "failed the request" };
            return Parsed::Fail(
                ErrorKind::ServerError,
                format!("the server {what} (finish_reason \"{reason}\" in the {place})"),
            );
        }
        append(&mut e.content, c.text);
        for d in [c.delta, c.message].into_iter().flatten() {
            // vLLM sends each reasoning delta twice, as `reasoning` and (its deprecated alias,
            // copied) `reasoning_content`: one text, counted once.
            let reasoning = d.reasoning_content.filter(|t| !t.0.is_empty()).or(d.reasoning);
            append(&mut e.reasoning, reasoning);
            append(&mut e.content, d.content);
            for f in d.tool_calls.into_iter().filter_map(|t| t.function) {
                e.tool_chars += chars(&f.name) + chars(&f.arguments);
            }
        }
    }
    Parsed::Event(e)
}

/// Appends `text` to `to`, borrowing when `to` is still empty (the usual single choice).
fn append<'a>(to: &mut Cow<'a, str>, text: Option<Text<'a>>) {
    match text {
        Some(t) if t.0.is_empty() => {}
        Some(t) if to.is_empty() => *to = t.0,
        Some(t) => to.to_mut().push_str(&t.0),
        None => {}
    }
}

fn chars(t: &Option<Text<'_>>) -> u64 {
    t.as_ref().map_or(0, |t| t.0.chars().count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The neutral event of one chunk's data.
    fn event(data: &str) -> ApiEvent<'_> {
        match parse_event(data) {
            Parsed::Event(e) => e,
            other => panic!("{other:?}"),
        }
    }

    /// Pins vLLM's reasoning deltas, which carry the same text as `reasoning` and as its
    /// deprecated alias `reasoning_content` (copied by the server): counted once. Both were
    /// appended, so a reasoning model's text, tokens and TPOT were doubled.
    #[test]
    fn reasoning_sent_under_both_names_counts_once() {
        let c = event(
            r#"{"choices":[{"index":0,"delta":{"reasoning":" hello","reasoning_content":" hello"},"finish_reason":null}]}"#,
        );
        assert_eq!(c.reasoning, " hello");
        let body = r#"{"choices":[{"message":{"role":"assistant","reasoning":"a b","reasoning_content":"a b","content":"c"},"finish_reason":"stop"}]}"#;
        match parse_body(body) {
            Parsed::Event(e) => assert_eq!((e.reasoning.as_ref(), e.content.as_ref()), ("a b", "c")),
            other => panic!("{other:?}"),
        }
        // Either name alone, or an empty alias beside the other, still counts.
        let c = event(r#"{"choices":[{"delta":{"reasoning":"x","reasoning_content":""}}]}"#);
        assert_eq!(c.reasoning, "x");
    }

    /// Pins an emoji's UTF-16 halves escaped in two events (`\ud83d`, then `\ude00`; valid JSON
    /// grammar, read by Python's json): each read as U+FFFD, a token event; the request failed as
    /// "malformed JSON event".
    #[test]
    fn lone_surrogate_escapes_are_read_as_replacement_characters() {
        let c = event(r#"{"choices":[{"index":0,"delta":{"content":"\ud83d"},"finish_reason":null}]}"#);
        assert_eq!(c.content, "\u{fffd}");
        let c = event(r#"{"choices":[{"index":0,"text":"x\ude00","finish_reason":"length"}]}"#);
        assert_eq!((c.content.as_ref(), c.finish_reason.as_deref()), ("x\u{fffd}", Some("length")));
        match parse_body(r#"{"choices":[{"message":{"content":"a\ud83d"},"finish_reason":"stop"}]}"#) {
            Parsed::Event(e) => assert_eq!(e.content, "a\u{fffd}", "a non-streamed body too"),
            other => panic!("{other:?}"),
        }
        // Still malformed: a bad escape that is not a surrogate.
        assert!(matches!(
            parse_event(r#"{"choices":[{"text":"\q"}]}"#),
            Parsed::Fail(ErrorKind::Protocol, _)
        ));
    }

    /// Pins `finish_reason: "abort"` (vLLM's and SGLang's OpenAI-compatible routes end an
    /// aborted request with it): a failure, as SGLang's native abort is; it counted as a
    /// completed request of the few tokens sent before it.
    #[test]
    fn an_abort_finish_reason_fails_the_request() {
        for data in [
            r#"{"id":"c1","object":"text_completion","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"abort","stop_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"abort"}]}"#,
        ] {
            match parse_event(data) {
                Parsed::Fail(ErrorKind::ServerError, m) => assert!(m.contains("aborted"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        // Any choice's abort (n > 1), not only the first finish reason's.
        let two = r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"},{"index":1,"delta":{},"finish_reason":"abort"}]}"#;
        assert!(matches!(parse_event(two), Parsed::Fail(ErrorKind::ServerError, _)));
        match parse_body(r#"{"choices":[{"message":{"content":"ab"},"finish_reason":"abort"}]}"#) {
            Parsed::Fail(ErrorKind::ServerError, m) => assert!(m.contains("in the body"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    /// Pins `finish_reason: "error"` (vLLM's `FinishReason.ERROR`, a request its engine
    /// failed): it counted as a completed request of the 2 tokens sent before it, as "abort"
    /// once did. A failure (`server_error`) now, named.
    #[test]
    fn an_error_finish_reason_fails_the_request() {
        let data = r#"{"id":"c","object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"error","logprobs":null}]}"#;
        match parse_event(data) {
            Parsed::Fail(ErrorKind::ServerError, m) => {
                assert!(m.contains("failed the request (finish_reason \"error\" in the stream)"), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reasoning_and_escapes() {
        let c = event(
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"Let me\nthink \"é\""},"finish_reason":null}]}"#,
        );
        assert_eq!(c.reasoning, "Let me\nthink \"é\"");
        assert!(c.is_token_event());
        let c = event(r#"{"choices":[{"delta":{"reasoning":"hm"}}]}"#);
        assert_eq!(c.reasoning, "hm");
    }

    #[test]
    fn tool_call_arguments_count() {
        let c = event(
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"a\""}}]},"finish_reason":null}]}"#,
        );
        assert_eq!(c.tool_chars, 3 + 4);
        assert!(c.is_token_event());
    }

    #[test]
    fn sglang_chunk_with_matched_stop_and_usage_null() {
        let c = event(
            r#"{"id":"b1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":null,"content":"Hi","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":"stop","matched_stop":2}],"usage":null}"#,
        );
        assert_eq!(c.finish_reason.as_deref(), Some("stop"));
        assert_eq!(c.content, "Hi");
    }

    #[test]
    fn llama_cpp_chunk_with_timings() {
        let c = event(
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" the"}}],"created":1,"id":"chatcmpl-x","model":"gpt","system_fingerprint":"b1","object":"chat.completion.chunk","timings":{"prompt_n":5,"predicted_ms":1.5}}"#,
        );
        assert_eq!(c.content, " the");
    }

    #[test]
    fn llama_cpp_cache_n_gives_the_cached_tokens_when_usage_has_no_details() {
        // A llama.cpp completions finish chunk: usage without prompt_tokens_details, timings.
        let c = event(
            r#"{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"created":1,"model":"m","system_fingerprint":"b1","object":"text_completion","usage":{"completion_tokens":4,"prompt_tokens":100,"total_tokens":104},"id":"chatcmpl-x","timings":{"cache_n":64,"prompt_n":36,"prompt_ms":3.1,"prompt_per_token_ms":0.09,"prompt_per_second":11000.0,"predicted_n":4,"predicted_ms":2.0,"predicted_per_token_ms":0.5,"predicted_per_second":2000.0}}"#,
        );
        assert_eq!((c.usage.prompt, c.usage.cached, c.usage.completion), (Some(100), Some(64), Some(4)));
        // prompt_tokens_details wins over timings when both are sent.
        let c = event(
            r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":48}},"timings":{"cache_n":64}}"#,
        );
        assert_eq!(c.usage.cached, Some(48));
        // Timings alone (a chat finish chunk without include_usage): only the cached count.
        let c = event(
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"timings":{"cache_n":16,"prompt_n":4}}"#,
        );
        assert_eq!((c.usage.prompt, c.usage.cached), (None, Some(16)));
    }

    #[test]
    fn tgi_openai_chunk_and_dynamo_usage_with_choices() {
        let c = event(
            r#"{"object":"chat.completion.chunk","id":"","created":1,"model":"m","system_fingerprint":"3.0","choices":[{"index":0,"delta":{"role":"assistant","content":"Deep"},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}"#,
        );
        assert_eq!(c.finish_reason.as_deref(), Some("length"));
        assert_eq!((c.usage.completion, c.cumulative_completion), (Some(3), Some(3)));
        assert!(c.is_token_event());
    }

    #[test]
    fn non_streaming_message() {
        let c = event(
            r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
        );
        assert_eq!(c.content, "Hello there");
        assert!(matches!(c.content, Cow::Borrowed(_)), "one choice's text is borrowed");
    }

    #[test]
    fn several_choices_and_parts_are_joined_into_one_event() {
        let c = event(
            r#"{"choices":[{"text":"a","delta":{"reasoning":"r1","content":"b"}},{"delta":{"reasoning_content":"r2","content":"c"},"finish_reason":"stop"},{"finish_reason":"length"}]}"#,
        );
        assert_eq!((c.content.as_ref(), c.reasoning.as_ref()), ("abc", "r1r2"));
        assert_eq!(c.finish_reason.as_deref(), Some("stop"), "the first finish reason wins");
    }

    #[test]
    fn a_whole_body_is_one_terminal_event_and_an_error_member_fails() {
        let Parsed::Event(e) = parse_body(r#"{"choices":[{"message":{"content":"x"}}]}"#) else { panic!() };
        assert!(e.terminal);
        assert!(
            matches!(parse_body("{oops"), Parsed::Fail(ErrorKind::Protocol, m) if m.starts_with("response is not JSON"))
        );
        let err = parse_event(r#"{"error":{"message":"out of memory"}}"#);
        assert!(
            matches!(err, Parsed::Fail(ErrorKind::ServerError, m) if m == "server error in stream: out of memory")
        );
        // A whole body's error is not "in stream".
        let err = parse_body(r#"{"object":"error","message":"bad input"}"#);
        assert!(
            matches!(err, Parsed::Fail(ErrorKind::ServerError, m) if m == "server error in body: bad input")
        );
        assert!(matches!(parse_event("[DONE]"), Parsed::Done));
        assert!(matches!(parse_event(""), Parsed::Skip));
    }
}
