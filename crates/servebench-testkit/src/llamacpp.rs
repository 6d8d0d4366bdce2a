//! llama.cpp `llama-server`'s bytes, captured from a real server (`fixtures/llamacpp/`, see
//! its README): the head of a streamed completions answer and its event stream. A queued
//! request gets nothing — not even the head — until a slot starts it; [`queue_script`] plays
//! that.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::fixtures::fixture;
use crate::script::{chunk, Step, END};

/// The streamed `/v1/completions` response head as llama.cpp sends it (`Keep-Alive`, no
/// `Connection`, `Transfer-Encoding: chunked`).
pub fn completions_head() -> String {
    std::fs::read_to_string(fixture("llamacpp/completions-head.http")).expect("llama.cpp head fixture")
}

/// The captured event stream of a completions answer (4 tokens; usage and `timings` in the
/// finish event; `[DONE]`).
pub fn completions_events() -> String {
    std::fs::read_to_string(fixture("llamacpp/completions-stream.sse")).expect("llama.cpp stream fixture")
}

/// The whole captured answer: head, one chunk per event (as llama.cpp writes them), the end.
pub fn completions_response() -> String {
    let mut s = completions_head();
    for ev in completions_events().split_inclusive("\n\n") {
        s.push_str(&chunk(ev));
    }
    s.push_str(END);
    s
}

/// A queued request's script: the request is read, then nothing at all is written (no head)
/// until `start` is notified; then the captured answer, and the connection stays open.
pub fn queue_script(start: Arc<Notify>) -> Vec<Step> {
    vec![Step::Wait(start), Step::Write(completions_response().into_bytes())]
}

/// llama.cpp's answer to a prompt longer than a slot's context (shape of its
/// `exceed_context_size_error`), with `Content-Length`.
pub fn context_exceeded(tokens: usize, n_ctx: usize) -> String {
    let body = format!(
        r#"{{"error":{{"code":400,"message":"request ({tokens} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":{tokens},"n_ctx":{n_ctx}}}}}"#
    );
    format!(
        "HTTP/1.1 400 Bad Request\r\nServer: llama.cpp\r\nAccess-Control-Allow-Origin: \r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nKeep-Alive: timeout=5, max=100\r\n\r\n{body}",
        body.len()
    )
}
