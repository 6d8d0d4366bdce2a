//! A scripted HTTP server on 127.0.0.1 for the client's tests: each accepted connection plays
//! a script (read a request, write bytes in chosen frames, pause, close with FIN or reset), so
//! framing, timing and connection-reuse behaviour are checked exactly. Shared by the test
//! binaries (`mod common;`); each uses part of it.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use servebench_client::{
    execute, BackendKind, ClientOptions, ExecOptions, HttpClient, RequestTarget, TargetConfig,
};
use servebench_core::{ErrorKind, Prompt, RequestRecord, RequestSpec, RunClock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

#[derive(Clone)]
pub enum A {
    /// Read one request (head + content-length body) and record it.
    Read,
    Write(Vec<u8>),
    Sleep(u64),
    /// Wait until the test notifies.
    Wait(Arc<Notify>),
    /// Close with FIN.
    Close,
    /// Close with a reset (RST: SO_LINGER 0).
    Rst,
}

pub struct Server {
    pub port: u16,
    pub accepted: Arc<AtomicUsize>,
    pub requests: Arc<Mutex<Vec<String>>>,
}

pub async fn serve(scripts: Vec<Vec<A>>) -> Server {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (acc, reqs) = (accepted.clone(), requests.clone());
    tokio::spawn(async move {
        let mut scripts = scripts.into_iter();
        loop {
            let Ok((sock, _)) = l.accept().await else { return };
            acc.fetch_add(1, Ordering::SeqCst);
            let Some(script) = scripts.next() else {
                drop(sock); // unexpected connection: refuse by closing
                continue;
            };
            tokio::spawn(play(sock, script, reqs.clone()));
        }
    });
    Server { port, accepted, requests }
}

pub async fn play(mut sock: TcpStream, script: Vec<A>, reqs: Arc<Mutex<Vec<String>>>) {
    sock.set_nodelay(true).unwrap();
    let mut buf = Vec::new();
    for a in script {
        match a {
            A::Read => match read_request(&mut sock, &mut buf).await {
                Some(r) => reqs.lock().unwrap().push(r),
                None => return,
            },
            A::Write(b) => {
                if sock.write_all(&b).await.is_err() {
                    return;
                }
            }
            A::Sleep(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            A::Wait(n) => n.notified().await,
            A::Close => {
                let _ = sock.shutdown().await;
                drop(sock);
                return;
            }
            A::Rst => {
                // Linger 0: the close sends RST at once (no blocking on a zero timeout).
                #[allow(deprecated)]
                let _ = sock.set_linger(Some(Duration::ZERO));
                drop(sock);
                return;
            }
        }
    }
    // Script done: keep the connection open until the client closes it.
    let mut sink = [0u8; 1024];
    while let Ok(n) = sock.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
}

pub async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    let mut tmp = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            let total = end + 4 + len;
            while buf.len() < total {
                let n = sock.read(&mut tmp).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            let req = String::from_utf8_lossy(&buf[..total]).to_string();
            buf.drain(..total);
            return Some(req);
        }
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

pub const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nx-request-id: srv-7\r\n\r\n";

pub fn chunk(s: &str) -> String {
    format!("{:x}\r\n{s}\r\n", s.len())
}

pub const END: &str = "0\r\n\r\n";

pub fn w(s: impl Into<String>) -> A {
    A::Write(s.into().into_bytes())
}

pub fn role() -> String {
    r#"data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#
        .to_owned()
        + "\n\n"
}

pub fn tok(t: &str) -> String {
    format!("data: {{\"id\":\"chatcmpl-1\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{t}\"}},\"finish_reason\":null}}]}}\n\n")
}

pub fn finish_usage_done() -> String {
    concat!(
        r#"data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
        "\n\n",
        r#"data: {"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}"#,
        "\n\ndata: [DONE]\n\n"
    )
    .to_owned()
}

pub fn json_ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

pub struct Fixture {
    pub client: HttpClient,
    pub target: RequestTarget,
    pub clock: RunClock,
}

pub fn fixture(port: u16, backend: BackendKind, api_key: Option<&str>) -> Fixture {
    let client = HttpClient::new(ClientOptions {
        base_url: format!("http://127.0.0.1:{port}"),
        connect_timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    })
    .unwrap();
    let cfg = TargetConfig {
        backend,
        model: "m".into(),
        api_key: api_key.map(Into::into),
        ..TargetConfig::default()
    };
    let target = RequestTarget::new(&client, &cfg).unwrap();
    Fixture { client, target, clock: RunClock::start() }
}

pub fn spec(i: u64) -> RequestSpec {
    RequestSpec {
        index: i,
        prompt: Prompt::Text(Arc::from("hello")),
        prompt_tokens: 5,
        expected_output_tokens: 2,
        multimodal: None,
        rerank: None,
        messages: None,
    }
}

pub fn record(i: u64) -> RequestRecord {
    RequestRecord::scheduled(i, format!("bench-{i}"), 0, 5, 2)
}

impl Fixture {
    pub async fn run(&self, i: u64, opts: &ExecOptions) -> RequestRecord {
        execute(&self.client, &self.target, &spec(i), record(i), &self.clock, opts).await
    }
}

pub fn kind(r: &RequestRecord) -> Option<ErrorKind> {
    r.error.as_ref().map(|e| e.kind)
}
