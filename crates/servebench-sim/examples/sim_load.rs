//! Load generator for the simulator alone: N concurrent keep-alive streams of completions with
//! fixed timing, for a while; prints events/s received, and the server-side send lateness
//! (event sent − its deadline) from the ground truth.
//!
//! ```text
//! cargo run --release -p servebench-sim --example sim_load -- \
//!     --streams 1000 --itl-ms 10 --ttft-ms 50 --tokens 200 --secs 10
//! ```
//! Options: `--streams N`, `--itl-ms F`, `--ttft-ms F`, `--tokens N` (per request),
//! `--secs N` (load duration), `--threads N` (tokio workers, default: all cores),
//! `--tokenizer SPEC` (default: the SmolLM2 fixture), `--addr HOST:PORT` (drive an already
//! running simulator, e.g. the `serve` example in another process, to measure the server's CPU
//! apart from the client's; no ground truth then).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use servebench_sim::{SimConfig, TimingModel};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Args {
    streams: usize,
    itl_ms: f64,
    ttft_ms: f64,
    tokens: u32,
    secs: u64,
    threads: usize,
    tokenizer: String,
    addr: Option<std::net::SocketAddr>,
}

fn args() -> Args {
    let mut a = Args {
        streams: 1000,
        itl_ms: 10.0,
        ttft_ms: 50.0,
        tokens: 200,
        secs: 10,
        threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
        tokenizer: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/tokenizers/smollm2-135m/tokenizer.json"
        )
        .to_string(),
        addr: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let v = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--streams" => a.streams = v.parse().unwrap(),
            "--itl-ms" => a.itl_ms = v.parse().unwrap(),
            "--ttft-ms" => a.ttft_ms = v.parse().unwrap(),
            "--tokens" => a.tokens = v.parse().unwrap(),
            "--secs" => a.secs = v.parse().unwrap(),
            "--threads" => a.threads = v.parse().unwrap(),
            "--tokenizer" => a.tokenizer = v,
            "--addr" => a.addr = Some(v.parse().unwrap()),
            other => panic!("unknown option {other}"),
        }
    }
    a
}

fn count(hay: &[u8], needle: &[u8]) -> u64 {
    hay.windows(needle.len()).filter(|w| *w == needle).count() as u64
}

/// One keep-alive connection sending streaming requests back to back until `stop`.
async fn client(addr: std::net::SocketAddr, i: usize, tokens: u32, stop: Instant, events: Arc<AtomicU64>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let body = format!(
        "{{\"prompt\":\"load test prompt {i}\",\"max_tokens\":{tokens},\"ignore_eos\":true,\"stream\":true}}"
    );
    let mut n = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    while Instant::now() < stop {
        let req = format!(
            "POST /v1/completions HTTP/1.1\r\nhost: x\r\nx-request-id: c{i}-{n}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        n += 1;
        s.write_all(req.as_bytes()).await.unwrap();
        let mut tail: Vec<u8> = Vec::new();
        loop {
            let k = s.read(&mut buf).await.unwrap();
            assert!(k > 0, "server closed the connection");
            // Keep a few bytes of the previous read so needles split across reads are found.
            let keep = tail.len().min(16);
            let mut window = tail[tail.len() - keep..].to_vec();
            window.extend_from_slice(&buf[..k]);
            events.fetch_add(
                count(&window, b"\"text\":\"") - count(&window[..keep], b"\"text\":\""),
                Ordering::Relaxed,
            );
            tail = window;
            if tail.ends_with(b"data: [DONE]\n\n\r\n0\r\n\r\n") {
                break;
            }
        }
    }
}

fn main() {
    let a = args();
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(a.threads).enable_all().build().unwrap();
    rt.block_on(async move {
        let sim = match a.addr {
            Some(_) => None,
            None => {
                let tok = servebench_data::load_tokenizer(&a.tokenizer).unwrap();
                let mut cfg =
                    SimConfig::new("sim", tok).with_ground_truth(true).with_default_max_tokens(a.tokens);
                cfg.timing = TimingModel::fixed_ms(a.ttft_ms, a.itl_ms).unwrap();
                Some(servebench_sim::start(cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap())
            }
        };
        let addr = a.addr.or(sim.as_ref().map(|s| s.local_addr())).unwrap();
        let events = Arc::new(AtomicU64::new(0));
        let t0 = Instant::now();
        let stop = t0 + Duration::from_secs(a.secs);
        let cpu0 = cpu_seconds();
        let tasks: Vec<_> =
            (0..a.streams).map(|i| tokio::spawn(client(addr, i, a.tokens, stop, events.clone()))).collect();
        for t in tasks {
            t.await.unwrap();
        }
        let wall = t0.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu0;
        let ev = events.load(Ordering::Relaxed);
        let truth = sim.as_ref().map(|s| s.take_ground_truth()).unwrap_or_default();
        let itl = Duration::from_secs_f64(a.itl_ms / 1000.0);
        let ttft = Duration::from_secs_f64(a.ttft_ms / 1000.0);
        let mut late_us: Vec<f64> = truth
            .iter()
            .flat_map(|t| {
                t.events.iter().enumerate().map(move |(i, e)| {
                    let deadline = t.received + ttft + itl * i as u32;
                    e.at.saturating_duration_since(deadline).as_secs_f64() * 1e6
                })
            })
            .collect();
        late_us.sort_by(|x, y| x.total_cmp(y));
        let q = |p: f64| late_us.get(((late_us.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(0.0);
        println!(
            "streams {} itl {} ms: {ev} events in {wall:.2} s = {:.0} events/s received; process CPU {:.2} s ({:.0}% of one core)",
            a.streams,
            a.itl_ms,
            ev as f64 / wall,
            cpu,
            100.0 * cpu / wall
        );
        println!(
            "server send lateness vs deadline over {} events: p50 {:.0} us, p90 {:.0} us, p99 {:.0} us, max {:.0} us",
            late_us.len(),
            q(0.5),
            q(0.9),
            q(0.99),
            q(1.0)
        );
        if let Some(sim) = sim {
            sim.shutdown().await;
        }
    });
}

/// User + system CPU time of this process (Linux), 0 elsewhere.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    let Some(rest) = stat.rsplit(')').next() else { return 0.0 };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}
