//! The wire behaviours of real servers and gateways (docs/backends.md, "Network"), each
//! reproduced byte for byte by the scripted server of `common/`: llama.cpp closing after every
//! response, compressing gateways, obs-fold headers, status lines without a reason phrase,
//! HTTP/2-only servers, redirects, servers that do not stream and streams that never stop.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use servebench_client::{BackendKind, ExecOptions};
use servebench_core::{BenchError, ErrorKind, FailureCause, Outcome, UnreachableReason};
use servebench_testkit::net::closed_port;

/// llama.cpp's streamed response head: `Keep-Alive` and no `Connection: close`, yet the
/// server closes the connection right after the terminating chunk.
const LLAMA_HEAD: &str = "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Type: text/event-stream\r\nServer: llama.cpp\r\nTransfer-Encoding: chunked\r\n\r\n";

fn llama_stream() -> String {
    String::from(LLAMA_HEAD) + &chunk(&(tok("a") + &tok("b") + &finish_usage_done())) + END
}

/// Zero failures against a server that closes after every response without saying so, at
/// concurrency 4 (the issue's llama.cpp case); a request that met a dead reused connection is
/// resent once and says so; the client then stops pooling and says so once.
#[tokio::test]
async fn llama_cpp_close_after_every_response_has_zero_failures_and_stops_pooling() {
    let scripts = (0..40).map(|_| vec![A::Read, w(llama_stream()), A::Close]).collect();
    let s = serve(scripts).await;
    let f = std::sync::Arc::new(fixture(s.port, BackendKind::Chat, None));
    let mut workers = Vec::new();
    for k in 0..4u64 {
        let f = f.clone();
        workers.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for j in 0..3 {
                out.push(f.run(k * 3 + j, &ExecOptions::default()).await);
            }
            out
        }));
    }
    let mut records = Vec::new();
    for h in workers {
        records.extend(h.await.unwrap());
    }
    for r in &records {
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
        assert!(r.attempts == 1 + u32::from(r.resent));
    }
    let resent = records.iter().filter(|r| r.resent).count() as u64;
    assert_eq!(f.client.stats().resent, resent);
    assert!(f.client.pooling_disabled(), "{:?}", f.client.stats());
    assert_eq!(
        f.client.take_pooling_notice(),
        Some("server closes connections after each response; not pooling")
    );
    assert_eq!(f.client.take_pooling_notice(), None, "said once");
    // Not pooling: later requests open a connection each and never meet a dead one.
    let before = f.client.stats();
    for i in 20..23 {
        let r = f.run(i, &ExecOptions::default()).await;
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
        assert!(!r.resent && r.reconnects == 0);
    }
    let after = f.client.stats();
    assert_eq!((after.resent, after.stale), (before.resent, before.stale));
    assert_eq!(after.opened - before.opened, 3);
    assert_eq!(f.client.idle_count(), 0);
}

/// The same with a reset instead of EOF: the server reads the second request and resets.
#[tokio::test]
async fn reset_before_the_status_line_on_a_reused_connection_is_resent() {
    let s = serve(vec![vec![A::Read, w(llama_stream()), A::Read, A::Rst], vec![A::Read, w(llama_stream())]])
        .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    assert_eq!(f.run(0, &ExecOptions::default()).await.outcome, Outcome::Completed);
    let r = f.run(1, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert!(r.resent);
    assert_eq!((r.attempts, r.reconnects), (2, 1));
    // Times start at the second send: it is after the first request ended.
    assert_eq!(s.requests.lock().unwrap().len(), 3);
}

fn gzip_pieces(events: &[String]) -> Vec<Vec<u8>> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut out = Vec::new();
    for ev in events {
        e.write_all(ev.as_bytes()).unwrap();
        e.flush().unwrap(); // sync flush: everything written so far is decodable
        out.push(std::mem::take(e.get_mut()));
    }
    out.push(e.finish().unwrap());
    out
}

fn chunk_bytes(b: &[u8]) -> Vec<u8> {
    let mut v = format!("{:x}\r\n", b.len()).into_bytes();
    v.extend_from_slice(b);
    v.extend_from_slice(b"\r\n");
    v
}

