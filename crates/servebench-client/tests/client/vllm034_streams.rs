//! The stream rules vLLM 0.34's `vllm bench serve` reads by, each reproduced with the server's
//! bytes over a real socket (scripted server): an error object inside a stream fails the
//! request with the server's message; SGLang's `delta.reasoning_content` is reasoning output;
//! the Responses deltas of tool input (function arguments, custom tool input, MCP arguments,
//! code-interpreter code) are output token events.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use crate::common::*;

use servebench_client::{BackendKind, ExecOptions};
use servebench_core::{ErrorKind, Outcome, RequestRecord};

/// Plays one streamed response (`events`, one chunked write each, 2 ms apart so that each
/// arrives in its own read and gets its own receive time) to one request.
async fn play(backend: BackendKind, events: &[String]) -> RequestRecord {
    let mut script = vec![A::Read, w(SSE_HEAD)];
    script.extend(events.iter().flat_map(|e| [A::Sleep(2), w(chunk(e))]));
    script.push(w(END));
    let s = serve(vec![script]).await;
    let f = fixture(s.port, backend, None);
    f.run(0, &ExecOptions { keep_text: true, ..ExecOptions::default() }).await
}

fn data(json: &str) -> String {
    format!("data: {json}\n\n")
}

/// vLLM's mid-stream error, as its OpenAI server writes it after tokens were sent: the
/// `{"error": {...}}` form of current servers and the bare `ErrorResponse` form
/// (`{"object":"error",...}`) of older ones. Both fail the request (`server_error`) with the
/// server's message in the record, whatever came before.
#[tokio::test]
async fn an_error_object_inside_a_stream_fails_the_request_with_the_servers_message() {
    let nested = r#"{"error":{"message":"The decoder prompt (length 9000) is longer than the maximum model length of 8192.","type":"BadRequestError","param":null,"code":400}}"#;
    let bare = r#"{"object":"error","message":"The decoder prompt (length 9000) is longer than the maximum model length of 8192.","type":"BadRequestError","param":null,"code":400}"#;
    for payload in [nested, bare] {
        let r =
            play(BackendKind::Chat, &[role(), tok("Hel"), data(payload), "data: [DONE]\n\n".into()]).await;
        assert_eq!(r.outcome, Outcome::Failed, "{payload}");
        let e = r.error.as_ref().unwrap();
        assert_eq!(e.kind, ErrorKind::ServerError, "{payload}");
        assert!(e.message.contains("longer than the maximum model length of 8192"), "{}", e.message);
        assert_eq!(r.token_event_count, 1, "the token before the error is kept");
    }
    // Completions streams too.
    let r = play(BackendKind::Completions, &[data(bare)]).await;
    assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::ServerError));
}

/// An `"object"` member that is not `"error"` (every normal chunk has one) never fails.
#[tokio::test]
async fn a_chunk_object_member_other_than_error_is_an_ordinary_chunk() {
    let c = r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}"#;
    let r = play(BackendKind::Chat, &[data(c), "data: [DONE]\n\n".into()]).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.generated_text.as_deref(), Some("ok"));
}

/// SGLang's chat stream of a reasoning model (`--reasoning-parser`): thinking arrives in
/// `delta.reasoning_content` with `content: null`, then the answer in `content`. Reasoning
/// chunks are token events (TTFT at the first one) and reasoning output; TTFO waits for content.
#[tokio::test]
async fn sglang_reasoning_content_counts_as_reasoning_output() {
    let events = [
        data(
            r#"{"id":"4f1c","object":"chat.completion.chunk","created":1733380000,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}"#,
        ),
        data(
            r#"{"id":"4f1c","object":"chat.completion.chunk","created":1733380000,"model":"qwen3","choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":"Let me","tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}"#,
        ),
        data(
            r#"{"id":"4f1c","object":"chat.completion.chunk","created":1733380000,"model":"qwen3","choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":" think","tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}"#,
        ),
        data(
            r#"{"id":"4f1c","object":"chat.completion.chunk","created":1733380000,"model":"qwen3","choices":[{"index":0,"delta":{"role":null,"content":"Yes","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":"stop","matched_stop":151645}],"usage":null}"#,
        ),
        data(
            r#"{"id":"4f1c","object":"chat.completion.chunk","created":1733380000,"model":"qwen3","choices":[],"usage":{"prompt_tokens":5,"total_tokens":9,"completion_tokens":4,"prompt_tokens_details":null}}"#,
        ),
        "data: [DONE]\n\n".into(),
    ];
    let r = play(BackendKind::Chat, &events).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!((r.token_event_count, r.reasoning_events, r.content_events), (3, 2, 1));
    assert_eq!(r.output_chars, "Let me think".len() as u64 + 3);
    assert_eq!(r.generated_text.as_deref(), Some("Let me thinkYes"));
    assert!(r.first_token_us < r.first_content_us);
    assert_eq!(r.completion_tokens, Some(4));
}

fn responses_event(kind: &str, json: &str) -> String {
    format!("event: {kind}\ndata: {json}\n\n")
}

/// A Responses stream whose output is only tool input, one delta event per kind vLLM 0.34
/// counts: each is a token event (TTFT at the first), none is visible content (no TTFO).
#[tokio::test]
async fn responses_tool_input_deltas_of_every_kind_are_output_token_events() {
    let kinds = [
        "response.function_call_arguments.delta",
        "response.custom_tool_call_input.delta",
        "response.mcp_call_arguments.delta",
        "response.code_interpreter_call_code.delta",
    ];
    let mut events = vec![responses_event(
        "response.created",
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress"}}"#,
    )];
    for (i, k) in kinds.iter().enumerate() {
        let n = i + 1;
        events.push(responses_event(
            k,
            &format!(r#"{{"type":"{k}","item_id":"item_{n}","output_index":{i},"delta":"{{\"x\":{n}}}","sequence_number":{n}}}"#),
        ));
    }
    events.push(responses_event(
        "response.completed",
        r#"{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":5,"output_tokens":12,"input_tokens_details":{"cached_tokens":0}}}}"#,
    ));
    let r = play(BackendKind::Responses, &events).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.token_event_count, 4);
    assert_eq!((r.content_events, r.first_content_us), (0, None));
    assert!(r.first_token_us.is_some());
    assert_eq!(r.completion_tokens, Some(12));
}
