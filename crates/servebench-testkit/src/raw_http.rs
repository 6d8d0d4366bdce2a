//! A minimal HTTP/1.1 client over a raw `TcpStream`, for testing servers byte by byte:
//! content-length and chunked bodies, keep-alive, a timestamp per received chunk, SSE
//! splitting ([`Conn`], [`Resp`]); and a response read to EOF with chunked encoding undone as
//! far as the bytes allow, for faults that break the framing ([`fetch_raw`], [`Raw`]).

use std::net::SocketAddr;
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

mod to_eof;
pub use to_eof::{fetch_raw, Raw};

/// One HTTP response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Body chunks (chunked transfer encoding) with their arrival times.
    pub chunks: Vec<(Instant, Vec<u8>)>,
    /// When the request was written.
    pub sent: Instant,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    /// SSE `data:` payloads in order (including `[DONE]`).
    pub fn sse_data(&self) -> Vec<String> {
        let text = self.text();
        assert!(text.ends_with("\n\n"), "stream must end with a blank line: {text:?}");
        text.split("\n\n")
            .filter(|s| !s.is_empty())
            .map(|s| s.strip_prefix("data: ").unwrap_or_else(|| panic!("not a data line: {s:?}")).to_owned())
            .collect()
    }

    /// SSE JSON payloads (everything but `[DONE]`, which must be last).
    pub fn sse_json(&self) -> Vec<serde_json::Value> {
        let data = self.sse_data();
        assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
        data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect()
    }
}

/// A keep-alive HTTP/1.1 connection.
#[derive(Debug)]
pub struct Conn {
    io: BufReader<TcpStream>,
    addr: SocketAddr,
}

impl Conn {
    pub async fn connect(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        Conn { io: BufReader::new(s), addr }
    }

    pub async fn get(&mut self, path: &str) -> Resp {
        self.request("GET", path, &[], b"").await
    }

    pub async fn post_json(&mut self, path: &str, body: &serde_json::Value) -> Resp {
        self.post(path, &[], body.to_string().as_bytes()).await
    }

    pub async fn post(&mut self, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        self.request("POST", path, headers, body).await
    }

    pub async fn request(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        let mut all = headers.to_vec();
        if method == "POST" {
            all.push(("content-type", "application/json"));
        }
        self.request_raw_ct(method, path, &all, body).await
    }

    /// A request with exactly `headers` (plus host and, for POST, content-length).
    pub async fn request_raw_ct(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Resp {
        let mut req = format!("{method} {path} HTTP/1.1\r\nhost: {}\r\n", self.addr);
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if method == "POST" {
            req.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        let sent = Instant::now();
        self.io.get_mut().write_all(&bytes).await.unwrap();
        let head = self.read_head(sent).await;
        self.read_body(head).await
    }

    /// Reads until the server closes the connection; the bytes read (a reset counts as a
    /// close).
    pub async fn read_to_end_raw(&mut self, out: &mut Vec<u8>) -> usize {
        self.io.read_to_end(out).await.unwrap_or(0)
    }

    /// Writes a POST request without reading the answer.
    pub async fn send_post(&mut self, path: &str, body: &[u8]) -> Instant {
        let req = format!(
            "POST {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        let sent = Instant::now();
        self.io.get_mut().write_all(&bytes).await.unwrap();
        sent
    }

    async fn line(&mut self) -> String {
        let mut line = String::new();
        let n = self.io.read_line(&mut line).await.unwrap();
        assert!(n > 0, "connection closed");
        line.trim_end_matches(['\r', '\n']).to_owned()
    }

    /// Reads the status line and headers.
    pub async fn read_head(&mut self, sent: Instant) -> Resp {
        let status_line = self.line().await;
        let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let l = self.line().await;
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').unwrap();
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        Resp { status, headers, body: Vec::new(), chunks: Vec::new(), sent }
    }

    /// Reads the body of a response whose head was read.
    pub async fn read_body(&mut self, mut resp: Resp) -> Resp {
        if resp.header("transfer-encoding") == Some("chunked") {
            loop {
                let size = usize::from_str_radix(self.line().await.split(';').next().unwrap(), 16).unwrap();
                if size == 0 {
                    assert_eq!(self.line().await, "");
                    break;
                }
                let mut data = vec![0u8; size];
                self.io.read_exact(&mut data).await.unwrap();
                let at = Instant::now();
                assert_eq!(self.line().await, "");
                resp.body.extend_from_slice(&data);
                resp.chunks.push((at, data));
            }
        } else {
            let len: usize = resp.header("content-length").map(|v| v.parse().unwrap()).unwrap_or(0);
            let mut data = vec![0u8; len];
            self.io.read_exact(&mut data).await.unwrap();
            resp.body = data;
        }
        resp
    }
}
