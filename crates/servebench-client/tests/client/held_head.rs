//! A server that reads the request and holds back its response head until it starts the
//! request (llama.cpp answers `200` only when a slot takes the task; a queued request waits
//! without one byte of an answer). A request stopped there was written: it is sent and in
//! flight, never "not sent" — `dispatched_us` is the start of its write, as for an answered one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;

use std::sync::Arc;
use std::time::Duration;

use servebench_client::request::{execute_controlled, RequestControls};
use servebench_client::{BackendKind, ExecOptions};
use servebench_core::{CancelReason, ErrorKind, Outcome, RequestRecord};
use servebench_testkit::script::ScriptedServer;
use tokio::sync::Notify;

/// Reads the request, then never answers (the queue of a busy llama.cpp).
async fn holding_server() -> ScriptedServer {
    serve(vec![vec![A::Read, A::Wait(Arc::new(Notify::new()))]]).await
}

/// Completes once the server has read `n` requests.
async fn server_read(s: &ScriptedServer, n: usize) {
    while s.requests().len() < n {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn run_controlled(
    f: &Fixture,
    opts: &ExecOptions,
    controls: RequestControls,
    cancel: impl std::future::Future<Output = ()>,
) -> RequestRecord {
    execute_controlled(&f.client, &f.target, &spec(0), None, record(0), &f.clock, opts, controls, cancel)
        .await
}

#[tokio::test]
async fn cancelled_while_the_head_is_held_back_counts_as_sent() {
    let s = holding_server().await;
    let f = fixture(s.port, BackendKind::Completions, None);
    let r = run_controlled(&f, &ExecOptions::default(), RequestControls::default(), server_read(&s, 1)).await;
    assert_eq!(r.outcome, Outcome::Cancelled);
    assert_eq!(r.headers_us, None, "no head arrived");
    let (d, done) = (r.dispatched_us.expect("written, so dispatched"), r.done_us.unwrap());
    assert!(d <= done, "{d} {done}");
    assert_eq!(r.error_entry(), "cancelled", "not 'cancelled: never sent'");
    assert_eq!(r.attempts, 1);
}

#[tokio::test]
async fn cancelled_by_design_while_the_head_is_held_back_counts_as_sent() {
    let s = holding_server().await;
    let f = fixture(s.port, BackendKind::Completions, None);
    // The delay only has to outlast the write; the server never answers.
    let controls = RequestControls { prefill_slot: None, cancel_after: Some(Duration::from_millis(1000)) };
    let r = run_controlled(&f, &ExecOptions::default(), controls, std::future::pending()).await;
    assert_eq!(s.requests().len(), 1, "the request was read by the server");
    assert_eq!((r.outcome, r.cancelled_by), (Outcome::Cancelled, Some(CancelReason::ByDesign)));
    assert!(r.dispatched_us.is_some() && r.headers_us.is_none(), "{r:?}");
}

#[tokio::test]
async fn timed_out_while_the_head_is_held_back_counts_as_sent() {
    let s = holding_server().await;
    let f = fixture(s.port, BackendKind::Completions, None);
    let opts = ExecOptions { request_timeout: Some(Duration::from_millis(1000)), ..ExecOptions::default() };
    let r = run_controlled(&f, &opts, RequestControls::default(), std::future::pending()).await;
    assert_eq!(s.requests().len(), 1);
    assert_eq!(kind(&r), Some(ErrorKind::Timeout), "{:?}", r.error);
    assert!(r.dispatched_us.is_some() && r.headers_us.is_none(), "{r:?}");
}
