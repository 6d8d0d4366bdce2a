//! The Responses API's event-typed SSE stream (`POST /v1/responses` with `stream: true`), in
//! the shape OpenAI and vLLM send (every event has an `event:` line and a `type` field equal to
//! it, plus a `sequence_number`; there is no `[DONE]`):
//!
//! ```text
//! response.created, response.in_progress                    (first tick)
//! [response.output_item.added {type: reasoning}]            (when reasoning tokens are planned)
//!   response.reasoning_text.delta …
//!   response.reasoning_text.done, response.output_item.done
//! response.output_item.added {type: message}, response.content_part.added
//!   response.output_text.delta …
//!   response.output_text.done, response.content_part.done, response.output_item.done
//! response.completed | response.incomplete {usage}          (last tick)
//! ```
//!
//! The `*.done` events carry ids and status but not the accumulated text (clients that
//! benchmark read the deltas). A request that stopped at `max_output_tokens` ends with
//! `response.incomplete` (`incomplete_details.reason = "max_output_tokens"`), as OpenAI does.

use std::io::Write;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use crate::plan::Finish;
use crate::sse::json_str;

const NONE: u8 = 0;
const REASONING: u8 = 1;
const MESSAGE: u8 = 2;

/// Per-request Responses formatting state (interior mutability: `StreamFormat` is used
/// through shared references).
#[derive(Debug)]
pub(crate) struct ResponsesFormat {
    id: String,
    created: u64,
    model: String,
    prompt_tokens: u32,
    details: bool,
    seq: AtomicU32,
    /// The open output item (`NONE`, `REASONING`, `MESSAGE`).
    open: AtomicU8,
    /// Output items opened so far (the `output_index` of the open one is this − 1).
    items: AtomicU32,
    reasoning_tokens: AtomicU32,
    /// Whether the last delta carried a `length` finish.
    length: AtomicU8,
}

impl ResponsesFormat {
    pub(crate) fn new(id: &str, created: u64, model: &str, prompt_tokens: u32, details: bool) -> Self {
        ResponsesFormat {
            id: id.to_owned(),
            created,
            model: model.to_owned(),
            prompt_tokens,
            details,
            seq: AtomicU32::new(0),
            open: AtomicU8::new(NONE),
            items: AtomicU32::new(0),
            reasoning_tokens: AtomicU32::new(0),
            length: AtomicU8::new(0),
        }
    }

    fn event(&self, out: &mut Vec<u8>, kind: &str, body: impl FnOnce(&mut Vec<u8>)) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let _ = write!(out, "event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":{seq}");
        body(out);
        out.extend_from_slice(b"}\n\n");
    }

    fn response_obj(&self, out: &mut Vec<u8>, status: &str, usage: Option<(u32, u32)>, cached: u32) {
        let _ = write!(
            out,
            ",\"response\":{{\"id\":{},\"object\":\"response\",\"created_at\":{},\"model\":{},\"status\":\"{status}\"",
            json_str(&self.id),
            self.created,
            json_str(&self.model)
        );
        if status == "incomplete" {
            out.extend_from_slice(b",\"incomplete_details\":{\"reason\":\"max_output_tokens\"}");
        } else {
            out.extend_from_slice(b",\"incomplete_details\":null");
        }
        out.extend_from_slice(b",\"error\":null,\"output\":[]");
        match usage {
            None => out.extend_from_slice(b",\"usage\":null"),
            Some((output, reasoning)) => {
                let p = self.prompt_tokens;
                let cached = if self.details { cached } else { 0 };
                let _ = write!(
                    out,
                    ",\"usage\":{{\"input_tokens\":{p},\"input_tokens_details\":{{\"cached_tokens\":{cached}}},\
                     \"output_tokens\":{output},\"output_tokens_details\":{{\"reasoning_tokens\":{reasoning}}},\
                     \"total_tokens\":{}}}",
                    u64::from(p) + u64::from(output)
                );
            }
        }
        out.push(b'}');
    }

    fn item_id(&self, kind: u8, index: u32) -> String {
        let prefix = if kind == REASONING { "rs" } else { "msg" };
        format!("{prefix}_{}_{index}", self.id.trim_start_matches("resp_"))
    }

    /// `response.created` and `response.in_progress`.
    pub(crate) fn push_start(&self, out: &mut Vec<u8>) {
        self.event(out, "response.created", |o| self.response_obj(o, "in_progress", None, 0));
        self.event(out, "response.in_progress", |o| self.response_obj(o, "in_progress", None, 0));
    }

