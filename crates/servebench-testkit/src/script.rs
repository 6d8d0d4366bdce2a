//! A scripted HTTP server on 127.0.0.1: each accepted connection plays a script — read a
//! request, write bytes in chosen frames, pause, wait for the test, close with FIN or reset —
//! so framing, timing and connection reuse are reproduced byte for byte. Plus builders for the
//! bytes real servers send (heads, chunks, SSE events).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// One step of a connection's script.
#[derive(Debug, Clone)]
pub enum Step {
    /// Read one request (head + `content-length` body) and record it.
    Read,
    /// Write these bytes (one write call).
    Write(Vec<u8>),
    /// Pause for this many milliseconds.
    Sleep(u64),
    /// Wait until the test notifies.
    Wait(Arc<Notify>),
    /// Close with FIN.
    Close,
    /// Close with a reset (RST: `SO_LINGER` 0).
    Rst,
}

/// A running scripted server.
#[derive(Debug)]
pub struct ScriptedServer {
    pub port: u16,
    /// Connections accepted so far.
    pub accepted: Arc<AtomicUsize>,
    /// Every request read, in order (head and body as text).
    pub requests: Arc<Mutex<Vec<String>>>,
}

impl ScriptedServer {
    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// The requests read so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("requests").clone()
    }
}

/// Serves `scripts`: the n-th accepted connection plays the n-th script; a connection beyond
/// the last script is closed at once. Runs on the current runtime.
pub async fn serve(scripts: Vec<Vec<Step>>) -> ScriptedServer {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let port = l.local_addr().expect("local address").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (acc, reqs) = (accepted.clone(), requests.clone());
    tokio::spawn(async move {
        let mut scripts = scripts.into_iter();
        loop {
            let Ok((sock, _)) = l.accept().await else { return };
            acc.fetch_add(1, Ordering::SeqCst);
            let Some(script) = scripts.next() else {
                drop(sock);
                continue;
            };
            tokio::spawn(play(sock, script, reqs.clone()));
        }
    });
    ScriptedServer { port, accepted, requests }
}

/// Serves connections whose order is not known in advance (a readiness probe, concurrent
/// requests): each connection reads one request, records it, and plays the script `respond`
/// returns for it (routing by method and path). Runs on the current runtime.
pub async fn serve_by_request<F>(respond: F) -> ScriptedServer
where
    F: Fn(&str) -> Vec<Step> + Send + Sync + 'static,
{
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let port = l.local_addr().expect("local address").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (acc, reqs, respond) = (accepted.clone(), requests.clone(), Arc::new(respond));
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = l.accept().await else { return };
            acc.fetch_add(1, Ordering::SeqCst);
            let (reqs, respond) = (reqs.clone(), respond.clone());
            tokio::spawn(async move {
                let Some(request) = read_request(&mut sock, &mut Vec::new()).await else { return };
                let script = respond(&request);
                reqs.lock().expect("requests").push(request);
                play(sock, script, reqs).await;
            });
        }
    });
    ScriptedServer { port, accepted, requests }
}

/// Starts a server ([`serve`], [`serve_by_request`], …) on a runtime of its own, in a background
/// thread: for synchronous tests (blocking HTTP clients, the `servebench` binary). The server
/// lives until the test process ends.
pub fn in_background<F, Fut>(start: F) -> ScriptedServer
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ScriptedServer>,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async move {
            tx.send(start().await).expect("report the server");
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("server started")
}

/// [`serve`] in the background ([`in_background`]).
pub fn serve_in_background(scripts: Vec<Vec<Step>>) -> ScriptedServer {
    in_background(move || serve(scripts))
}

/// A complete response with this status line, `content-type`, `content-length` and
/// `connection: close`, for a script that writes it and closes.
pub fn response(status: u16, reason: &str, content_type: &str, body: &[u8]) -> Step {
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    Step::Write([head.as_bytes(), body].concat())
}

/// [`serve`] where every connection plays the same script (as many connections as come).
pub async fn serve_each(script: Vec<Step>) -> ScriptedServer {
    serve(std::iter::repeat_n(script, 10_000).collect()).await
}

/// Plays one script on an accepted connection; once it is done, keeps the connection open
/// until the client closes it.
pub async fn play(mut sock: TcpStream, script: Vec<Step>, reqs: Arc<Mutex<Vec<String>>>) {
    let _ = sock.set_nodelay(true);
    let mut buf = Vec::new();
    for step in script {
        match step {
            Step::Read => match read_request(&mut sock, &mut buf).await {
                Some(r) => reqs.lock().expect("requests").push(r),
                None => return,
            },
            Step::Write(b) => {
                if sock.write_all(&b).await.is_err() {
                    return;
                }
            }
            Step::Sleep(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            Step::Wait(n) => n.notified().await,
            Step::Close => {
                let _ = sock.shutdown().await;
                return;
            }
            Step::Rst => {
                #[allow(deprecated)]
                let _ = sock.set_linger(Some(Duration::ZERO));
                return;
            }
        }
    }
    let mut sink = [0u8; 1024];
    while let Ok(n) = sock.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
}

/// Reads one request (head + `content-length` body) from `sock`, keeping extra bytes in `buf`.
/// `None` at EOF or on an error.
pub async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    let mut tmp = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let total = end + 4 + content_length(&head);
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

/// The `content-length` of a request head (0 without one).
pub fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The body of a request as [`ScriptedServer::requests`] records it.
pub fn body_of(request: &str) -> &str {
    request.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

/// A streamed 200 head: SSE, chunked, with an `x-request-id`.
pub const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nx-request-id: srv-7\r\n\r\n";

/// The last chunk of a chunked body.
pub const END: &str = "0\r\n\r\n";

/// One chunk of a chunked body.
pub fn chunk(s: &str) -> String {
    format!("{:x}\r\n{s}\r\n", s.len())
}

/// A [`Step::Write`] of text.
pub fn w(s: impl Into<String>) -> Step {
    Step::Write(s.into().into_bytes())
}

/// A complete 200 JSON response with `content-length`.
pub fn json_ok(body: &str) -> String {
    json_status(200, "OK", body)
}

/// A complete JSON response with this status and `content-length`.
pub fn json_status(status: u16, reason: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// The chat role chunk as vLLM sends it first.
pub fn role() -> String {
    r#"data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#
        .to_owned()
        + "\n\n"
}

/// A chat content chunk carrying `t`.
pub fn tok(t: &str) -> String {
    format!("data: {{\"id\":\"chatcmpl-1\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{t}\"}},\"finish_reason\":null}}]}}\n\n")
}

/// A chat finish chunk, a separate usage chunk (5 prompt, 2 completion tokens) and `[DONE]`.
pub fn finish_usage_done() -> String {
    finish_usage_of(2)
}

/// [`finish_usage_done`] with `completion` completion tokens in the usage chunk.
pub fn finish_usage_of(completion: u32) -> String {
    let finish = r#"data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#;
    let usage = format!(
        r#"data: {{"id":"chatcmpl-1","choices":[],"usage":{{"prompt_tokens":5,"completion_tokens":{completion},"prompt_tokens_details":{{"cached_tokens":0}}}}}}"#
    );
    format!("{finish}\n\n{usage}\n\ndata: [DONE]\n\n")
}
