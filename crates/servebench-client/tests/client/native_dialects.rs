//! The native dialects (TGI, SGLang, llama.cpp, Anthropic) over real sockets: a scripted
//! server on 127.0.0.1 answers with a hand-written fixture (`fixtures/*.sse`, source doc in
//! each header), one chunked write per fixture frame (`: frame T` lines) with a pause between
//! frames. Exact timings are checked in the replay tests of `src/api/tests.rs`; here the
//! structure that timing must keep is checked — events of one frame share a timestamp (gap 0),
//! events of different frames do not — along with request paths, bodies, headers and counts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use servebench_client::Dialect;
use servebench_client::{
    execute, BackendKind, ClientOptions, ExecOptions, HttpClient, RequestTarget, TargetConfig,
};
use servebench_core::{ErrorKind, Outcome, Prompt, RequestRecord, RequestSpec, RunClock};
use servebench_testkit::script::{self, chunk, w, ScriptedServer, Step, END};

/// `(arrival µs, bytes)` frames of a fixture, split at its `: frame T` lines.
fn frames(fixture: &str) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = Vec::new();
    let mut pending = String::new();
    for line in fixture.split_inclusive('\n') {
        if let Some(t) = line.strip_prefix(": frame ") {
            out.push((t.trim().parse().unwrap(), std::mem::take(&mut pending)));
        }
        match out.last_mut() {
            Some(f) => f.1.push_str(line),
            None => pending.push_str(line),
        }
    }
    out
}

/// Serves one request with `fixture` (the shared kit's scripted server), pausing `gap_µs / 10`
/// ms between frames.
async fn serve(fixture: &'static str) -> ScriptedServer {
    let mut steps = vec![Step::Read, w(HEAD)];
    let mut prev = None;
    for (t, bytes) in frames(fixture) {
        if let Some(p) = prev {
            steps.push(Step::Sleep((t - p) / 10));
        }
        prev = Some(t);
        steps.push(w(chunk(&bytes)));
    }
    steps.push(w(END));
    script::serve(vec![steps]).await
}

const HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

async fn run(dialect: Dialect, fixture: &'static str, api_key: Option<&str>) -> (RequestRecord, String) {
    let server = serve(fixture).await;
    let client = HttpClient::new(ClientOptions {
        base_url: server.base_url(),
        connect_timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    })
    .unwrap();
    let cfg = TargetConfig {
        backend: BackendKind::Native(dialect),
        model: "m".into(),
        api_key: api_key.map(Into::into),
        ignore_eos: true,
        ..TargetConfig::default()
    };
    let target = RequestTarget::new(&client, &cfg).unwrap();
    let spec = RequestSpec::new(0, Prompt::Text(Arc::from("hello")), 5, 4);
    let rec = RequestRecord::scheduled(0, "bench-0".into(), 0, 5, 4);
    let opts = ExecOptions {
        keep_text: true,
        request_timeout: Some(Duration::from_secs(20)),
        ..ExecOptions::default()
    };
    let r = execute(&client, &target, &spec, rec, &RunClock::start(), &opts).await;
    let req = server.requests().first().cloned().unwrap_or_default();
    (r, req)
}

/// Gaps between frames are positive; gaps inside a frame are exactly zero.
fn assert_gap_shape(r: &RequestRecord, zero: &[bool]) {
    let g = &r.token_events.gaps_us;
    assert_eq!(g.len(), zero.len(), "{g:?}");
    for (gap, z) in g.iter().zip(zero) {
        assert_eq!(*gap == 0, *z, "{g:?}");
    }
    let (d, ft, lt, done) =
        (r.dispatched_us.unwrap(), r.first_token_us.unwrap(), r.last_token_us.unwrap(), r.done_us.unwrap());
    assert!(d <= ft && ft < lt && lt <= done, "{d} {ft} {lt} {done}");
    assert_eq!(lt - ft, g.iter().map(|&x| u64::from(x)).sum::<u64>());
}

fn body(req: &str) -> serde_json::Value {
    serde_json::from_str(&req[req.find("\r\n\r\n").unwrap() + 4..]).unwrap()
}