    fn close_item(&self, out: &mut Vec<u8>) {
        let open = self.open.swap(NONE, Ordering::Relaxed);
        if open == NONE {
            return;
        }
        let index = self.items.load(Ordering::Relaxed).saturating_sub(1);
        let id = self.item_id(open, index);
        if open == REASONING {
            self.event(out, "response.reasoning_text.done", |o| {
                let _ = write!(o, ",\"item_id\":\"{id}\",\"output_index\":{index},\"content_index\":0");
            });
            self.event(out, "response.output_item.done", |o| {
                let _ = write!(
                    o,
                    ",\"output_index\":{index},\"item\":{{\"id\":\"{id}\",\"type\":\"reasoning\",\"status\":\"completed\"}}"
                );
            });
        } else {
            self.event(out, "response.output_text.done", |o| {
                let _ = write!(o, ",\"item_id\":\"{id}\",\"output_index\":{index},\"content_index\":0");
            });
            self.event(out, "response.content_part.done", |o| {
                let _ = write!(o, ",\"item_id\":\"{id}\",\"output_index\":{index},\"content_index\":0");
            });
            self.event(out, "response.output_item.done", |o| {
                let _ = write!(
                    o,
                    ",\"output_index\":{index},\"item\":{{\"id\":\"{id}\",\"type\":\"message\",\"role\":\"assistant\",\"status\":\"completed\"}}"
                );
            });
        }
    }

    fn open_item(&self, out: &mut Vec<u8>, kind: u8) -> (String, u32) {
        if self.open.load(Ordering::Relaxed) == kind {
            let index = self.items.load(Ordering::Relaxed).saturating_sub(1);
            return (self.item_id(kind, index), index);
        }
        self.close_item(out);
        let index = self.items.fetch_add(1, Ordering::Relaxed);
        self.open.store(kind, Ordering::Relaxed);
        let id = self.item_id(kind, index);
        if kind == REASONING {
            self.event(out, "response.output_item.added", |o| {
                let _ = write!(
                    o,
                    ",\"output_index\":{index},\"item\":{{\"id\":\"{id}\",\"type\":\"reasoning\",\"status\":\"in_progress\"}}"
                );
            });
        } else {
            self.event(out, "response.output_item.added", |o| {
                let _ = write!(
                    o,
                    ",\"output_index\":{index},\"item\":{{\"id\":\"{id}\",\"type\":\"message\",\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}}"
                );
            });
            self.event(out, "response.content_part.added", |o| {
                let _ = write!(
                    o,
                    ",\"item_id\":\"{id}\",\"output_index\":{index},\"content_index\":0,\"part\":{{\"type\":\"output_text\",\"text\":\"\"}}"
                );
            });
        }
        (id, index)
    }

    /// One delta event (reasoning or output text) whose text `fill` writes (plain words, no
    /// escaping needed). `tokens` is not needed: usage comes with the terminal event.
    pub(crate) fn push_delta(
        &self,
        out: &mut Vec<u8>,
        reasoning: bool,
        fill: impl FnOnce(&mut Vec<u8>),
        finish: Option<Finish>,
    ) {
        let kind = if reasoning { REASONING } else { MESSAGE };
        let (id, index) = self.open_item(out, kind);
        let name = if reasoning { "response.reasoning_text.delta" } else { "response.output_text.delta" };
        self.event(out, name, |o| {
            let _ =
                write!(o, ",\"item_id\":\"{id}\",\"output_index\":{index},\"content_index\":0,\"delta\":\"");
            fill(o);
            o.push(b'"');
            if !reasoning {
                o.extend_from_slice(b",\"logprobs\":[]");
            }
        });
        if let Some(f) = finish {
            self.length.store(u8::from(f == Finish::Length), Ordering::Relaxed);
        }
    }

    /// Whether the open output item is the reasoning item (its deltas are reasoning deltas).
    fn open_is_reasoning(&self) -> bool {
        self.open.load(Ordering::Relaxed) == REASONING
    }

    /// One valid delta of the open output item (the message item when none is open) whose
    /// text `fill` writes: fault injection of an oversized event.
    pub(crate) fn push_oversized(&self, out: &mut Vec<u8>, fill: impl FnOnce(&mut Vec<u8>)) {
        self.push_delta(out, self.open_is_reasoning(), fill, None);
    }

    /// A delta event of the open output item whose JSON is cut off inside the delta string:
    /// fault injection of a malformed event. It takes a sequence number like any event.
    pub(crate) fn push_malformed(&self, out: &mut Vec<u8>) {
        let name = if self.open_is_reasoning() {
            "response.reasoning_text.delta"
        } else {
            "response.output_text.delta"
        };
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let _ = write!(
            out,
            "event: {name}\ndata: {{\"type\":\"{name}\",\"sequence_number\":{seq},\"delta\":\" cut\n\n"
        );
    }