/// A gateway that gzips the event stream, flushing per event: every event is decoded when its
/// compressed bytes arrive, so TTFT and ITL are per event; and the request said identity.
#[tokio::test]
async fn gzip_event_stream_flushed_per_event_keeps_per_event_timing() {
    let pieces = gzip_pieces(&[role() + &tok("a"), tok("b"), tok("c"), finish_usage_done()]);
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n";
    let mut script = vec![A::Read, w(head)];
    for p in pieces {
        script.push(A::Write(chunk_bytes(&p)));
        script.push(A::Sleep(40));
    }
    script.push(w(END));
    let s = serve(vec![script]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions { keep_text: true, ..ExecOptions::default() }).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.generated_text.as_deref(), Some("abc"));
    assert_eq!(r.token_event_count, 3);
    assert!(r.token_events.gaps_us.iter().all(|&g| g > 0), "{:?}", r.token_events.gaps_us);
    assert!(r.last_token_us.unwrap() < r.done_us.unwrap());
    let req = s.requests.lock().unwrap()[0].to_ascii_lowercase();
    assert!(req.contains("accept-encoding: identity"), "{req}");
    assert_eq!(f.client.idle_count(), 1, "the connection is reused after a coded body");
}

fn coded_json(coding: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: {coding}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

/// A brotli stream of one uncompressed meta-block (RFC 7932 §9.2); no brotli encoder is a
/// dependency.
fn brotli_stored(data: &[u8]) -> Vec<u8> {
    let bits = (u32::try_from(data.len() - 1).unwrap() << 4) | (1 << 20);
    let mut v = bits.to_le_bytes()[..3].to_vec();
    v.extend_from_slice(data);
    v.push(0x03);
    v
}

/// JSON bodies in br, zstd and deflate (generation and control plane, e.g. a gzipped
/// `/v1/models` that used to break model detection).
#[tokio::test]
async fn compressed_json_bodies_are_decoded() {
    let body = br#"{"id":"x1","choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}"#;
    let zlib = {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(body).unwrap();
        e.finish().unwrap()
    };
    let models = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(br#"{"object":"list","data":[{"id":"m1"}]}"#).unwrap();
        e.finish().unwrap()
    };
    let s = serve(vec![vec![
        A::Read,
        A::Write(coded_json("br", &brotli_stored(body))),
        A::Read,
        A::Write(coded_json("zstd", &zstd::stream::encode_all(&body[..], 3).unwrap())),
        A::Read,
        A::Write(coded_json("deflate", &zlib)),
        A::Read,
        A::Write(coded_json("gzip", &models)),
    ]])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    for i in 0..3 {
        let r = f.run(i, &ExecOptions::default()).await;
        assert_eq!(r.outcome, Outcome::Completed, "{i}: {:?}", r.error);
        assert_eq!(r.completion_tokens, Some(3));
    }
    let v: serde_json::Value = f.client.get_json("/v1/models", f.target.headers()).await.unwrap();
    assert_eq!(v["data"][0]["id"], "m1");
    let get = s.requests.lock().unwrap()[3].to_ascii_lowercase();
    assert!(get.contains("accept-encoding: identity"), "{get}");
    assert_eq!(s.accepted.load(Ordering::SeqCst), 1);
}

/// An unknown coding is a coded error naming it (SB306), for a request and a control call.
#[tokio::test]
async fn unknown_content_coding_is_a_coded_error_naming_it() {
    let s = serve(vec![
        vec![A::Read, A::Write(coded_json("compress", b"\x1f\x9d"))],
        vec![A::Read, A::Write(coded_json("compress", b"\x1f\x9d"))],
    ])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::Protocol), "{:?}", r.error);
    let e = r.error.unwrap();
    assert_eq!(e.cause, Some(FailureCause::ContentCoding));
    let msg = e.message;
    assert!(msg.starts_with("[SB306]") && msg.contains("'compress'"), "{msg}");
    let e = f.client.get_json::<serde_json::Value>("/v1/models", f.target.headers()).await.unwrap_err();
    assert!(matches!(e, BenchError::ContentCoding { .. }), "{e}");
    assert_eq!(e.code().as_str(), "SB306");
    assert!(e.to_string().contains("'compress'"), "{e}");
}