#[tokio::test]
async fn tgi_generate_stream() {
    let (r, req) = run(Dialect::Tgi, include_str!("../fixtures/tgi_stream.sse"), Some("sk-tgi")).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_gap_shape(&r, &[false, true, false]);
    assert_eq!((r.token_event_count, r.completion_tokens, r.server_prompt_tokens), (4, Some(4), Some(7)));
    assert_eq!(r.token_events.tokens, vec![1, 1, 1, 1]);
    assert_eq!(r.done_us, r.last_token_us); // the final event carries the last (EOS) token
    assert_eq!(r.generated_text.as_deref(), Some("Deep learning is"));
    assert!(req.starts_with("POST /generate_stream HTTP/1.1"), "{req}");
    assert!(req.to_ascii_lowercase().contains("authorization: bearer sk-tgi"));
    let b = body(&req);
    assert_eq!(b["inputs"], "hello");
    assert_eq!(b["parameters"]["max_new_tokens"], 4);
    assert_eq!(b["parameters"]["details"], true);
}

#[tokio::test]
async fn sglang_cumulative_stream_over_a_socket_gives_deltas_and_meta_info_counts() {
    let (r, req) = run(Dialect::Sglang, include_str!("../fixtures/sglang_stream.sse"), None).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_gap_shape(&r, &[false, true, false]);
    assert_eq!(r.token_events.tokens, vec![1, 1, 1, 2]);
    assert_eq!(
        (r.completion_tokens, r.server_prompt_tokens, r.cached_prompt_tokens),
        (Some(5), Some(9), Some(4))
    );
    assert_eq!(r.generated_text.as_deref(), Some("The capital of France"));
    assert_eq!(r.done_us, r.last_token_us); // [DONE] in the same frame as the last text
    assert!(req.starts_with("POST /generate HTTP/1.1"));
    let b = body(&req);
    assert_eq!((b["text"].as_str(), b["stream"].as_bool()), (Some("hello"), Some(true)));
    assert_eq!(b["sampling_params"], serde_json::json!({"max_new_tokens": 4, "ignore_eos": true}));
}

#[tokio::test]
async fn llamacpp_completion_crlf() {
    let (r, req) = run(Dialect::LlamaCpp, include_str!("../fixtures/llamacpp_stream.sse"), None).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_gap_shape(&r, &[false, true, false]);
    assert!(r.done_us.unwrap() > r.last_token_us.unwrap()); // the stop event came in its own frame
    assert_eq!(
        (r.completion_tokens, r.server_prompt_tokens, r.cached_prompt_tokens),
        (Some(4), Some(6), Some(4))
    );
    assert_eq!(r.finish_reason.as_deref(), Some("limit"));
    assert!(req.starts_with("POST /completion HTTP/1.1"));
    assert_eq!(
        body(&req),
        serde_json::json!({"prompt":"hello","n_predict":4,"stream":true,"ignore_eos":true})
    );
}

#[tokio::test]
async fn anthropic_messages_with_key_redacted() {
    let (r, req) =
        run(Dialect::Anthropic, include_str!("../fixtures/anthropic_stream.sse"), Some("sk-ant-secret"))
            .await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_gap_shape(&r, &[false, false]);
    assert!(r.first_token_us < r.first_content_us); // thinking first, then text
    assert_eq!((r.reasoning_events, r.content_events), (1, 2));
    assert_eq!(
        (r.completion_tokens, r.server_prompt_tokens, r.cached_prompt_tokens),
        (Some(7), Some(25), Some(15))
    );
    assert!(req.starts_with("POST /v1/messages HTTP/1.1"));
    let lower = req.to_ascii_lowercase();
    assert!(lower.contains("x-api-key: sk-ant-secret") && lower.contains("anthropic-version: 2023-06-01"));
    assert!(!lower.contains("authorization"));
    assert!(!serde_json::to_string(&r).unwrap().contains("sk-ant"));
    assert_eq!(body(&req)["max_tokens"], 4);
}

#[tokio::test]
async fn errors_mid_stream_fail_with_server_error() {
    for (d, fixture, needle) in [
        (Dialect::Tgi, include_str!("../fixtures/tgi_error.sse"), "CUDA out of memory"),
        (Dialect::Sglang, include_str!("../fixtures/sglang_abort.sse"), "context length"),
        (Dialect::LlamaCpp, include_str!("../fixtures/llamacpp_error.sse"), "Context size"),
        (Dialect::Anthropic, include_str!("../fixtures/anthropic_error.sse"), "Overloaded"),
    ] {
        let (r, _) = run(d, fixture, None).await;
        let e = r.error.clone().unwrap_or_else(|| panic!("{d:?}: {r:?}"));
        assert_eq!((r.outcome, e.kind), (Outcome::Failed, ErrorKind::ServerError), "{d:?}");
        assert!(e.message.contains(needle), "{d:?}: {}", e.message);
        assert!(r.done_us.is_some());
    }
}
