//! `--metrics-port`: a whole run against the in-process simulator (with 503s and malformed
//! JSON injected) is scraped over HTTP while it runs; every exposition must parse strictly and
//! its counters must only grow. After the run the exposition's counters equal the run's final
//! result computed from the records.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use servebench_client::backend::BackendKind;
use servebench_core::metrics::{compute, MetricsConfig};
use servebench_core::schedule::RateConfig;
use servebench_core::ErrorKind;
use servebench_data::random::RandomDatasetConfig;
use servebench_runner::CancellationToken;
use servebench_runner::{run_benchmark, DatasetSpec, LiveMetrics, RunConfig, RunObserver, RunResult};
use servebench_sim::{FaultConfig, FaultKind, SimConfig};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

const MODEL: &str = "live-model";
use crate::common::TOKENIZER;
const REQUESTS: usize = 150;

/// Captures the endpoint's address and the run's live metrics.
struct Capture {
    addr: watch::Sender<Option<SocketAddr>>,
    live: Mutex<Option<Arc<LiveMetrics>>>,
}

impl RunObserver for Capture {
    fn message(&self, _text: &str) {}
    fn metrics_listening(&self, addr: SocketAddr) {
        let _ = self.addr.send(Some(addr));
    }
    fn live_metrics(&self, live: Arc<LiveMetrics>) {
        *self.live.lock().unwrap() = Some(live);
    }
}

