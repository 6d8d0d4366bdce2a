//! The CPU floor of reading SSE streams on this host: a client that does nothing but read.
//!
//! It opens `--streams` keep-alive connections to a running simulator (or any OpenAI-style
//! server), sends `--reqs` streaming completions requests on each, one after another, and
//! reads every response to its `[DONE]` with plain socket reads — no HTTP decoding, no SSE
//! framing, no JSON, no records. The CPU it spends per SSE event (user and kernel, from
//! `/proc/self/stat`) is what any client pays on this host before doing any work of its own;
//! `docs/performance.md` compares servebench's own figure with it.
//!
//! ```sh
//! servebench sim --port 18471 --sim-ttft-ms 50 --sim-itl-ms 10 &
//! cargo run --release -p servebench-client --example floor_client -- 127.0.0.1:18471 1000 3 100
//! ```
//! Arguments: address, streams, requests per stream, max tokens per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// User and system CPU seconds of this process so far (`utime`, `stime` at 100 Hz ticks).
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (tick(11), tick(12))
}

async fn stream(addr: String, reqs: u32, max_tokens: u32, events: Arc<AtomicU64>) -> std::io::Result<()> {
    let mut s = TcpStream::connect(&addr).await?;
    s.set_nodelay(true)?;
    let body = format!(
        r#"{{"model":"servebench-sim","prompt":"hello there","max_tokens":{max_tokens},"stream":true,"stream_options":{{"include_usage":true}},"ignore_eos":true}}"#
    );
    let req = format!(
        "POST /v1/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut buf = vec![0u8; 4096];
    for _ in 0..reqs {
        s.write_all(req.as_bytes()).await?;
        let mut tail = Vec::new(); // the last bytes seen, to find "[DONE]" across reads
        loop {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed"));
            }
            let data = &buf[..n];
            events.fetch_add(memchr::memmem::find_iter(data, b"data:").count() as u64, Ordering::Relaxed);
            tail.extend_from_slice(data);
            if memchr::memmem::find(&tail, b"[DONE]").is_some() {
                // The chunked terminator follows [DONE]; it is read with the next response
                // or is already here. Either way, nothing of the next response is consumed.
                break;
            }
            let keep = tail.len().saturating_sub(8);
            tail.drain(..keep);
        }
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = args.first().cloned().unwrap_or_else(|| "127.0.0.1:18471".to_owned());
    let num = |i: usize, d: u32| args.get(i).and_then(|v| v.parse().ok()).unwrap_or(d);
    let (streams, reqs, max_tokens) = (num(1, 1000), num(2, 3), num(3, 100));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let events = Arc::new(AtomicU64::new(0));
    let (u0, s0) = cpu_seconds();
    let t0 = Instant::now();
    let failed = rt.block_on(async {
        let tasks: Vec<_> = (0..streams)
            .map(|_| tokio::spawn(stream(addr.clone(), reqs, max_tokens, events.clone())))
            .collect();
        let mut failed = 0;
        for t in tasks {
            if !matches!(t.await, Ok(Ok(()))) {
                failed += 1;
            }
        }
        failed
    });
    let (u1, s1) = cpu_seconds();
    let n = events.load(Ordering::Relaxed).max(1) as f64;
    println!(
        "streams {streams} reqs/stream {reqs} events {n} failed {failed} wall {:.2} s | user {:.2} s sys {:.2} s | µs/event user {:.2} sys {:.2} total {:.2}",
        t0.elapsed().as_secs_f64(),
        u1 - u0,
        s1 - s0,
        (u1 - u0) * 1e6 / n,
        (s1 - s0) * 1e6 / n,
        (u1 - u0 + s1 - s0) * 1e6 / n
    );
    Ok(())
}
