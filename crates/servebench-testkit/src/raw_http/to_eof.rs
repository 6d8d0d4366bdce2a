//! A response read to EOF over a `Connection: close` request, with chunked encoding undone as
//! far as the bytes allow: for faults that break the framing (cut connections, bodies that
//! never end) where [`super::Conn`] would give up.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug)]
pub struct Raw {
    /// Nothing at all came back.
    pub empty: bool,
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
    /// Sizes of the chunks, in order.
    pub chunks: Vec<usize>,
    /// The terminating zero-size chunk arrived (a clean end of a chunked body).
    pub clean_end: bool,
    /// Longest gap between two chunks.
    pub max_gap: Duration,
    /// From the arrival of the response head to the arrival of the last body byte.
    pub head_to_body_end: Duration,
}

impl Raw {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    /// The body as JSON, if it parses.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// SSE data payloads, for LF-framed streams with `data: ` lines (an `event:` line before
    /// the data line is dropped).
    pub fn data(&self) -> Vec<String> {
        self.text()
            .split("\n\n")
            .filter(|s| !s.is_empty())
            .map(|s| {
                let s = if s.starts_with("event: ") { s.split_once('\n').map_or(s, |(_, d)| d) } else { s };
                s.strip_prefix("data: ").unwrap_or(s).to_owned()
            })
            .collect()
    }
}

/// Sends `POST path` with `x-request-id: id` and the JSON `body`, and reads everything until
/// EOF.
pub async fn fetch_raw(addr: SocketAddr, path: &str, id: &str, body: &serde_json::Value) -> Raw {
    let body = body.to_string();
    let req = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\nx-request-id: {id}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(req.as_bytes()).await.unwrap();
    let mut all = Vec::new();
    let mut arrivals: Vec<(Instant, usize)> = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                all.extend_from_slice(&buf[..n]);
                arrivals.push((Instant::now(), all.len()));
            }
        }
    }
    parse_raw(&all, &arrivals)
}

/// Parses the bytes of a response; `arrivals` holds (time, bytes received so far) per read.
fn parse_raw(all: &[u8], arrivals: &[(Instant, usize)]) -> Raw {
    let mut raw = Raw {
        empty: all.is_empty(),
        status: 0,
        head: String::new(),
        body: Vec::new(),
        chunks: Vec::new(),
        clean_end: false,
        max_gap: Duration::ZERO,
        head_to_body_end: Duration::ZERO,
    };
    let Some(end) = all.windows(4).position(|w| w == b"\r\n\r\n") else { return raw };
    raw.head = String::from_utf8_lossy(&all[..end]).into_owned();
    raw.status = raw.head.split(' ').nth(1).unwrap().parse().unwrap();
    let arrival = |pos: usize| arrivals.iter().find(|(_, n)| *n >= pos).map(|(t, _)| *t).unwrap();
    let head_at = arrival(end + 4);
    raw.head_to_body_end = arrivals.last().map_or(Duration::ZERO, |(t, _)| *t - head_at);
    let mut pos = end + 4;
    if raw.header("transfer-encoding").as_deref() != Some("chunked") {
        raw.body = all[pos..].to_vec();
        return raw;
    }
    let mut last_at: Option<Instant> = None;
    while let Some(nl) = all[pos..].windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&all[pos..pos + nl]).unwrap(), 16).unwrap();
        pos += nl + 2;
        if size == 0 {
            raw.clean_end = true;
            break;
        }
        if pos + size + 2 > all.len() {
            break;
        }
        raw.body.extend_from_slice(&all[pos..pos + size]);
        raw.chunks.push(size);
        pos += size + 2;
        let at = arrival(pos);
        if let Some(prev) = last_at {
            raw.max_gap = raw.max_gap.max(at - prev);
        }
        last_at = Some(at);
    }
    raw
}
