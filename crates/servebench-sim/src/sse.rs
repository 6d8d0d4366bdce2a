//! SSE chunk formatting for streamed completions and chat completions, byte-compatible with
//! vLLM's output. The constant parts of every chunk (id, created, model, choice index) are
//! formatted once per request; each event is then `head + text + tail` copied into one buffer.
//!
//! Layout (one `data: {...}\n\n` event per line):
//! - completions: `{"id","object":"text_completion","created","model","choices":[{"index",
//!   "text","logprobs":null,"finish_reason":null|"length"|"stop","stop_reason":null}]}`
//! - chat: a role chunk `delta: {"role":"assistant","content":""}` per choice first, then
//!   `delta: {"content": ...}` chunks; the last chunk of a choice carries `finish_reason` and
//!   `stop_reason: null`, as vLLM's does.
//! - with `stream_options.include_usage`: a final chunk with `"choices":[]` and `usage`; with
//!   `continuous_usage_stats`, every chunk carries the running `usage` too.
//! - `data: [DONE]` last.

use std::io::Write;

use crate::config::ReasoningField;
use crate::plan::{Finish, GenerationPlan};

/// Which OpenAI API a response speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Completions,
    Chat,
    /// `/v1/responses` (event-typed SSE; `sse_responses.rs`).
    Responses,
}

impl Api {
    pub(crate) fn path(self) -> &'static str {
        match self {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
            Api::Responses => "/v1/responses",
        }
    }

    pub(crate) fn id_prefix(self) -> &'static str {
        match self {
            Api::Completions => "cmpl-",
            Api::Chat => "chatcmpl-",
            Api::Responses => "resp_",
        }
    }
}

/// What the client asked for in `stream_options`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct UsageOptions {
    pub include_usage: bool,
    pub continuous: bool,
    pub details: bool,
}

/// JSON string literal of `s` (with quotes).
pub(crate) fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

/// Per-request chunk templates.
#[derive(Debug)]
pub(crate) struct StreamFormat {
    api: Api,
    /// `{"id":…,"object":…,"created":…,"model":…` (no closing brace).
    common: Vec<u8>,
    /// Per choice (in plan order): `data: ` + common + `,"choices":[{"index":i,` + text opener.
    heads: Vec<Vec<u8>>,
    usage: UsageOptions,
    prompt_tokens: u32,
    /// `usage.prompt_tokens_details.cached_tokens` (set by the engine's prefix cache).
    cached_tokens: u32,
    /// Chat: per choice, the head of a reasoning delta (`"delta":{"reasoning":"`); empty when
    /// the request has no reasoning tokens.
    reasoning_heads: Vec<Vec<u8>>,
    /// Chat: each reasoning text is written again as `reasoning_content` (current vLLM).
    reasoning_alias: bool,
    /// The Responses API's event formatting (`Api::Responses` only).
    responses: Option<crate::sse_responses::ResponsesFormat>,
    /// Personality bytes, fixed per request (`with_behaviour`): the tail of an event without
    /// a finish reason, the bytes after a finish reason, the role chunk's content.
    none_tail: &'static [u8],
    finish_tail: &'static [u8],
    role_content: &'static str,
    /// Completions: usage rides in the finish chunk (llama.cpp), with the whole request's
    /// completion tokens; no separate usage chunk.
    usage_in_finish: bool,
    /// llama.cpp's `timings` object in the final chunk(s), and when the request was received.
    timings: Option<std::time::Instant>,
    completion_total: u32,
    /// A native dialect's stream (TGI, SGLang, llama.cpp, Anthropic) instead of chunks.
    native: Option<crate::sse_native::NativeFormat>,
    /// No chat role chunk (vLLM's transcription stream has none).
    no_role: bool,
}

