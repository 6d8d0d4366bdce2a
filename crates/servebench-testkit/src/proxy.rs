//! A small HTTP proxy for tests: `CONNECT host:port` tunnels (bytes copied both ways) and
//! absolute-form requests forwarded to their origin. It records every request line and
//! `Proxy-Authorization` header it saw, and can demand credentials (407) or refuse CONNECT.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy saw of one client connection.
#[derive(Debug, Clone)]
pub struct Seen {
    pub request_line: String,
    pub proxy_authorization: Option<String>,
}

/// A running test proxy.
#[derive(Debug, Clone)]
pub struct TestProxy {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl TestProxy {
    /// Starts a proxy; with `require_auth`, requests without exactly that
    /// `Proxy-Authorization` value get 407.
    pub async fn start(require_auth: Option<&str>) -> TestProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s, auth) = (seen.clone(), require_auth.map(str::to_owned));
        tokio::spawn(async move {
            loop {
                let Ok((c, _)) = listener.accept().await else { return };
                tokio::spawn(handle(c, s.clone(), auth.clone()));
            }
        });
        TestProxy { addr, seen }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Reads a request head (up to the blank line); returns it and any bytes read after it.
async fn read_head(c: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = c.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).into_owned();
            return Some((head, buf[i + 4..].to_vec()));
        }
    }
}

async fn handle(mut c: TcpStream, seen: Arc<Mutex<Vec<Seen>>>, require_auth: Option<String>) {
    let Some((head, rest)) = read_head(&mut c).await else { return };
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("").to_owned();
    let auth = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("proxy-authorization"))
        .map(|(_, v)| v.trim().to_owned());
    seen.lock().unwrap().push(Seen { request_line: request_line.clone(), proxy_authorization: auth.clone() });
    if require_auth.is_some() && auth != require_auth {
        let _ = c
            .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    }
    let mut parts = request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method == "CONNECT" {
        let Ok(mut up) = TcpStream::connect(target).await else {
            let _ = c.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n").await;
            return;
        };
        let _ = c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await;
        let _ = tokio::io::copy_bidirectional(&mut c, &mut up).await;
        return;
    }
    // Absolute-form: http://host:port/path -> forward this one request (and the rest of the
    // connection's bytes) to the origin with an origin-form request line.
    let Some(rest_of_url) = target.strip_prefix("http://") else {
        let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n").await;
        return;
    };
    let (authority, path) = match rest_of_url.find('/') {
        Some(i) => (&rest_of_url[..i], &rest_of_url[i..]),
        None => (rest_of_url, "/"),
    };
    let Ok(mut up) = TcpStream::connect(authority).await else { return };
    let mut out = format!("{method} {path} HTTP/1.1\r\n");
    for l in head.split("\r\n").skip(1) {
        if !l.to_ascii_lowercase().starts_with("proxy-authorization") {
            out.push_str(l);
            out.push_str("\r\n");
        }
    }
    out.push_str("connection: close\r\n\r\n");
    let _ = up.write_all(out.as_bytes()).await;
    let _ = up.write_all(&rest).await;
    let _ = tokio::io::copy_bidirectional(&mut c, &mut up).await;
}
