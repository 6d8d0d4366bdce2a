//! End-to-end tests of the hot path against a tiny scripted HTTP server on 127.0.0.1: each
//! accepted connection plays a script (read a request, write bytes in chosen frames, pause,
//! close), so framing, timing and connection-reuse behaviour are checked exactly.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use crate::common::*;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use servebench_client::{BackendKind, ExecOptions};
use servebench_core::{BenchError, ErrorKind, Outcome, RequestRecord};
use servebench_testkit::script::ScriptedServer;
use tokio::sync::Notify;

#[tokio::test]
async fn chat_stream_timestamps_per_frame_role_not_counted_usage_read() {
    let script = vec![
        A::Read,
        w(String::from(SSE_HEAD) + &chunk(&(role() + &tok("Hel")))),
        A::Sleep(60),
        w(chunk(&tok("lo"))),
        A::Sleep(60),
        w(chunk(&finish_usage_done()) + END),
    ];
    let s = serve(vec![script]).await;
    let f = fixture(s.port, BackendKind::Chat, Some("sk-test-secret"));
    let r = f.run(0, &ExecOptions { keep_text: true, ..ExecOptions::default() }).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.http_status, Some(200));
    // Role chunk and first token arrived in one frame: same time; the role chunk is not a token.
    assert_eq!(r.first_event_us, r.first_token_us);
    assert_eq!(r.token_event_count, 2);
    assert_eq!(r.token_events.gaps_us.len(), 1);
    assert!(r.token_events.gaps_us[0] > 0);
    let (d, h, ft, lt, done) = (
        r.dispatched_us.unwrap(),
        r.headers_us.unwrap(),
        r.first_token_us.unwrap(),
        r.last_token_us.unwrap(),
        r.done_us.unwrap(),
    );
    assert!(d <= h && h <= ft && ft < lt && lt < done, "{d} {h} {ft} {lt} {done}");
    assert_eq!(lt - ft, u64::from(r.token_events.gaps_us[0]));
    assert_eq!(
        (r.completion_tokens, r.server_prompt_tokens, r.cached_prompt_tokens),
        (Some(2), Some(5), Some(0))
    );
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    assert_eq!(r.generated_text.as_deref(), Some("Hello"));
    assert_eq!(r.output_chars, 5);
    assert_eq!(r.server_request_id.as_deref(), Some("srv-7"));
    assert_eq!((r.attempts, r.reconnects), (1, 0));
    let reqs = s.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 1);
    let req = reqs[0].to_ascii_lowercase();
    assert!(req.starts_with("post /v1/chat/completions http/1.1"));
    assert!(req.contains("x-request-id: bench-0"));
    assert!(req.contains("authorization: bearer sk-test-secret"));
    assert!(req.contains("content-type: application/json"));
    assert!(req.contains(r#""max_completion_tokens":2"#));
    // The key never appears in the record.
    assert!(!serde_json::to_string(&r).unwrap().contains("sk-test"));
    // The body ended cleanly: the connection went back to the pool.
    assert_eq!(f.client.idle_count(), 1);
}

#[tokio::test]
async fn crlf_server_without_space_with_keepalive_comments_and_split_crlf() {
    let e1 = r#"data:{"choices":[{"text":"a","finish_reason":null}]}"#;
    let e2 = r#"data:{"choices":[{"text":"b","finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#;
    let script = vec![
        A::Read,
        w(String::from(SSE_HEAD) + &chunk(": keep-alive\r\n\r\n")),
        w(chunk(&format!("{e1}\r"))),
        A::Sleep(20),
        w(chunk("\n\r\n: ping\r\n\r\n")),
        w(chunk(&format!("{e2}\r\n\r\ndata:[DONE]\r\n\r\n")) + END),
    ];
    let s = serve(vec![script]).await;
    let f = fixture(s.port, BackendKind::Completions, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.token_event_count, 2);
    assert_eq!(r.completion_tokens, Some(2));
    let req = s.requests.lock().unwrap()[0].to_ascii_lowercase();
    assert!(req.starts_with("post /v1/completions "));
    assert!(!req.contains("authorization"));
    assert!(req.contains(r#""logprobs":null"#));
}

#[tokio::test]
async fn non_2xx_is_http_status_with_body_snippet() {
    let body = format!("{{\"error\":\"overloaded\"}}{}", "x".repeat(2000));
    let resp = format!("HTTP/1.1 503 Service Unavailable\r\ncontent-length: {}\r\n\r\n{body}", body.len());
    let s = serve(vec![vec![A::Read, w(resp)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::HttpStatus));
    assert_eq!(r.http_status, Some(503));
    let msg = &r.error.as_ref().unwrap().message;
    assert!(msg.contains("503") && msg.contains("overloaded"), "{msg}");
    assert!(msg.len() < 600);
}

#[tokio::test]
async fn close_mid_chunked_stream_is_transport_with_partial_timings() {
    let script = vec![A::Read, w(String::from(SSE_HEAD) + &chunk(&tok("a"))), A::Sleep(20), A::Close];
    let s = serve(vec![script]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::Transport), "{:?}", r.error);
    assert!(r.first_token_us.is_some());
    assert_eq!(r.token_event_count, 1);
    assert_eq!(f.client.idle_count(), 0);
}

#[tokio::test]
async fn close_delimited_stream_without_done_is_incomplete() {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let script = vec![A::Read, w(String::from(head) + &tok("a")), A::Close];
    let s = serve(vec![script]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::Incomplete), "{:?}", r.error);
    assert!(r.first_token_us.is_some() && r.done_us.is_some());
}

#[tokio::test]
async fn finish_reason_without_done_is_accepted_and_unterminated_last_event() {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let last = r#"data: {"choices":[{"delta":{"content":"z"},"finish_reason":"stop"}]}"#;
    let s = serve(vec![vec![A::Read, w(String::from(head) + &tok("a") + last), A::Close]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.token_event_count, 2);
}

#[tokio::test]
async fn stale_idle_connection_is_replaced_before_sending() {
    let close_now = Arc::new(Notify::new());
    let stream = String::from(SSE_HEAD) + &chunk(&(tok("a") + &finish_usage_done())) + END;
    let conn1 = vec![A::Read, w(stream.clone()), A::Wait(close_now.clone()), A::Close];
    let conn2 = vec![A::Read, w(stream)];
    let s = serve(vec![conn1, conn2]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(f.client.idle_count(), 1);
    close_now.notify_one();
    // Let the server's close reach our socket (settling, not a timing assertion).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = f.run(1, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.reconnects, 1);
    assert_eq!(s.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(s.requests.lock().unwrap().len(), 2);
    let st = f.client.stats();
    assert_eq!((st.opened, st.stale), (2, 1));
}

#[tokio::test]
async fn keep_alive_connection_is_reused() {
    let stream = String::from(SSE_HEAD) + &chunk(&(tok("a") + &finish_usage_done())) + END;
    let s = serve(vec![vec![A::Read, w(stream.clone()), A::Read, w(stream)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    for i in 0..2 {
        let r = f.run(i, &ExecOptions::default()).await;
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
        assert_eq!(r.reconnects, 0);
    }
    assert_eq!(s.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(f.client.stats().reused, 1);
}

/// Request 0 answered with `keep_alive` in its head, a pause, then request 1. The script's
/// first connection reads request 1 and closes unanswered (a server closing the connection as
/// the request arrives); a second connection answers it.
async fn second_request_after(keep_alive: &str, pause: Duration) -> (ScriptedServer, Fixture, RequestRecord) {
    let head = SSE_HEAD.replacen("\r\n", &format!("\r\nKeep-Alive: {keep_alive}\r\n"), 1);
    let stream = head + &chunk(&(tok("a") + &finish_usage_done())) + END;
    let s = serve(vec![vec![A::Read, w(stream.clone()), A::Read, A::Close], vec![A::Read, w(stream)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    assert_eq!(f.run(0, &ExecOptions::default()).await.outcome, Outcome::Completed);
    tokio::time::sleep(pause).await;
    let r = f.run(1, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    (s, f, r)
}

/// The server's `Keep-Alive: timeout=1` is honoured: a connection idle for most of that second
/// is not reused, because the server's idle close would race the request. It opens a fresh
/// connection instead: no resend.
#[tokio::test]
async fn a_connection_idle_near_the_servers_keep_alive_timeout_is_not_reused() {
    // Past the reuse limit (the timeout less half of it, for a 1-s timeout), short of the timeout.
    let (s, f, r) = second_request_after("timeout=1, max=100", Duration::from_millis(700)).await;
    assert!(!r.resent && r.reconnects == 0, "{r:?}");
    assert!(!r.phases.is_some_and(|p| p.reused), "{:?}", r.phases);
    assert_eq!(s.accepted.load(Ordering::SeqCst), 2);
    assert_eq!(f.client.stats().expired, 1);
}

/// `Keep-Alive: max=1`: the server takes one request per connection, so the second goes on a
/// fresh connection instead of one the server is closing.
#[tokio::test]
async fn a_connection_that_took_the_servers_keep_alive_max_is_not_reused() {
    let (s, _f, r) = second_request_after("timeout=5, max=1", Duration::ZERO).await;
    assert!(!r.resent && r.reconnects == 0, "{r:?}");
    assert_eq!(s.accepted.load(Ordering::SeqCst), 2);
}

/// A request written on a reused connection that the server closes without one byte of an
/// answer was never processed: it is sent once more, on a fresh connection — and only once
/// (here the fresh connection is refused too, so the request fails after two writes).
#[tokio::test]
async fn unanswered_request_on_a_reused_connection_is_resent_once() {
    // Connection 1 serves request 0, then reads request 1 and closes without answering.
    let stream = String::from(SSE_HEAD) + &chunk(&(tok("a") + &finish_usage_done())) + END;
    let s = serve(vec![vec![A::Read, w(stream), A::Read, A::Close]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed);
    let r = f.run(1, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::Transport), "{:?}", r.error);
    assert!(r.dispatched_us.is_some());
    assert!(r.resent);
    assert_eq!((r.attempts, r.reconnects), (2, 1));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(s.accepted.load(Ordering::SeqCst), 2, "resent once, never again from a fresh connection");
    assert_eq!(f.client.stats().resent, 1);
}

/// Pins a request the server read and held, then dropped without a byte (a worker that crashed
/// 400 ms into the request): it was resent as if the connection had been stale, counted as a
/// completed request, and the POST reached the server twice. A close that long after the write
/// is a failure the server had the request for (`transport`), not sent again.
#[tokio::test]
async fn a_close_long_after_the_write_fails_and_is_not_resent() {
    let stream = String::from(SSE_HEAD) + &chunk(&(tok("a") + &finish_usage_done())) + END;
    let s = serve(vec![
        vec![A::Read, w(stream.clone()), A::Read, A::Sleep(400), A::Close],
        vec![A::Read, w(stream)],
    ])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    assert_eq!(f.run(0, &ExecOptions::default()).await.outcome, Outcome::Completed);
    let r = f.run(1, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::Transport), "{:?}", r.error);
    let message = r.error.as_ref().unwrap().message.clone();
    assert!(message.contains("after the request was written, without answering"), "{message}");
    assert!(!r.resent);
    assert_eq!(r.attempts, 1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(s.accepted.load(Ordering::SeqCst), 1, "the POST must not be resent");
    assert_eq!(f.client.stats().resent, 0);
}

/// Once any byte of the answer arrived, the request is never resent.
#[tokio::test]
async fn no_resend_once_a_response_byte_arrived() {
    let stream = String::from(SSE_HEAD) + &chunk(&(tok("a") + &finish_usage_done())) + END;
    let s = serve(vec![vec![A::Read, w(stream), A::Read, w("HTTP/1.1 200 OK\r\ncontent-"), A::Close]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    assert_eq!(f.run(0, &ExecOptions::default()).await.outcome, Outcome::Completed);
    let r = f.run(1, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::Transport), "{:?}", r.error);
    assert!(!r.resent);
    assert_eq!(r.attempts, 1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(s.accepted.load(Ordering::SeqCst), 1, "the POST must not be resent");
}

#[tokio::test]
async fn stall_timeout_fires_when_no_bytes_arrive() {
    let s = serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &chunk(&tok("a"))), A::Sleep(10_000)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let opts = ExecOptions { stall_timeout: Some(Duration::from_millis(200)), ..ExecOptions::default() };
    let r = f.run(0, &opts).await;
    assert_eq!(kind(&r), Some(ErrorKind::Stall), "{:?}", r.error);
    assert!(r.error.unwrap().message.contains("stall"));
    assert_eq!(r.token_event_count, 1);
}

#[tokio::test]
async fn request_timeout_fires_before_headers() {
    let s = serve(vec![vec![A::Read, A::Sleep(10_000)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let opts = ExecOptions { request_timeout: Some(Duration::from_millis(200)), ..ExecOptions::default() };
    let r = f.run(0, &opts).await;
    assert_eq!(kind(&r), Some(ErrorKind::Timeout), "{:?}", r.error);
    assert!(r.headers_us.is_none());
}

#[tokio::test]
async fn oversized_event_is_event_too_large() {
    let big = tok(&"x".repeat(5000));
    let s = serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &chunk(&big) + END)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions { max_event_bytes: 1024, ..ExecOptions::default() }).await;
    assert_eq!(kind(&r), Some(ErrorKind::EventTooLarge), "{:?}", r.error);
}

#[tokio::test]
async fn error_event_and_malformed_json() {
    let err = "data: {\"error\":{\"message\":\"KV cache full\",\"code\":500}}\n\n";
    let bad = "data: {\"choices\":[\n\n";
    let s = serve(vec![
        vec![A::Read, w(String::from(SSE_HEAD) + &chunk(err) + END)],
        vec![A::Read, w(String::from(SSE_HEAD) + &chunk(bad) + END)],
    ])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::ServerError));
    assert!(r.error.unwrap().message.contains("KV cache full"));
    let r = f.run(1, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::Protocol), "{:?}", r.error);
}

/// vLLM answers 400 to a chat request when the model has no chat template; the client types it
/// as SB403 where it reads the body (the runner never reads the message for it). An error event
/// naming the template is typed the same way; other failures are not.
#[tokio::test]
async fn chat_template_complaints_are_typed_sb403_where_the_server_text_is_read() {
    let body = r#"{"object":"error","message":"As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.","type":"BadRequestError","param":null,"code":400}"#;
    let status = format!("HTTP/1.1 400 Bad Request\r\ncontent-length: {}\r\n\r\n{body}", body.len());
    let event = "data: {\"error\":{\"message\":\"tokenizer.chat_template is not set\",\"code\":400}}\n\n";
    let other = "data: {\"error\":{\"message\":\"KV cache full\",\"code\":500}}\n\n";
    let s = serve(vec![
        vec![A::Read, w(status), A::Close],
        vec![A::Read, w(String::from(SSE_HEAD) + &chunk(event) + END), A::Close],
        vec![A::Read, w(String::from(SSE_HEAD) + &chunk(other) + END), A::Close],
    ])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let chat = Some(servebench_core::FailureCause::ChatTemplate);
    let r = f.run(0, &ExecOptions::default()).await;
    let e = r.error.unwrap();
    assert_eq!((e.kind, e.cause), (ErrorKind::HttpStatus, chat), "{}", e.message);
    assert!(e.message.starts_with("HTTP 400 Bad Request: ") && e.message.contains("default chat template"));
    let e = f.run(1, &ExecOptions::default()).await.error.unwrap();
    assert_eq!((e.kind, e.cause), (ErrorKind::ServerError, chat), "{}", e.message);
    let e = f.run(2, &ExecOptions::default()).await.error.unwrap();
    assert_eq!((e.kind, e.cause), (ErrorKind::ServerError, None), "{}", e.message);
}

/// Pins the record of a stream whose body does not end after `[DONE]` (its chunked terminator
/// never comes, the connection held open): completed at `[DONE]`, its last byte unknown
/// (`last_byte_us` `None`: what the run's "held open after the end" warning counts).
#[tokio::test]
async fn a_body_held_open_after_done_completes_without_a_last_byte() {
    let body = chunk(&(role() + &tok("Hi"))) + &chunk(&finish_usage_done());
    let s = serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &body), A::Sleep(5_000)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let opts = ExecOptions { drain_timeout: Duration::from_millis(50), ..ExecOptions::default() };
    let r = f.run(0, &opts).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    let p = r.phases.unwrap();
    assert!(p.first_byte_us.is_some() && p.last_byte_us.is_none(), "{p:?}");
}

/// Pins a stream without `[DONE]` whose body is held open after its usage chunk (the chunk that
/// follows the finish reason): `done` was the body's end, 2 s later, so E2EL was the hold and
/// no held-open warning could fire. The usage chunk ends the stream; the hold shows as the
/// missing last byte.
#[tokio::test]
async fn a_body_held_open_after_the_usage_chunk_without_done_completes_at_the_usage_chunk() {
    let events = finish_usage_done().replace("data: [DONE]\n\n", "");
    let body = chunk(&(role() + &tok("Hi"))) + &chunk(&events);
    let s = serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &body), A::Sleep(2_000), w(END)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let opts = ExecOptions { drain_timeout: Duration::from_millis(50), ..ExecOptions::default() };
    let r = f.run(0, &opts).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    let e2el = r.done_us.unwrap() - r.dispatched_us.unwrap();
    assert!(e2el < 1_000_000, "done at the usage chunk, not 2 s later at the body's end: {e2el} µs");
    let p = r.phases.unwrap();
    assert!(p.last_byte_us.is_none(), "held open: {p:?}");
}

/// Pins llama.cpp's stream shape (usage in the finish chunk, no separate usage chunk) without
/// `[DONE]` and its body held open 600 ms: `done` was the body's end, so E2EL held the hold and
/// the held-open warning could not see it. Done at the last event; the hold is in the phases.
#[tokio::test]
async fn a_finish_chunk_with_usage_then_a_held_body_completes_at_the_finish_chunk() {
    let finish = r#"data: {"id":"c","choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#;
    let body = chunk(&(role() + &tok("a"))) + &chunk(&format!("{finish}\n\n"));
    let s = serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &body), A::Sleep(600), w(END)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.done_us, r.last_token_us, "done at the finish chunk, the last event");
    let last_byte = r.dispatched_us.unwrap() + u64::from(r.phases.unwrap().last_byte_us.unwrap());
    assert!(last_byte - r.done_us.unwrap() >= 500_000, "the hold is the body's, not E2EL's");
}

/// Pins a close-delimited stream's body ending at the server's close: a server holding the
/// connection 0.3 s after `[DONE]` read as no hold at all (the close's read was not timed, so
/// the body "ended" with the `[DONE]` bytes) and the held-open warning never fired.
#[tokio::test]
async fn a_close_delimited_body_ends_at_the_close_not_at_its_last_bytes() {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let events = role() + &tok("Hi") + &finish_usage_done();
    let s = serve(vec![vec![A::Read, w(String::from(head) + &events), A::Sleep(300), A::Close]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    let last_byte = r.dispatched_us.unwrap() + u64::from(r.phases.unwrap().last_byte_us.unwrap());
    let held = last_byte - r.done_us.unwrap();
    assert!(held >= 250_000, "the close came 300 ms after [DONE]; the body ended {held} µs after it");
}

/// Pins a reset right after `[DONE]` (before the chunked terminator) ending the body there: it
/// left `last_byte_us` absent, read as a body held open for the whole drain wait.
#[tokio::test]
async fn a_reset_after_done_ends_the_body_where_it_broke() {
    let body = chunk(&(role() + &tok("Hi"))) + &chunk(&finish_usage_done());
    let s = serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &body), A::Rst]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    let last_byte =
        r.dispatched_us.unwrap() + u64::from(r.phases.unwrap().last_byte_us.expect("the body's end"));
    assert!(last_byte >= r.done_us.unwrap(), "{last_byte} {:?}", r.done_us);
}

#[tokio::test]
async fn zero_token_chat_stream_is_no_tokens() {
    let s =
        serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &chunk(&(role() + "data: [DONE]\n\n")) + END)]])
            .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::NoTokens), "{:?}", r.error);
    assert!(r.first_event_us.is_some() && r.first_token_us.is_none());
}

#[tokio::test]
async fn non_streaming_json_response() {
    let body = r#"{"id":"x1","choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}"#;
    let s = serve(vec![vec![A::Read, w(json_ok(body))]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.completion_tokens, Some(3));
    assert_eq!(r.token_event_count, 1);
    assert_eq!(r.first_token_us, r.done_us);
}

#[tokio::test]
async fn control_plane_json_helpers() {
    let models = r#"{"object":"list","data":[{"id":"m1"}]}"#;
    let s = serve(vec![vec![
        A::Read,
        w(json_ok(models)),
        A::Read,
        w("HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\n\r\nnot found"),
        A::Read,
        w(json_ok("<html>")),
    ]])
    .await;
    let f = fixture(s.port, BackendKind::Chat, Some("sk-ctl"));
    let v: serde_json::Value = f.client.get_json("/v1/models", f.target.headers()).await.unwrap();
    assert_eq!(v["data"][0]["id"], "m1");
    let e = f
        .client
        .post_json::<serde_json::Value, _>(
            "/tokenize",
            &serde_json::json!({"prompt": "x"}),
            f.target.headers(),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, BenchError::HttpStatus { status: 404, .. }), "{e}");
    assert!(e.to_string().contains("not found") && !e.to_string().contains("sk-ctl"));
    let e = f.client.get_json::<serde_json::Value>("/v1/models", f.target.headers()).await.unwrap_err();
    assert!(matches!(e, BenchError::Protocol { .. }), "{e}");
    // The serde error is kept as the source, not only as text.
    let source = std::error::Error::source(&e).expect("a source");
    assert!(source.is::<serde_json::Error>(), "{source}");
    assert_eq!(s.accepted.load(Ordering::SeqCst), 1);
    let req = s.requests.lock().unwrap()[1].clone();
    assert!(req.starts_with("POST /tokenize HTTP/1.1"));
}

#[tokio::test]
async fn preconnect_warms_the_pool() {
    let stream = String::from(SSE_HEAD) + &chunk(&(tok("a") + &finish_usage_done())) + END;
    let s = serve(vec![vec![A::Read, w(stream.clone())], vec![A::Read, w(stream)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    assert_eq!(f.client.preconnect(2).await.unwrap(), 2);
    assert_eq!(f.client.idle_count(), 2);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(f.client.stats().reused, 1);
}

#[tokio::test]
async fn connection_close_response_is_not_pooled_nor_counted_stale() {
    let body = r#"{"choices":[{"message":{"content":"Hi"},"finish_reason":"stop"}]}"#;
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let s = serve(vec![vec![A::Read, w(resp.clone()), A::Close], vec![A::Read, w(resp), A::Close]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    for i in 0..2 {
        let r = f.run(i, &ExecOptions::default()).await;
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
        assert_eq!(r.reconnects, 0);
    }
    assert_eq!(f.client.idle_count(), 0);
    assert_eq!(f.client.stats().stale, 0);
}

#[tokio::test]
async fn cancellation_keeps_partial_timings() {
    let go = Arc::new(Notify::new());
    let s =
        serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &chunk(&tok("a"))), A::Wait(go.clone())]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let cancel = Arc::new(Notify::new());
    let c2 = cancel.clone();
    let task = {
        let (client, target, clock) = (f.client.clone(), f.target.clone(), f.clock);
        tokio::spawn(async move {
            servebench_client::request::execute_until(
                &client,
                &target,
                &spec(0),
                record(0),
                &clock,
                &ExecOptions::default(),
                async move { c2.notified().await },
            )
            .await
        })
    };
    // Wait until the first token is surely read (settling), then cancel.
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancel.notify_one();
    let r = task.await.unwrap();
    go.notify_one();
    assert_eq!(r.outcome, Outcome::Cancelled);
    assert!(r.error.is_none());
    assert_eq!(r.token_event_count, 1);
    assert!(r.first_token_us.is_some() && r.done_us.is_some());
}

/// The HTTP/1.1 codec on a real connection: an interim `100 Continue`, a chunk-size line and
/// the CRLF after chunk data split across writes, chunk extensions and a trailer; then the
/// connection is reused for a `Content-Length` body larger than the read buffer.
#[tokio::test]
async fn interim_response_split_chunk_lines_trailers_and_large_bodies() {
    let ev1 = tok("a");
    let ev2 = finish_usage_done();
    let large = format!(
        r#"{{"choices":[{{"index":0,"message":{{"content":"{}"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":5,"completion_tokens":1}}}}"#,
        "y".repeat(100_000)
    );
    let s = serve(vec![vec![
        A::Read,
        w("HTTP/1.1 100 Continue\r\n\r\n"),
        w(String::from(SSE_HEAD) + &format!("{:x}", ev1.len())),
        A::Sleep(20),
        w(format!(";ext=1\r\n{ev1}\r")),
        A::Sleep(20),
        w(format!("\n{:x}\r\n{ev2}\r\n0\r\nx-trailer: 1\r\n\r\n", ev2.len())),
        A::Read,
        w(json_ok(&large)),
    ]])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.token_event_count, 1);
    assert_eq!(r.http_status, Some(200));
    let opts = ExecOptions { max_event_bytes: 1 << 20, ..ExecOptions::default() };
    let r = f.run(1, &opts).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.completion_tokens, Some(1));
    assert_eq!(s.accepted.load(Ordering::SeqCst), 1, "the connection was reused");
}

/// A body that violates chunked framing fails the request as a transport error (never a
/// panic), keeping the timings measured so far.
#[tokio::test]
async fn invalid_chunk_framing_is_a_transport_error() {
    let s = serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &chunk(&tok("a")) + "zz\r\n")]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::Transport), "{:?}", r.error);
    assert!(r.error.unwrap().message.contains("chunk"));
    assert_eq!(r.token_event_count, 1);
}