impl StreamFormat {
    pub(crate) fn new(
        api: Api,
        id: &str,
        created: u64,
        model: &str,
        plan: &GenerationPlan,
        usage: UsageOptions,
    ) -> Self {
        let object = match api {
            Api::Completions => "text_completion",
            Api::Chat => "chat.completion.chunk",
            Api::Responses => "response",
        };
        let common = format!(
            "{{\"id\":{},\"object\":\"{object}\",\"created\":{created},\"model\":{}",
            json_str(id),
            json_str(model)
        )
        .into_bytes();
        let opener: &[u8] = match api {
            Api::Completions | Api::Responses => b"\"text\":\"",
            Api::Chat => b"\"delta\":{\"content\":\"",
        };
        let heads = plan
            .choices
            .iter()
            .map(|c| {
                let mut h = Vec::with_capacity(common.len() + 48);
                h.extend_from_slice(b"data: ");
                h.extend_from_slice(&common);
                let _ = write!(h, ",\"choices\":[{{\"index\":{},", c.index);
                h.extend_from_slice(opener);
                h
            })
            .collect();
        let responses = (api == Api::Responses).then(|| {
            crate::sse_responses::ResponsesFormat::new(id, created, model, plan.prompt_tokens, usage.details)
        });
        StreamFormat {
            api,
            common,
            heads,
            usage,
            prompt_tokens: plan.prompt_tokens,
            cached_tokens: 0,
            reasoning_heads: Vec::new(),
            reasoning_alias: false,
            responses,
            none_tail: if api == Api::Chat { b"null}]" } else { b"null,\"stop_reason\":null}]" },
            finish_tail: b"\",\"stop_reason\":null}]",
            role_content: "\"\"",
            usage_in_finish: false,
            timings: None,
            completion_total: plan.completion_tokens(),
            native: None,
            no_role: false,
        }
    }

    /// Streams in a native dialect instead of OpenAI chunks.
    pub(crate) fn with_native(mut self, native: crate::sse_native::NativeFormat) -> Self {
        self.native = Some(native);
        self
    }

    /// A chat-shaped stream with another `object` and no role chunk (vLLM's
    /// `transcription.chunk`).
    pub(crate) fn with_object(mut self, object: &str) -> Self {
        let from = b"\"object\":\"chat.completion.chunk\"".as_slice();
        let to = format!("\"object\":\"{object}\"").into_bytes();
        let swap = |v: &mut Vec<u8>| {
            if let Some(at) = v.windows(from.len()).position(|w| w == from) {
                v.splice(at..at + from.len(), to.iter().copied());
            }
        };
        swap(&mut self.common);
        for h in &mut self.heads {
            swap(h);
        }
        self.no_role = true;
        self
    }

