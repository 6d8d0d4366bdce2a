//! HTTP phase timing of one request against a scripted server: the response head written in
//! two pieces, then the first token later, pins "first byte" before "response head" before
//! "first token"; the second request on the connection reuses it and has no set-up phases.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use crate::common::*;

use servebench_client::{BackendKind, ExecOptions};
use servebench_core::Outcome;

/// One streamed answer whose head arrives in two pieces 30 ms apart and whose first token
/// follows 30 ms after the head.
fn split_head_answer() -> Vec<A> {
    let (head_start, head_rest) = SSE_HEAD.split_at(12);
    vec![
        A::Read,
        w(head_start),
        A::Sleep(30),
        w(head_rest),
        A::Sleep(30),
        w(chunk(&(role() + &tok("Hel")))),
        A::Sleep(30),
        w(chunk(&tok("lo"))),
        w(chunk(&finish_usage_done()) + END),
    ]
}

#[tokio::test]
async fn first_byte_response_head_and_first_token_are_told_apart_and_reuse_has_no_setup() {
    let mut script = split_head_answer();
    script.extend(split_head_answer());
    let s = serve(vec![script]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    let p = r.phases.unwrap();
    assert!(!p.reused, "the request opened its connection");
    assert!(p.connect_us.is_some(), "{p:?}");
    assert_eq!((p.dns_us, p.tls_us), (None, None), "an IP address over http: no DNS, no TLS");
    let d = r.dispatched_us.unwrap();
    let head = r.headers_us.unwrap() - d;
    let first_token = r.first_token_us.unwrap() - d;
    let (written, first_byte, last_byte) =
        (p.written_us.unwrap(), p.first_byte_us.unwrap(), p.last_byte_us.unwrap());
    // The server sleeps between the pieces: each boundary is a later read.
    assert!(u64::from(written) <= u64::from(first_byte), "{p:?}");
    assert!(u64::from(first_byte) < head, "first byte {first_byte} before the head's end {head}");
    assert!(head < first_token, "head {head} before the first token {first_token}");
    assert!(first_token < u64::from(last_byte), "first token {first_token} before the last byte {last_byte}");
    assert_eq!(u64::from(last_byte), r.done_us.unwrap() - d, "[DONE] and the last chunk came in one read");

    let again = f.run(1, &ExecOptions::default()).await;
    assert_eq!(again.outcome, Outcome::Completed, "{:?}", again.error);
    let q = again.phases.unwrap();
    assert!(q.reused, "{q:?}");
    assert_eq!((q.dns_us, q.connect_us, q.tls_us), (None, None, None), "no set-up on a reused connection");
    assert!(u64::from(q.first_byte_us.unwrap()) < again.headers_us.unwrap() - again.dispatched_us.unwrap());
    assert_eq!(s.connections(), 1);
}