/// An HTTP 204 (no body) to a streamed request failed as "the stream ended without [DONE] or a
/// finish reason", as if a stream had been cut: it says the body ended before any event.
#[tokio::test]
async fn an_empty_204_answer_says_the_body_ended_before_any_event() {
    let s = serve(vec![vec![A::Read, w("HTTP/1.1 204 No Content\r\n\r\n")]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::Incomplete), "{:?}", r.error);
    let message = &r.error.as_ref().unwrap().message;
    assert_eq!(message, "the response body ended before any event (HTTP 204)");
}

/// An event stream labelled `Content-Type: application/json` (a gateway's mislabel) failed every
/// request as "response is not JSON"; vLLM's client reads the lines whatever the label. The
/// first bytes now decide: SSE lines are read as the stream they are, each event timed on its
/// own arrival (a leading blank line, sent alone, does not decide); a JSON body to the same
/// request is still the non-streamed answer.
#[tokio::test]
async fn an_event_stream_labelled_json_is_read_as_a_stream() {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    let s = serve(vec![vec![
        A::Read,
        w(String::from(head) + &chunk("\n")),
        A::Sleep(20),
        w(chunk(&tok("a"))),
        A::Sleep(60),
        w(chunk(&(tok("b") + &finish_usage_done())) + END),
    ]])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, servebench_core::Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.token_event_count, 2);
    let (first, last) = (r.first_token_us.unwrap(), r.last_token_us.unwrap());
    assert!(last - first >= 60_000, "the events were timed apart: {first} {last}");

    let body = r#"{"id":"c","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
    let s = serve(vec![vec![A::Read, w(json_ok(body))]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, servebench_core::Outcome::Completed, "{:?}", r.error);
    assert_eq!((r.completion_tokens, r.first_token_us), (Some(1), r.done_us));
}