/// RFC 9112 leniency: a status line without a reason phrase and an obs-fold header line.
#[tokio::test]
async fn status_line_without_reason_and_obs_fold_headers_are_accepted() {
    let head = "HTTP/1.1 200\r\ncontent-type: text/event-stream\r\nx-gateway-note: first part\r\n  folded part\r\ntransfer-encoding: chunked\r\n\r\n";
    let s =
        serve(vec![vec![A::Read, w(String::from(head) + &chunk(&(tok("a") + &finish_usage_done())) + END)]])
            .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.http_status, Some(200));
}

/// An HTTP/2-only server answers an HTTP/1.1 request with SETTINGS and GOAWAY frames: a coded
/// error (SB308) that says so, for a request and a control call; and a non-HTTP answer shows
/// its first bytes, escaped.
#[tokio::test]
async fn http2_only_and_non_http_servers_are_named() {
    let frames =
        b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64\x00\x00\x08\x07\x00\x00\x00\x00\x00"
            .to_vec();
    let s = serve(vec![
        vec![A::Read, A::Write(frames.clone()), A::Close],
        vec![A::Read, A::Write(frames), A::Close],
        vec![A::Read, w("SSH-2.0-OpenSSH_9.6\r\n"), A::Close],
    ])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::Protocol), "{:?}", r.error);
    let e = r.error.unwrap();
    assert_eq!(e.cause, Some(FailureCause::NotHttp1));
    let msg = e.message;
    assert!(msg.starts_with("[SB308] server speaks HTTP/2 only"), "{msg}");
    let e = f.client.get_json::<serde_json::Value>("/v1/models", f.target.headers()).await.unwrap_err();
    assert!(matches!(e, BenchError::ServerProtocol { .. }), "{e}");
    assert!(e.to_string().contains("HTTP/2 only") && !e.to_string().contains("[SB308]"), "{e}");
    let r = f.run(1, &ExecOptions::default()).await;
    let msg = r.error.unwrap().message;
    assert!(msg.contains("did not answer with HTTP") && msg.contains("SSH-2.0-OpenSSH_9.6\\r\\n"), "{msg}");
}

fn redirect(code: u16, location: &str) -> String {
    format!("HTTP/1.1 {code} Moved\r\nlocation: {location}\r\ncontent-length: 5\r\n\r\nmoved")
}

