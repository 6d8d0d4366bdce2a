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