/// A plain-text 200 labelled JSON ("internal error: …") was read as a stream by the first
/// letter of a field ("the text/event-stream body is not server-sent events"): it is the JSON
/// answer it says it is, and fails as not JSON. An empty one says no event came.
#[tokio::test]
async fn a_text_or_empty_body_labelled_json_is_not_taken_for_a_stream() {
    let head = |n: usize| {
        format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {n}\r\n\r\n")
    };
    let text = "internal error: upstream failed";
    let s = serve(vec![vec![A::Read, w(head(text.len()) + text)]]).await;
    let r = fixture(s.port, BackendKind::Chat, None).run(0, &ExecOptions::default()).await;
    let e = r.error.as_ref().unwrap();
    assert_eq!(e.kind, ErrorKind::Protocol, "{e:?}");
    assert!(e.message.starts_with("response is not JSON") && e.message.contains(text), "{}", e.message);

    for blank in ["", "\n\n  \n"] {
        let s = serve(vec![vec![A::Read, w(head(blank.len()) + blank)]]).await;
        let r = fixture(s.port, BackendKind::Chat, None).run(0, &ExecOptions::default()).await;
        let e = r.error.as_ref().unwrap();
        let message = "the response body ended before any event (HTTP 200)";
        assert_eq!((e.kind, e.message.as_str()), (ErrorKind::Incomplete, message), "{blank:?}");
    }
    // A not-JSON excerpt starts at the first non-blank byte (it was empty after blank lines).
    let padded = format!("\n\n   {text}");
    let s = serve(vec![vec![A::Read, w(head(padded.len()) + &padded)]]).await;
    let r = fixture(s.port, BackendKind::Chat, None).run(0, &ExecOptions::default()).await;
    assert!(r.error.as_ref().unwrap().message.ends_with(text), "{:?}", r.error);
}