    /// Appends the content of tokens `[start, start + n)` of choice `pos` (seeded by `seed`):
    /// one content event, or the native dialect's events.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_content(
        &self,
        pos: usize,
        out: &mut Vec<u8>,
        vocab: &crate::vocab::OutputVocab,
        seed: u64,
        start: u64,
        n: u32,
        finish: Option<Finish>,
        completion_so_far: u32,
    ) {
        if let Some(nf) = &self.native {
            if pos == 0 {
                nf.push_tokens(out, vocab, start, n, finish.is_some());
            }
            return;
        }
        self.push_event(
            pos,
            out,
            |o| vocab.push_text(seed, start, u64::from(n), o),
            finish,
            completion_so_far,
        );
    }

    /// Applies a personality's chunk layout (`stop_reason`, role chunk content, where usage
    /// rides, `timings`). The default personality's layout is what `new` sets.
    pub(crate) fn with_behaviour(
        mut self,
        b: &crate::personality::Behaviour,
        received: std::time::Instant,
    ) -> Self {
        if !b.stop_reason {
            self.none_tail = b"null}]";
            self.finish_tail = b"\"}]";
        }
        if b.role_content_null {
            self.role_content = "null";
        }
        self.usage_in_finish = self.api == Api::Completions
            && b.completions_usage == crate::personality::UsagePlacement::InFinishChunk;
        self.timings = b.timings.then_some(received);
        self
    }

    /// llama.cpp's `timings` member (with a leading comma).
    fn push_timings(&self, out: &mut Vec<u8>, completion: u32) {
        if let Some(received) = self.timings {
            let ms = received.elapsed().as_secs_f64() * 1000.0;
            let per_s = if ms > 0.0 { f64::from(completion) * 1000.0 / ms } else { 0.0 };
            let _ = write!(
                out,
                ",\"timings\":{{\"cache_n\":{},\"prompt_n\":{},\"predicted_n\":{completion},\
                 \"predicted_ms\":{ms:.3},\"predicted_per_second\":{per_s:.3}}}",
                self.cached_tokens,
                self.prompt_tokens.saturating_sub(self.cached_tokens)
            );
        }
    }

    /// Chat: reasoning deltas go into `field` (`reasoning` or `reasoning_content`, or both with
    /// the same text). Call before the first event when the request has reasoning tokens.
    pub(crate) fn with_reasoning(mut self, field: ReasoningField, plan: &GenerationPlan) -> Self {
        self.reasoning_alias = field.with_alias();
        let field = field.as_str();
        if self.api == Api::Chat {
            self.reasoning_heads = plan
                .choices
                .iter()
                .map(|c| {
                    let mut h = Vec::with_capacity(self.common.len() + 64);
                    h.extend_from_slice(b"data: ");
                    h.extend_from_slice(&self.common);
                    let _ = write!(h, ",\"choices\":[{{\"index\":{},\"delta\":{{\"{field}\":\"", c.index);
                    h
                })
                .collect();
        }
        self
    }

    /// Appends one reasoning event of choice `pos` (chat: a reasoning delta; Responses: a
    /// `response.reasoning_text.delta`; completions have no reasoning and get a content event).
    pub(crate) fn push_reasoning_event(
        &self,
        pos: usize,
        out: &mut Vec<u8>,
        fill: impl FnOnce(&mut Vec<u8>),
        finish: Option<Finish>,
        completion_so_far: u32,
    ) {
        if let Some(r) = &self.responses {
            r.push_delta(out, true, fill, finish);
            return;
        }
        let Some(head) = self.reasoning_heads.get(pos) else {
            self.push_event(pos, out, fill, finish, completion_so_far);
            return;
        };
        out.extend_from_slice(head);
        let text_at = out.len();
        fill(out);
        if self.reasoning_alias {
            let text = out[text_at..].to_vec();
            out.extend_from_slice(b"\",\"reasoning_content\":\"");
            out.extend_from_slice(&text);
        }
        out.extend_from_slice(b"\"}");
        self.push_tail(out, finish, completion_so_far);
    }

    /// Responses: how many output tokens were reasoning (`output_tokens_details`).
    pub(crate) fn set_reasoning_tokens(&self, n: u32) {
        if let Some(r) = &self.responses {
            r.set_reasoning_tokens(n);
        }
    }

    /// Sets the `cached_tokens` reported in usage chunks.
    pub(crate) fn set_cached_tokens(&mut self, n: u32) {
        self.cached_tokens = n;
    }

    fn usage_json(&self, out: &mut Vec<u8>, completion: u32) {
        let p = self.prompt_tokens;
        let _ = write!(
            out,
            "\"usage\":{{\"prompt_tokens\":{p},\"total_tokens\":{},\"completion_tokens\":{completion}",
            u64::from(p) + u64::from(completion)
        );
        if self.usage.details {
            let _ = write!(out, ",\"prompt_tokens_details\":{{\"cached_tokens\":{}}}", self.cached_tokens);
        }
        out.push(b'}');
    }

    /// Appends the chat role chunk of choice `pos` (no-op for completions).
    pub(crate) fn push_role_chunk(&self, pos: usize, index: u32, out: &mut Vec<u8>) {
        if let Some(n) = &self.native {
            if pos == 0 {
                n.push_start(out);
            }
            return;
        }
        if let Some(r) = &self.responses {
            if pos == 0 {
                r.push_start(out);
            }
            return;
        }
        if self.api != Api::Chat || pos >= self.heads.len() || self.no_role {
            return;
        }
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(&self.common);
        let _ = write!(
            out,
            ",\"choices\":[{{\"index\":{index},\"delta\":{{\"role\":\"assistant\",\"content\":{}}},\
             \"logprobs\":null,\"finish_reason\":null}}]",
            self.role_content
        );
        if self.usage.continuous {
            out.push(b',');
            self.usage_json(out, 0);
        }
        out.extend_from_slice(b"}\n\n");
    }

    /// Appends one content event of choice `pos`: `head`, then `text` is written by `fill`
    /// (plain ASCII words, no escaping needed), then the tail with `finish` and, for continuous
    /// usage, `completion_so_far` (tokens of the whole request generated so far).
    pub(crate) fn push_event(
        &self,
        pos: usize,
        out: &mut Vec<u8>,
        fill: impl FnOnce(&mut Vec<u8>),
        finish: Option<Finish>,
        completion_so_far: u32,
    ) {
        if let Some(r) = &self.responses {
            r.push_delta(out, false, fill, finish);
            return;
        }
        let Some(head) = self.heads.get(pos) else { return };
        out.extend_from_slice(head);
        fill(out);
        if self.api == Api::Chat {
            out.extend_from_slice(b"\"}");
        } else {
            out.push(b'"');
        }
        self.push_tail(out, finish, completion_so_far);
    }

    /// The rest of an event after its text: finish reason, optional usage, closing braces.
    fn push_tail(&self, out: &mut Vec<u8>, finish: Option<Finish>, completion_so_far: u32) {
        out.extend_from_slice(b",\"logprobs\":null,\"finish_reason\":");
        match finish {
            None => out.extend_from_slice(self.none_tail),
            Some(f) => {
                out.push(b'"');
                out.extend_from_slice(f.as_str().as_bytes());
                out.extend_from_slice(self.finish_tail);
            }
        }
        if self.usage.continuous {
            out.push(b',');
            self.usage_json(out, completion_so_far);
        } else if self.usage_in_finish && finish.is_some() {
            out.push(b',');
            self.usage_json(out, self.completion_total);
        }
        if finish.is_some() {
            self.push_timings(out, self.completion_total);
        }
        out.extend_from_slice(b"}\n\n");
    }

    /// Appends the usage chunk (if asked for) and, when `done_marker` (false only to inject a
    /// stream that ends without it), `data: [DONE]`.
    pub(crate) fn push_end(&self, out: &mut Vec<u8>, completion: u32, done_marker: bool) {
        if let Some(n) = &self.native {
            n.push_end(out);
            return;
        }
        if let Some(r) = &self.responses {
            r.push_end(out, completion, self.cached_tokens);
            return;
        }
        if self.usage.include_usage && !self.usage_in_finish {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(&self.common);
            out.extend_from_slice(b",\"choices\":[],");
            self.usage_json(out, completion);
            self.push_timings(out, completion);
            out.extend_from_slice(b"}\n\n");
        }
        if done_marker {
            out.extend_from_slice(b"data: [DONE]\n\n");
        }
    }

    /// Appends an event whose JSON is cut off in the middle of the first choice's text (fault
    /// injection: a malformed event; Responses: a delta of the open output item).
    pub(crate) fn push_malformed(&self, out: &mut Vec<u8>) {
        if let Some(r) = &self.responses {
            r.push_malformed(out);
            return;
        }
        match self.heads.first() {
            Some(head) => out.extend_from_slice(head),
            None => out.extend_from_slice(b"data: {"),
        }
        out.extend_from_slice(b" cut\n\n");
    }

    /// Appends one valid token event with `n` bytes of text (fault injection: an oversized
    /// event): a content event of the first choice; Responses: a delta of the open output item.
    pub(crate) fn push_oversized(&self, out: &mut Vec<u8>, n: usize, completion_so_far: u32) {
        let fill = |o: &mut Vec<u8>| o.resize(o.len() + n, b'x');
        match &self.responses {
            Some(r) => r.push_oversized(out, fill),
            None => self.push_event(0, out, fill, None, completion_so_far),
        }
    }

    /// Typical size of one event, for buffer capacity.
    pub(crate) fn event_capacity(&self) -> usize {
        self.heads.first().map(|h| h.len()).unwrap_or(64) + 96
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ChoicePlan;

    fn plan(n: usize) -> GenerationPlan {
        GenerationPlan {
            prompt_tokens: 7,
            choices: (0..n)
                .map(|i| ChoicePlan { index: i as u32, tokens: 2, finish: Finish::Length, seed: 1 })
                .collect(),
            tokens_per_event: 1,
        }
    }

    fn lines(out: &[u8]) -> Vec<serde_json::Value> {
        std::str::from_utf8(out)
            .unwrap()
            .split("\n\n")
            .filter(|s| !s.is_empty() && *s != "data: [DONE]")
            .map(|s| serde_json::from_str(s.strip_prefix("data: ").unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn completion_events_are_valid_json() {
        let usage = UsageOptions { include_usage: true, ..Default::default() };
        let f = StreamFormat::new(Api::Completions, "cmpl-1", 5, "m\"x", &plan(1), usage);
        let mut out = Vec::new();
        f.push_role_chunk(0, 0, &mut out);
        assert!(out.is_empty());
        f.push_event(0, &mut out, |o| o.extend_from_slice(b" the"), None, 1);
        f.push_event(0, &mut out, |o| o.extend_from_slice(b" of"), Some(Finish::Length), 2);
        f.push_end(&mut out, 2, true);
        assert!(out.ends_with(b"data: [DONE]\n\n"));
        let v = lines(&out);
        assert_eq!(v.len(), 3);
        assert_eq!(v[0]["model"], "m\"x");
        assert_eq!(v[0]["object"], "text_completion");
        assert_eq!(v[0]["choices"][0]["text"], " the");
        assert!(v[0]["choices"][0]["finish_reason"].is_null());
        assert_eq!(v[1]["choices"][0]["finish_reason"], "length");
        assert_eq!(v[2]["choices"].as_array().unwrap().len(), 0);
        assert_eq!(v[2]["usage"]["completion_tokens"], 2);
        assert_eq!(v[2]["usage"]["total_tokens"], 9);
        assert!(v[2]["usage"].get("prompt_tokens_details").is_none());
    }

    #[test]
    fn end_without_done_and_malformed_events() {
        let usage = UsageOptions { include_usage: true, ..Default::default() };
        let f = StreamFormat::new(Api::Chat, "chatcmpl-1", 5, "m", &plan(1), usage);
        let mut out = Vec::new();
        f.push_end(&mut out, 2, false);
        assert!(!out.windows(6).any(|w| w == b"[DONE]"));
        assert_eq!(lines(&out).len(), 1, "the usage chunk is still sent");
        let mut out = Vec::new();
        f.push_malformed(&mut out);
        let s = std::str::from_utf8(&out).unwrap();
        assert!(s.starts_with("data: {") && s.ends_with("\n\n"));
        assert!(serde_json::from_str::<serde_json::Value>(s[6..].trim_end()).is_err());
    }

    #[test]
    fn chat_events_have_role_first_and_optional_usage() {
        let usage = UsageOptions { include_usage: false, continuous: true, details: true };
        let f = StreamFormat::new(Api::Chat, "chatcmpl-1", 5, "m", &plan(2), usage);
        let mut out = Vec::new();
        f.push_role_chunk(1, 1, &mut out);
        f.push_event(1, &mut out, |o| o.extend_from_slice(b" a"), Some(Finish::Stop), 1);
        f.push_end(&mut out, 1, true);
        let v = lines(&out);
        assert_eq!(v.len(), 2, "no usage chunk unless include_usage");
        assert_eq!(v[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(v[0]["choices"][0]["delta"]["content"], "");
        assert_eq!(v[0]["choices"][0]["index"], 1);
        assert_eq!(v[0]["usage"]["completion_tokens"], 0);
        assert_eq!(v[1]["object"], "chat.completion.chunk");
        assert_eq!(v[1]["choices"][0]["delta"]["content"], " a");
        assert_eq!(v[1]["choices"][0]["finish_reason"], "stop");
        assert!(v[1]["choices"][0]["stop_reason"].is_null());
        assert_eq!(v[1]["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    }
}
