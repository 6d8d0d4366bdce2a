//! Streamed answers of the native dialects, formatted per event like the real servers send
//! them (what the client's parsers in `servebench-client/src/api/` read):
//!
//! - TGI `/generate_stream`: one `data:{"index","token":{…},"generated_text":null,"details":null}`
//!   event per token (no space after `data:`); the last token's event carries the whole
//!   `generated_text` and, with `details: true`, `details` (`finish_reason` `length` or
//!   `eos_token`, `generated_tokens`, `input_length`, `seed`). No `[DONE]`.
//! - SGLang `/generate`: `data: {"text": <cumulative text>, "meta_info": {"id", "finish_reason",
//!   "prompt_tokens", "completion_tokens", "cached_tokens"}, "index": 0}` per event, the last
//!   with `finish_reason` `{"type": "length", "length": N}` or `{"type": "stop", "matched": …}`,
//!   then `data: [DONE]`.
//! - llama.cpp `/completion`: one `data: {"index":0,"content","tokens":[],"stop":false,…}` per
//!   token, then a final event with `stop: true`, `stop_type` (`limit`, `eos`),
//!   `tokens_predicted`, `tokens_evaluated`, `timings`. No `[DONE]`.
//! - Anthropic `/v1/messages`: `message_start` (usage `input_tokens`), `content_block_start`,
//!   `ping`, then `content_block_delta` (`text_delta`) per event, `content_block_stop`,
//!   `message_delta` (`stop_reason` `max_tokens` or `end_turn`, usage `output_tokens`),
//!   `message_stop`; every event with its `event:` line.
//!
//! Only the first choice is streamed (these APIs have one output per request).

use std::io::Write;

use crate::plan::Finish;
use crate::sse::json_str;
use crate::vocab::OutputVocab;

/// Which native stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NativeKind {
    Tgi { details: bool },
    Sglang,
    LlamaCpp,
    Anthropic,
}

/// Per-request formatting state of a native stream.
#[derive(Debug)]
pub(crate) struct NativeFormat {
    kind: NativeKind,
    id: String,
    model: String,
    prompt_tokens: u32,
    /// The choice's seed and token count (for TGI's final `generated_text`, SGLang's
    /// cumulative text).
    seed: u64,
    tokens: u32,
    finish: Finish,
    received: std::time::Instant,
}