/// GET `path` with a fresh connection; returns (status line, content type, body), or `None`
/// when the connection is refused (the endpoint stops with the run).
async fn get(addr: SocketAddr, path: &str) -> Option<(String, String, String)> {
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_string();
    let ctype = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-type: ").map(str::to_string))
        .unwrap_or_default();
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((status, ctype, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").unwrap();
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
}

fn counter(exp: &servebench_testkit::prom_text::Exposition, name: &str) -> f64 {
    exp.get(name, &[]).unwrap_or_else(|| panic!("{name} missing"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint_is_live_and_ends_equal_to_the_result() {
    let tok = servebench_data::tokenizer::load_tokenizer(TOKENIZER).unwrap();
    let faults = FaultConfig::default()
        .with_seed(7)
        .with_rate(FaultKind::Http503, 0.1)
        .unwrap()
        .with_rate(FaultKind::MalformedJson, 0.05)
        .unwrap();
    let sim_cfg = SimConfig::new(MODEL, tok).with_fixed_timing_ms(20.0, 4.0).unwrap().with_faults(faults);
    let sim = servebench_sim::start(sim_cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let base = crate::common::config(sim.base_url(), MODEL, BackendKind::Completions, REQUESTS);
    let cfg = RunConfig {
        dataset: DatasetSpec::Random(RandomDatasetConfig {
            num_prompts: REQUESTS,
            input_len: 16,
            output_len: 12,
            ..RandomDatasetConfig::default()
        }),
        // Paced: the measured phase lasts about 3 s whatever the machine's speed.
        rate: RateConfig { request_rate: 50.0, ..RateConfig::default() },
        max_concurrency: Some(16),
        seed: 3,
        request_id_prefix: "live-".into(),
        metrics_listen: Some("127.0.0.1:0".parse().unwrap()),
        // A tiny cap (below the smallest spilled run: the records stay in memory); the spill
        // itself is pinned by `records::collector`'s tests and `spilled_records_give_the_result_of_held_ones`.
        max_records_in_memory: 10,
        ..base
    };
    let (addr_tx, mut addr_rx) = watch::channel(None);
    let observer = Arc::new(Capture { addr: addr_tx, live: Mutex::new(None) });
    let stop = CancellationToken::new();
    let _stop_handle = stop.clone();
    let run = tokio::spawn(run_benchmark(cfg, observer.clone(), stop));

    let addr = addr_rx.wait_for(Option::is_some).await.unwrap().unwrap();
    assert!(addr.ip().is_loopback() && addr.port() != 0);
    let (status, _, _) = get(addr, "/").await.unwrap();
    assert!(status.contains(" 404 "), "{status}");

    // Scrape every 100 ms until the run ends.
    let mut scrapes = Vec::new();
    while !run.is_finished() {
        // Refused: the measured phase ended and the endpoint stopped (the run is returning).
        let Some((status, ctype, body)) = get(addr, "/metrics").await else { break };
        assert!(status.contains(" 200 "), "{status}");
        assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
        scrapes.push(servebench_testkit::prom_text::parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}")));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let out = match run.await.unwrap().unwrap() {
        RunResult::Completed(out) => out,
        RunResult::DryRun { .. } => panic!("not a dry run"),
    };
    sim.abort();

    // Counters never go down between scrapes; some scrape saw the run in progress.
    let names = [
        "servebench_requests_sent_total",
        "servebench_requests_completed_total",
        "servebench_output_tokens_total",
        "servebench_ttft_seconds_count",
        "servebench_itl_seconds_count",
    ];
    for w in scrapes.windows(2) {
        for n in names {
            assert!(counter(&w[1], n) >= counter(&w[0], n), "{n} went down");
        }
    }
    let mid_run = scrapes.iter().any(|e| {
        let sent = counter(e, "servebench_requests_sent_total");
        sent > 0.0 && sent < REQUESTS as f64
    });
    assert!(mid_run, "no scrape during the measured phase ({} scrapes)", scrapes.len());

    // After the run: the exposition equals the result computed from the records.
    assert_eq!(out.records.len(), REQUESTS);
    let metrics = compute(&out.records, &MetricsConfig::default());
    let live = observer.live.lock().unwrap().clone().unwrap();
    let exp = servebench_testkit::prom_text::parse(&live.render_prometheus()).unwrap();
    assert!(metrics.failed > 0 && metrics.completed > 0, "faults were injected");
    assert_eq!(counter(&exp, "servebench_requests_completed_total"), metrics.completed as f64);
    assert_eq!(exp.sum("servebench_requests_failed_total"), metrics.failed as f64);
    for (kind, n) in &metrics.failures_by_kind {
        let got = exp.get("servebench_requests_failed_total", &[("kind", kind.as_str())]);
        assert_eq!(got, Some(*n as f64), "{kind:?}");
    }
    assert!(metrics.failures_by_kind.iter().any(|(k, n)| *k == ErrorKind::HttpStatus && *n > 0));
    assert_eq!(counter(&exp, "servebench_requests_cancelled_total"), metrics.cancelled as f64);
    assert_eq!(counter(&exp, "servebench_requests_sent_total"), metrics.sent as f64);
    assert_eq!(counter(&exp, "servebench_requests_in_flight"), 0.0);
    assert_eq!(counter(&exp, "servebench_output_tokens_total"), metrics.total_output_tokens as f64);
    assert_eq!(counter(&exp, "servebench_ttft_seconds_count"), metrics.completed as f64);
    assert_eq!(counter(&exp, "servebench_e2el_seconds_count"), metrics.completed as f64);
    assert_eq!(counter(&exp, "servebench_dispatch_lateness_seconds_count"), REQUESTS as f64);
    let itl_values: usize = out
        .records
        .iter()
        .filter(|r| r.outcome == servebench_core::Outcome::Completed)
        .map(|r| r.token_events.gaps_us.len())
        .sum();
    assert_eq!(counter(&exp, "servebench_itl_seconds_count"), itl_values as f64);
    // Mean TTFT from the histogram's sum equals the result's mean TTFT (ms).
    let mean_ttft_ms = counter(&exp, "servebench_ttft_seconds_sum") * 1000.0 / metrics.completed as f64;
    assert!((mean_ttft_ms - metrics.ttft.mean).abs() < 1e-6, "{mean_ttft_ms} vs {}", metrics.ttft.mean);
}
