//! Regression tests of the client: each pins a bug that was fixed, is named after the behaviour
//! it pins, and reproduces the server's bytes with the test kit's scripted server. Its doc
//! comment says what used to go wrong.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use crate::common::*;

use std::time::Duration;

use servebench_client::{BackendKind, ExecOptions};
use servebench_core::{ErrorKind, Outcome};

/// Pins the lazy stall timer: progress only notes the time, and the sleep re-arms when it fires
/// early, so a slow but steady stream longer than the stall timeout in total completes instead
/// of failing as a stall.
#[tokio::test]
async fn stall_timer_rearms_on_stream_progress_so_a_steady_stream_longer_than_it_completes() {
    let mut script = vec![A::Read, w(String::from(SSE_HEAD) + &chunk(&role()))];
    for t in ["a", "b", "c", "d", "e", "f"] {
        script.push(A::Sleep(60));
        script.push(w(chunk(&tok(t))));
    }
    script.push(w(chunk(&finish_usage_done()) + END));
    let s = serve(vec![script]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let opts = ExecOptions { stall_timeout: Some(Duration::from_millis(150)), ..ExecOptions::default() };
    let r = f.run(0, &opts).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.token_event_count, 6);
}

/// Pins the fix of a stall timer not re-armed while reading a non-streamed body: a body that
/// arrived slowly but steadily failed as a stall once the whole read took longer than
/// `--stall-timeout` from the headers. Every read is progress now, as in a stream; a body that
/// really stops still times out.
#[tokio::test]
async fn stall_timer_rearms_on_each_read_of_a_non_streamed_body() {
    let body = r#"{"choices":[{"index":0,"message":{"content":"Hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#;
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let mut script = vec![A::Read, w(head)];
    for piece in body.as_bytes().chunks(body.len().div_ceil(6)) {
        script.push(A::Sleep(60));
        script.push(A::Write(piece.to_vec()));
    }
    let s = serve(vec![
        script,
        vec![
            A::Read,
            A::Write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n{\"ch"
                    .to_vec(),
            ),
            A::Sleep(600),
        ],
    ])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let opts = ExecOptions { stall_timeout: Some(Duration::from_millis(150)), ..ExecOptions::default() };
    let r = f.run(0, &opts).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.completion_tokens, Some(2));
    // A body that really stops still fails, as a stall (second connection of the script).
    let f2 = fixture(s.port, BackendKind::Chat, None);
    let r = f2.run(1, &opts).await;
    assert_eq!(kind(&r), Some(ErrorKind::Stall), "{:?}", r.error);
}

/// Pins the refusal of a response with two `Content-Length` header lines that disagree (RFC
/// 9112 §6.3: it cannot be framed). The first line used to win: with the shorter value first the
/// body was cut before its usage and `[DONE]` and the request still counted as completed, and the
/// connection went back to the pool with the rest of the body unread. Now the request fails and
/// the next one opens a fresh connection.
#[tokio::test]
async fn conflicting_content_length_lines_fail_the_response_and_the_connection_is_not_reused() {
    let body = chunk_free_body();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 5\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let good = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let s = serve(vec![
        vec![A::Read, w(head + &body), A::Read, w(good.clone() + &body), A::Sleep(500)],
        vec![A::Read, w(good + &body), A::Sleep(500)],
    ])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Failed, "{r:?}");
    assert!(r.error.as_ref().unwrap().message.contains("content-length"), "{:?}", r.error);
    let r = f.run(1, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(s.connections(), 2, "the connection of the unframeable response was not reused");
}

/// A whole chat stream (role, two tokens, finish with usage, `[DONE]`) as one plain body.
fn chunk_free_body() -> String {
    role() + &tok("a") + &tok("b") + &finish_usage_done()
}

/// A chat client for `base_url` with `cfg` (its backend and model set here) and a run clock.
fn chat_client(
    base_url: String,
    cfg: servebench_client::TargetConfig,
) -> (servebench_client::HttpClient, servebench_client::RequestTarget, servebench_core::RunClock) {
    let client = servebench_client::HttpClient::new(servebench_client::ClientOptions {
        base_url,
        ..servebench_client::ClientOptions::default()
    })
    .unwrap();
    let cfg = servebench_client::TargetConfig { backend: BackendKind::Chat, model: "m".into(), ..cfg };
    let target = servebench_client::RequestTarget::new(&client, &cfg).unwrap();
    (client, target, servebench_core::RunClock::start())
}

/// Pins `--header Host=…` being sent as given: the client replaced it with the base URL's
/// authority, so a benchmark through an ingress reached by address, routed by virtual host,
/// landed on the default backend without a word.
#[tokio::test]
async fn a_host_header_given_by_the_user_is_sent_as_given() {
    let s = serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &chunk(&chunk_free_body()) + END)]]).await;
    let host = vec![("Host".into(), servebench_core::secret::Secret::new("llm.team-a.internal"))];
    let cfg = servebench_client::TargetConfig { headers: host, ..servebench_client::TargetConfig::default() };
    let (client, target, clock) = chat_client(format!("http://127.0.0.1:{}", s.port), cfg);
    let r =
        servebench_client::execute(&client, &target, &spec(0), record(0), &clock, &ExecOptions::default())
            .await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    let request = s.requests()[0].to_ascii_lowercase();
    let hosts: Vec<&str> = request.lines().filter(|l| l.starts_with("host:")).collect();
    assert_eq!(hosts, vec!["host: llm.team-a.internal"], "{request}");
}