/// A 307 for a generation request is followed with the same method and body, on the same
/// connection; the console notice names the final URL.
#[tokio::test]
async fn generation_request_follows_307_with_its_body() {
    let stream = String::from(SSE_HEAD) + &chunk(&(tok("a") + &finish_usage_done())) + END;
    let s = serve(vec![vec![A::Read, w(redirect(307, "/v2/chat/completions")), A::Read, w(stream)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    let reqs = s.requests.lock().unwrap().clone();
    assert!(reqs[1].starts_with("POST /v2/chat/completions HTTP/1.1"), "{}", reqs[1]);
    let body = |r: &str| r.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    assert_eq!(body(&reqs[0]), body(&reqs[1]));
    assert_eq!(s.accepted.load(Ordering::SeqCst), 1);
    let notice = f.client.take_redirect_notice().unwrap();
    assert!(notice.contains(&format!("http://127.0.0.1:{}/v2/chat/completions", s.port)), "{notice}");
    assert!(f.client.take_redirect_notice().is_none());
}

/// 301/302/303 would turn the POST into a GET: a generation request refuses them (SB307);
/// control calls follow them; a loop is refused.
#[tokio::test]
async fn redirect_rules_for_generation_and_control_calls() {
    let models = r#"{"object":"list","data":[{"id":"m1"}]}"#;
    let s = serve(vec![
        vec![A::Read, w(redirect(301, "/v2/chat/completions"))],
        vec![A::Read, w(redirect(301, "/api/v1/models")), A::Read, w(json_ok(models))],
        vec![
            A::Read,
            w(redirect(302, "/a")),
            A::Read,
            w(redirect(302, "/b")),
            A::Read,
            w(redirect(302, "/a")),
        ],
    ])
    .await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(kind(&r), Some(ErrorKind::HttpStatus), "{:?}", r.error);
    let e = r.error.unwrap();
    assert_eq!(e.cause, Some(FailureCause::Redirect));
    assert!(e.message.starts_with("[SB307] the server answered HTTP 301"), "{}", e.message);
    let f = fixture(s.port, BackendKind::Chat, None);
    let v: serde_json::Value = f.client.get_json("/v1/models", f.target.headers()).await.unwrap();
    assert_eq!(v["data"][0]["id"], "m1");
    let f = fixture(s.port, BackendKind::Chat, None);
    let e = f.client.get_json::<serde_json::Value>("/v1/models", f.target.headers()).await.unwrap_err();
    assert!(matches!(e, BenchError::Redirect { .. }), "{e}");
    assert!(e.to_string().contains("redirect loop"), "{e}");
}

/// A redirect to another origin is followed without the credentials, with a warning.
#[tokio::test]
async fn cross_origin_redirect_drops_credentials_and_warns() {
    let stream = String::from(SSE_HEAD) + &chunk(&(tok("a") + &finish_usage_done())) + END;
    let b = serve(vec![vec![A::Read, w(stream)]]).await;
    let to = format!("http://127.0.0.1:{}/v1/chat/completions", b.port);
    let a = serve(vec![vec![A::Read, w(redirect(308, &to))]]).await;
    let f = fixture(a.port, BackendKind::Chat, Some("sk-secret"));
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert!(a.requests.lock().unwrap()[0].to_ascii_lowercase().contains("authorization: bearer sk-secret"));
    let there = b.requests.lock().unwrap()[0].to_ascii_lowercase();
    assert!(
        !there.contains("sk-secret") && there.contains(&format!("host: 127.0.0.1:{}", b.port)),
        "{there}"
    );
    let notice = f.client.take_redirect_notice().unwrap();
    assert!(notice.contains("another origin") && notice.contains(&to), "{notice}");
}

/// A stream that goes on far past max_tokens fails as runaway (SB405) instead of running until
/// the request timeout.
#[tokio::test]
async fn runaway_stream_fails_with_a_coded_error() {
    let events: String = (0..40).map(|_| tok("x")).collect();
    let s = serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &chunk(&events)), A::Sleep(20_000)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await; // max_tokens 2: bound 4 x 2 + 16 = 24
    assert_eq!(kind(&r), Some(ErrorKind::RunawayStream), "{:?}", r.error);
    let e = r.error.unwrap();
    assert_eq!(e.cause, Some(FailureCause::RunawayStream));
    assert!(e.message.starts_with("[SB405] the stream went on past 24 events"), "{}", e.message);
    assert!(r.done_us.is_some());
    // Disabled with a factor of 0: the same stream then waits for its end (here: a timeout).
    let s = serve(vec![vec![A::Read, w(String::from(SSE_HEAD) + &chunk(&events)), A::Sleep(20_000)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let opts = ExecOptions {
        runaway_factor: 0,
        request_timeout: Some(Duration::from_millis(300)),
        ..ExecOptions::default()
    };
    assert_eq!(kind(&f.run(0, &opts).await), Some(ErrorKind::Timeout));
}

/// A stream whose whole body arrives in one read completes; its TTFT equals its E2EL (the
/// runner warns "server did not stream").
#[tokio::test]
async fn stream_in_one_read_completes_with_ttft_equal_to_e2el() {
    let body = String::from(SSE_HEAD) + &chunk(&(tok("a") + &tok("b") + &finish_usage_done())) + END;
    let s = serve(vec![vec![A::Read, w(body)]]).await;
    let f = fixture(s.port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    assert_eq!(r.first_token_us, r.done_us);
}

/// A port nobody listens on: the record's failure is typed where it happens as unreachable
/// (SB315, connection refused), nothing was dispatched; the message stays the connect error.
#[tokio::test]
async fn a_refused_connection_is_typed_unreachable() {
    let port = closed_port();
    let f = fixture(port, BackendKind::Chat, None);
    let r = f.run(0, &ExecOptions::default()).await;
    assert!(r.dispatched_us.is_none());
    let e = r.error.unwrap();
    assert_eq!(e.kind, ErrorKind::Connect);
    assert_eq!(e.cause, Some(FailureCause::Unreachable(UnreachableReason::Refused)));
    assert!(e.message.starts_with(&format!("connect to 127.0.0.1:{port}: ")), "{}", e.message);
}