impl NativeFormat {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        kind: NativeKind,
        id: &str,
        model: &str,
        prompt_tokens: u32,
        seed: u64,
        tokens: u32,
        finish: Finish,
        received: std::time::Instant,
    ) -> Self {
        NativeFormat {
            kind,
            id: id.to_owned(),
            model: model.to_owned(),
            prompt_tokens,
            seed,
            tokens,
            finish,
            received,
        }
    }

    /// The events before the first token (Anthropic's `message_start`, block start, ping).
    pub(crate) fn push_start(&self, out: &mut Vec<u8>) {
        if self.kind != NativeKind::Anthropic {
            return;
        }
        let _ = write!(
            out,
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":{},\"type\":\"message\",\
             \"role\":\"assistant\",\"content\":[],\"model\":{},\"stop_reason\":null,\"stop_sequence\":null,\
             \"usage\":{{\"input_tokens\":{},\"output_tokens\":1}}}}}}\n\n\
             event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\
             \"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
             event: ping\ndata: {{\"type\": \"ping\"}}\n\n",
            json_str(&self.id),
            json_str(&self.model),
            self.prompt_tokens
        );
    }

    /// The events of tokens `[start, start + n)` of the first choice (`pos` 0; other choices
    /// are not streamed). `last`: these include the choice's last token.
    pub(crate) fn push_tokens(&self, out: &mut Vec<u8>, vocab: &OutputVocab, start: u64, n: u32, last: bool) {
        let seed = self.seed;
        match self.kind {
            NativeKind::Tgi { details } => {
                for i in start..start + u64::from(n) {
                    let final_token = last && i + 1 == start + u64::from(n);
                    let _ = write!(
                        out,
                        "data:{{\"index\":{},\"token\":{{\"id\":{},\"text\":\"",
                        i + 1,
                        vocab.word_id(seed, i)
                    );
                    out.extend_from_slice(vocab.word(seed, i).as_bytes());
                    out.extend_from_slice(b"\",\"logprob\":-0.5,\"special\":false},\"generated_text\":");
                    if final_token {
                        out.push(b'"');
                        vocab.push_text(seed, 0, u64::from(self.tokens), out);
                        out.push(b'"');
                        if details {
                            let reason = if self.finish == Finish::Length { "length" } else { "eos_token" };
                            let _ = write!(
                                out,
                                ",\"details\":{{\"finish_reason\":\"{reason}\",\"generated_tokens\":{},\
                                 \"input_length\":{},\"seed\":null}}}}\n\n",
                                self.tokens, self.prompt_tokens
                            );
                        } else {
                            out.extend_from_slice(b",\"details\":null}\n\n");
                        }
                    } else {
                        out.extend_from_slice(b"null,\"details\":null}\n\n");
                    }
                }
            }
            NativeKind::Sglang => {
                let done = start + u64::from(n);
                out.extend_from_slice(b"data: {\"text\":\"");
                vocab.push_text(seed, 0, done, out);
                let _ = write!(out, "\",\"meta_info\":{{\"id\":{},\"finish_reason\":", json_str(&self.id));
                match (last, self.finish) {
                    (false, _) => out.extend_from_slice(b"null"),
                    (true, Finish::Length) => {
                        let _ = write!(out, "{{\"type\":\"length\",\"length\":{}}}", self.tokens);
                    }
                    (true, Finish::Stop) => out.extend_from_slice(b"{\"type\":\"stop\",\"matched\":2}"),
                }
                let _ = write!(
                    out,
                    ",\"prompt_tokens\":{},\"completion_tokens\":{done},\"cached_tokens\":0}},\"index\":0}}\n\n",
                    self.prompt_tokens
                );
            }
            NativeKind::LlamaCpp => {
                for i in start..start + u64::from(n) {
                    out.extend_from_slice(b"data: {\"index\":0,\"content\":\"");
                    out.extend_from_slice(vocab.word(seed, i).as_bytes());
                    let _ = write!(
                        out,
                        "\",\"tokens\":[],\"stop\":false,\"id_slot\":0,\"tokens_predicted\":{},\"tokens_evaluated\":{}}}\n\n",
                        i + 1,
                        self.prompt_tokens
                    );
                }
            }
            NativeKind::Anthropic => {
                out.extend_from_slice(
                    b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"",
                );
                vocab.push_text(seed, start, u64::from(n), out);
                out.extend_from_slice(b"\"}}\n\n");
            }
        }
    }

    /// The events after the last token.
    pub(crate) fn push_end(&self, out: &mut Vec<u8>) {
        match self.kind {
            NativeKind::Tgi { .. } => {}
            NativeKind::Sglang => out.extend_from_slice(b"data: [DONE]\n\n"),
            NativeKind::LlamaCpp => {
                out.extend_from_slice(b"data: ");
                self.push_llamacpp_final(out, false, None);
                out.extend_from_slice(b"\n\n");
            }
            NativeKind::Anthropic => {
                let reason = if self.finish == Finish::Length { "max_tokens" } else { "end_turn" };
                let _ = write!(
                    out,
                    "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
                     event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{reason}\",\
                     \"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{}}}}}\n\n\
                     event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
                    self.tokens
                );
            }
        }
    }

    /// llama.cpp's final object: the stream's last event (`content` empty) or the whole
    /// non-streamed answer (`content` the full text, given by `text`).
    pub(crate) fn push_llamacpp_final(&self, out: &mut Vec<u8>, full: bool, vocab: Option<&OutputVocab>) {
        out.extend_from_slice(b"{\"index\":0,\"content\":\"");
        if let (true, Some(v)) = (full, vocab) {
            v.push_text(self.seed, 0, u64::from(self.tokens), out);
        }
        let stop_type = if self.finish == Finish::Length { "limit" } else { "eos" };
        let ms = self.received.elapsed().as_secs_f64() * 1000.0;
        let _ = write!(
            out,
            "\",\"tokens\":[],\"id_slot\":0,\"stop\":true,\"model\":{},\"tokens_predicted\":{n},\
             \"tokens_evaluated\":{p},\"prompt\":\"\",\"has_new_line\":false,\"truncated\":false,\
             \"stop_type\":\"{stop_type}\",\"stopping_word\":\"\",\"tokens_cached\":{},\
             \"timings\":{{\"cache_n\":0,\"prompt_n\":{p},\"predicted_n\":{n},\"predicted_ms\":{ms:.3}}}}}",
            json_str(&self.model),
            u64::from(self.prompt_tokens) + u64::from(self.tokens),
            n = self.tokens,
            p = self.prompt_tokens,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::NullTok;

    fn events(out: &[u8]) -> Vec<serde_json::Value> {
        std::str::from_utf8(out)
            .unwrap()
            .split("\n\n")
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.lines().find_map(|l| l.strip_prefix("data:")).map(str::trim))
            .filter(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    fn fmt(kind: NativeKind, finish: Finish) -> NativeFormat {
        NativeFormat::new(kind, "x1", "m", 4, 9, 3, finish, std::time::Instant::now())
    }

    #[test]
    fn tgi_one_event_per_token_and_details_last() {
        let v = OutputVocab::build(&NullTok);
        let f = fmt(NativeKind::Tgi { details: true }, Finish::Length);
        let mut out = Vec::new();
        f.push_tokens(&mut out, &v, 0, 2, false);
        f.push_tokens(&mut out, &v, 2, 1, true);
        f.push_end(&mut out);
        let e = events(&out);
        assert_eq!(e.len(), 3);
        assert!(e[0]["generated_text"].is_null());
        assert_eq!(e[2]["generated_text"], " the the the");
        assert_eq!(e[2]["details"]["generated_tokens"], 3);
        assert_eq!(e[2]["details"]["input_length"], 4);
    }

    #[test]
    fn sglang_text_is_cumulative() {
        let v = OutputVocab::build(&NullTok);
        let f = fmt(NativeKind::Sglang, Finish::Stop);
        let mut out = Vec::new();
        f.push_tokens(&mut out, &v, 0, 1, false);
        f.push_tokens(&mut out, &v, 1, 2, true);
        f.push_end(&mut out);
        assert!(out.ends_with(b"data: [DONE]\n\n"));
        let e = events(&out);
        assert_eq!(e[1]["text"], " the the the");
        assert_eq!(e[1]["meta_info"]["finish_reason"]["type"], "stop");
        assert_eq!(e[1]["meta_info"]["completion_tokens"], 3);
    }

    #[test]
    fn llamacpp_and_anthropic_shapes() {
        let v = OutputVocab::build(&NullTok);
        let f = fmt(NativeKind::LlamaCpp, Finish::Length);
        let mut out = Vec::new();
        f.push_tokens(&mut out, &v, 0, 3, true);
        f.push_end(&mut out);
        let e = events(&out);
        assert_eq!(e.len(), 4);
        assert_eq!(e[3]["stop"], true);
        assert_eq!(e[3]["stop_type"], "limit");
        assert_eq!(e[3]["tokens_predicted"], 3);
        let f = fmt(NativeKind::Anthropic, Finish::Stop);
        let mut out = Vec::new();
        f.push_start(&mut out);
        f.push_tokens(&mut out, &v, 0, 3, true);
        f.push_end(&mut out);
        let text = String::from_utf8(out.clone()).unwrap();
        let names: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        let e = events(&out);
        assert_eq!(e[0]["message"]["usage"]["input_tokens"], 4);
        assert_eq!(e[5]["delta"]["stop_reason"], "end_turn");
        assert_eq!(e[5]["usage"]["output_tokens"], 3);
    }
}