/// Pins a base URL's query (`?api-version=…`, as Azure-style gateways need) being sent on every
/// request: it was dropped without a word, so such a gateway answered 400/404 to every request.
/// The endpoint's own query comes first and keeps its value for a name both give; a secret
/// query value is redacted from server text that echoes the path.
#[tokio::test]
async fn a_base_url_query_is_sent_after_the_endpoints_own() {
    let echo = "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ncontent-length: 48\r\n\r\nno route /v1/chat/completions?api-key=K9secret77";
    let s = serve(vec![vec![
        A::Read,
        w(String::from(SSE_HEAD) + &chunk(&chunk_free_body()) + END),
        A::Read,
        w(echo.to_owned()),
    ]])
    .await;
    let base_url = format!("http://127.0.0.1:{}/gw/v1?api-version=2024-06&api-key=K9secret77&tier=a", s.port);
    let endpoint = Some("/v1/chat/completions?tier=b".into());
    let (client, target, clock) =
        chat_client(base_url, servebench_client::TargetConfig { endpoint, ..Default::default() });
    let r =
        servebench_client::execute(&client, &target, &spec(0), record(0), &clock, &ExecOptions::default())
            .await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    let line = s.requests()[0].lines().next().unwrap().to_owned();
    assert_eq!(line, "POST /gw/v1/chat/completions?tier=b&api-version=2024-06&api-key=K9secret77 HTTP/1.1");
    let r =
        servebench_client::execute(&client, &target, &spec(1), record(1), &clock, &ExecOptions::default())
            .await;
    let message = r.error.expect("the 404 fails").message;
    assert!(!message.contains("K9secret77"), "{message}");
}

/// Pins a stream in a transfer coding other than chunked (`Transfer-Encoding: gzip, chunked`,
/// real gzip inside the chunks): the coding was ignored and the request failed as "not
/// server-sent events". It fails as SB306, naming the coding.
#[tokio::test]
async fn a_gzip_transfer_coding_is_named_not_misread_as_a_non_sse_body() {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(chunk_free_body().as_bytes()).unwrap();
    let body = gz.finish().unwrap();
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: gzip, chunked\r\n\r\n";
    let mut bytes = head.as_bytes().to_vec();
    bytes.extend(format!("{:x}\r\n", body.len()).as_bytes());
    bytes.extend(&body);
    bytes.extend(b"\r\n0\r\n\r\n");
    let s = serve(vec![vec![A::Read, A::Write(bytes)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Failed, "{r:?}");
    let e = r.error.unwrap();
    assert_eq!(e.cause, Some(servebench_core::FailureCause::ContentCoding), "{e:?}");
    assert!(e.message.contains("transfer coding 'gzip, chunked'"), "{}", e.message);
}

/// Pins usage counts sent as whole floats (`"completion_tokens": 2.0`): the request failed as a
/// protocol error; it completes with the count.
#[tokio::test]
async fn a_usage_count_sent_as_a_whole_float_is_a_count() {
    let usage = concat!(
        r#"data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
        "\n\n",
        r#"data: {"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":5.0,"completion_tokens":2.0}}"#,
        "\n\ndata: [DONE]\n\n"
    );
    let stream = String::from(SSE_HEAD) + &chunk(&(role() + &tok("a") + &tok("b") + usage)) + END;
    let s = serve(vec![vec![A::Read, w(stream)]]).await;
    let r = fixture(s.port, BackendKind::Chat, None).run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!((r.server_prompt_tokens, r.completion_tokens), (Some(5), Some(2)));
}

/// Pins a usage of `completion_tokens: 0` beside streamed text (a server that fills usage with
/// zeros): the count is missing, not 0, as vLLM's `if not output_len` reads it. The run had
/// reported 0 output tokens and 0 tok/s for a stream of text; the text is now kept to be
/// retokenized (`keep_text_without_usage`), and without a tokenizer the events count.
#[tokio::test]
async fn a_zero_completion_token_usage_beside_streamed_text_is_no_count() {
    let script = vec![
        A::Read,
        w(String::from(SSE_HEAD) + &chunk(&(role() + &tok("Hel")))),
        w(chunk(&tok("lo"))),
        w(chunk(&servebench_testkit::script::finish_usage_of(0)) + END),
    ];
    let s = serve(vec![script]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions { keep_text_without_usage: true, ..ExecOptions::default() }).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!((r.completion_tokens, r.output_chars), (Some(0), 5));
    assert_eq!(r.usage_output_tokens(), None);
    assert_eq!(r.output_tokens(), (2, servebench_core::TokenSource::Events));
    assert_eq!(r.generated_text.as_deref(), Some("Hello"), "kept for the tokenizer's count");
}