    /// Records how many of the output tokens were reasoning (for `output_tokens_details`).
    pub(crate) fn set_reasoning_tokens(&self, n: u32) {
        self.reasoning_tokens.store(n, Ordering::Relaxed);
    }

    /// Closes the open item and sends `response.completed` (or `response.incomplete` when the
    /// output stopped at the token limit) with usage.
    pub(crate) fn push_end(&self, out: &mut Vec<u8>, completion: u32, cached: u32) {
        self.close_item(out);
        let reasoning = self.reasoning_tokens.load(Ordering::Relaxed);
        let (kind, status) = if self.length.load(Ordering::Relaxed) == 1 {
            ("response.incomplete", "incomplete")
        } else {
            ("response.completed", "completed")
        };
        self.event(out, kind, |o| self.response_obj(o, status, Some((completion, reasoning)), cached));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(out: &[u8]) -> Vec<(String, serde_json::Value)> {
        std::str::from_utf8(out)
            .unwrap()
            .split("\n\n")
            .filter(|s| !s.is_empty())
            .map(|e| {
                let (ev, data) = e.split_once('\n').unwrap();
                let v: serde_json::Value =
                    serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                let name = ev.strip_prefix("event: ").unwrap().to_owned();
                assert_eq!(v["type"], name.as_str());
                (name, v)
            })
            .collect()
    }

    #[test]
    fn reasoning_then_text_then_incomplete() {
        let f = ResponsesFormat::new("resp_1", 9, "m", 5, true);
        let mut out = Vec::new();
        f.push_start(&mut out);
        f.push_delta(&mut out, true, |o| o.extend_from_slice(b" hm"), None);
        f.push_delta(&mut out, false, |o| o.extend_from_slice(b" a"), None);
        f.push_delta(&mut out, false, |o| o.extend_from_slice(b" b"), Some(Finish::Length));
        f.set_reasoning_tokens(1);
        f.push_end(&mut out, 3, 2);
        let ev = events(&out);
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.reasoning_text.delta",
                "response.reasoning_text.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.incomplete",
            ]
        );
        for (i, (_, v)) in ev.iter().enumerate() {
            assert_eq!(v["sequence_number"], i);
        }
        assert_eq!(ev[3].1["delta"], " hm");
        assert_eq!(ev[8].1["output_index"], 1);
        let last = &ev[13].1["response"];
        assert_eq!(last["status"], "incomplete");
        assert_eq!(last["usage"]["input_tokens"], 5);
        assert_eq!(last["usage"]["output_tokens"], 3);
        assert_eq!(last["usage"]["input_tokens_details"]["cached_tokens"], 2);
        assert_eq!(last["usage"]["output_tokens_details"]["reasoning_tokens"], 1);
        assert_eq!(last["usage"]["total_tokens"], 8);
    }

    #[test]
    fn fault_events_follow_the_open_item() {
        let f = ResponsesFormat::new("resp_3", 9, "m", 5, false);
        let mut out = Vec::new();
        f.push_start(&mut out);
        f.push_delta(&mut out, true, |o| o.extend_from_slice(b" hm"), None);
        f.push_oversized(&mut out, |o| o.extend_from_slice(b"xxxx"));
        let ev = events(&out);
        let (name, v) = ev.last().unwrap();
        assert_eq!(name, "response.reasoning_text.delta", "the reasoning item stays open");
        assert_eq!(v["delta"], "xxxx");
        let mut bad = Vec::new();
        f.push_malformed(&mut bad);
        let text = std::str::from_utf8(&bad).unwrap();
        let (ev_line, data) = text.trim_end().split_once('\n').unwrap();
        assert_eq!(ev_line, "event: response.reasoning_text.delta");
        let data = data.strip_prefix("data: ").unwrap();
        assert!(data.contains("\"sequence_number\":5"), "{data}");
        assert!(serde_json::from_str::<serde_json::Value>(data).is_err());
    }

    #[test]
    fn stop_finish_completes() {
        let f = ResponsesFormat::new("resp_2", 9, "m", 5, false);
        let mut out = Vec::new();
        f.push_delta(&mut out, false, |o| o.extend_from_slice(b" a"), Some(Finish::Stop));
        f.push_end(&mut out, 1, 7);
        let ev = events(&out);
        let last = &ev.last().unwrap().1;
        assert_eq!(last["type"], "response.completed");
        assert_eq!(last["response"]["usage"]["input_tokens_details"]["cached_tokens"], 0);
    }
}
