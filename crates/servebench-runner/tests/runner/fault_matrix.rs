//! Fault matrix: whole runs (`run_benchmark`) against the in-process simulator with injected
//! faults. Each fault kind alone, then every kind mixed at 10 % over 400 concurrent streams.
//!
//! The simulator decides faults from its seed and the request id alone
//! (`FaultConfig::plan`), so the test predicts per request what was injected and checks the
//! client's record against it: outcome, error kind, HTTP status, the partial timings a failed
//! stream keeps, and token counts of the quirks (which must complete). The sim's fault
//! counters must equal the predictions exactly, and `metrics::compute` must account for every
//! request.
//!
//! Expected mapping (what the client does, and why):
//! - `http_429`/`http_500`/`http_503` → `HttpStatus` with that `http_status`;
//! - `close` (connection closed after the request was read, before any response byte) →
//!   `Transport`: the request was written in full, so the client cannot know whether the server
//!   acted on it; `Connect` is kept for "nothing was sent" (no connection, or one closed
//!   before the request was written);
//! - `reset` after N token events → `Transport` (the chunked body ends without its last chunk),
//!   with `first_token_us` and N token events kept;
//! - `stall` longer than `stall_timeout` → `Timeout` (shorter → completed);
//! - `malformed_json` → `Protocol`; `oversized_event` → `EventTooLarge`;
//! - `truncate` (clean end after N events, no finish reason) → `Incomplete`;
//! - `no_done` → completed: the finish reason and usage arrived, then a clean end of body;
//! - `crlf`, `data_no_space`, `keep_alive`, `trickle` → completed with exact token counts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use servebench_runner::CancellationToken;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use servebench_client::backend::BackendKind;
use servebench_core::metrics::{compute, MetricsConfig};
use servebench_core::{ErrorKind, Outcome, RequestRecord};
use servebench_data::random::RandomDatasetConfig;
use servebench_runner::{run_benchmark, DatasetSpec, RunConfig, RunResult};
use servebench_sim::{FaultConfig, FaultCounts, FaultKind, FaultPlan, SimConfig};

use crate::common::{Quiet, TOKENIZER};

const MODEL: &str = "fault-model";
const OUT: u32 = 8;
const PREFIX: &str = "fm-";

/// One run's knobs.
struct Setup {
    faults: FaultConfig,
    requests: usize,
    concurrency: Option<usize>,
    stall_timeout: Duration,
    backend: BackendKind,
    /// The simulator's fixed TTFT and ITL, ms.
    timing_ms: (f64, f64),
}

impl Setup {
    fn alone(kind: FaultKind) -> Setup {
        Setup {
            faults: FaultConfig::default().with_seed(11).with_rate(kind, 1.0).unwrap(),
            requests: 24,
            concurrency: Some(8),
            stall_timeout: Duration::from_millis(1500),
            backend: BackendKind::Completions,
            timing_ms: (5.0, 2.0),
        }
    }

    /// Whether a stall of this setup outlasts the client's stall timeout.
    fn stall_times_out(&self) -> bool {
        self.faults.stall > self.stall_timeout
    }
}

/// Runs the benchmark against a fresh simulator; returns the records and the sim's counters.
async fn run(setup: &Setup) -> (Vec<RequestRecord>, FaultCounts) {
    let tok = servebench_data::tokenizer::load_tokenizer(TOKENIZER).unwrap();
    let sim_cfg = SimConfig::new(MODEL, tok)
        .with_fixed_timing_ms(setup.timing_ms.0, setup.timing_ms.1)
        .unwrap()
        .with_faults(setup.faults.clone());
    let sim = servebench_sim::start(sim_cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let base = crate::common::config(sim.base_url(), MODEL, setup.backend, setup.requests);
    let cfg = RunConfig {
        dataset: DatasetSpec::Random(RandomDatasetConfig {
            num_prompts: setup.requests,
            input_len: 16,
            output_len: OUT as usize,
            ..RandomDatasetConfig::default()
        }),
        max_concurrency: setup.concurrency,
        seed: 0,
        request_id_prefix: PREFIX.into(),
        request_timeout: Some(Duration::from_secs(120)),
        stall_timeout: Some(setup.stall_timeout),
        // The simulator pads an oversized answer to 1 MiB + 64 KiB: above this bound.
        max_response_bytes: 1 << 20,
        ..base
    };
    let stop = CancellationToken::new();
    let _stop_handle = stop.clone();
    let out = match run_benchmark(cfg, Arc::new(Quiet), stop).await.unwrap() {
        RunResult::Completed(out) => out,
        RunResult::DryRun { .. } => panic!("not a dry run"),
    };
    // Every count is taken before the client can observe the fault, so it is final here.
    let counts = sim.fault_counts();
    // Stalled streams may still be sleeping in the simulator: cut them.
    sim.abort();
    (out.records.to_vec(), counts)
}

/// What the client must report for a request with `plan`.
fn expected(plan: &FaultPlan, setup: &Setup) -> Option<ErrorKind> {
    match plan.failure {
        None | Some(FaultKind::NoDone) => None,
        Some(k) if k.http_status().is_some() => Some(ErrorKind::HttpStatus),
        Some(FaultKind::Close) | Some(FaultKind::Reset) => Some(ErrorKind::Transport),
        Some(FaultKind::Stall) if setup.stall_times_out() => Some(ErrorKind::Stall),
        Some(FaultKind::Stall) => None,
        Some(FaultKind::MalformedJson) => Some(ErrorKind::Protocol),
        Some(FaultKind::OversizedEvent) => Some(ErrorKind::EventTooLarge),
        Some(FaultKind::Truncate) => Some(ErrorKind::Incomplete),
        Some(other) => panic!("{other} is not a failure kind"),
    }
}

/// Checks every record against its plan and the counters against the plans; returns the
/// number of records per (failure kind or "clean") for the report.
fn check(setup: &Setup, records: &[RequestRecord], counts: &FaultCounts) -> BTreeMap<String, usize> {
    let n = setup.requests;
    assert_eq!(records.len(), n, "one record per request");
    let mut predicted: BTreeMap<FaultKind, u64> = BTreeMap::new();
    let mut expected_by_kind: BTreeMap<ErrorKind, u64> = BTreeMap::new();
    let mut seen = BTreeMap::new();
    for r in records {
        assert_eq!(r.request_id, format!("{PREFIX}{}", r.index));
        let plan = setup.faults.plan(&r.request_id);
        // A request the simulator closed without answering on a reused connection (fault
        // `close`) was resent once on a fresh connection: the simulator saw its plan twice.
        assert!(!r.resent || plan.failure == Some(FaultKind::Close), "{r:?}");
        for k in plan.kinds() {
            *predicted.entry(k).or_default() += 1 + u64::from(r.resent);
        }
        *seen.entry(plan.failure.map_or("clean".to_owned(), |k| k.to_string())).or_insert(0) += 1;
        let ctx = format!("{} plan {plan:?} record {r:?}", r.request_id);
        let want = expected(&plan, setup);
        assert_ne!(r.outcome, Outcome::Cancelled, "{ctx}");
        match want {
            None => {
                assert_eq!(r.outcome, Outcome::Completed, "{ctx}");
                assert!(r.error.is_none(), "{ctx}");
                assert_eq!(r.completion_tokens, Some(OUT), "{ctx}");
                assert_eq!(r.token_event_count, OUT, "{ctx}");
                assert_eq!(r.token_events.gaps_us.len(), OUT as usize - 1, "{ctx}");
                assert_eq!(r.finish_reason.as_deref(), Some("length"), "{ctx}");
                assert!(r.output_chars > 0, "{ctx}");
                assert!(r.first_token_us.is_some() && r.done_us >= r.last_token_us, "{ctx}");
            }
            Some(kind) => {
                *expected_by_kind.entry(kind).or_default() += 1;
                assert_eq!(r.outcome, Outcome::Failed, "{ctx}");
                assert_eq!(r.error.as_ref().map(|e| e.kind), Some(kind), "{ctx}");
                assert!(r.done_us.is_some(), "{ctx}");
                let failure = plan.failure.unwrap();
                if let Some(status) = failure.http_status() {
                    assert_eq!(r.http_status, Some(status), "{ctx}");
                    assert!(r.first_event_us.is_none(), "{ctx}");
                } else if failure == FaultKind::Close {
                    assert!(r.http_status.is_none() && r.headers_us.is_none(), "{ctx}");
                    assert!(r.dispatched_us.is_some(), "{ctx}");
                } else {
                    // A stream failure after N token events keeps the partial timings.
                    let n_events = plan.after_events(OUT);
                    assert_eq!(r.http_status, Some(200), "{ctx}");
                    assert!(r.dispatched_us.is_some() && r.headers_us.is_some(), "{ctx}");
                    assert!(r.first_event_us.is_some() && r.first_token_us.is_some(), "{ctx}");
                    assert_eq!(r.token_event_count, n_events, "{ctx}");
                    assert_eq!(r.token_events.gaps_us.len(), n_events as usize - 1, "{ctx}");
                    assert!(r.finish_reason.is_none(), "{ctx}");
                    assert!(r.done_us >= r.last_token_us, "{ctx}");
                }
            }
        }
    }
    for k in FaultKind::ALL {
        assert_eq!(counts.get(k), predicted.get(&k).copied().unwrap_or(0), "sim counter of {k}");
    }
    let m = compute(records, &MetricsConfig::default());
    assert_eq!(m.sent, n as u64);
    assert_eq!(m.completed + m.failed + m.cancelled, n as u64);
    assert_eq!(m.cancelled, 0);
    assert_eq!(m.failures_unclassified, 0);
    for (kind, count) in &m.failures_by_kind {
        assert_eq!(*count, expected_by_kind.get(kind).copied().unwrap_or(0), "failures of {kind:?}");
    }
    assert_eq!(m.failed, expected_by_kind.values().sum::<u64>());
    assert_eq!(m.total_output_tokens, m.completed * u64::from(OUT));
    seen
}

async fn alone(kind: FaultKind) {
    let setup = Setup::alone(kind);
    let (records, counts) = run(&setup).await;
    check(&setup, &records, &counts);
    // A request the simulator closed unanswered on a reused connection is resent once on a
    // fresh one, where the fault applies again (how often depends on connection reuse timing).
    let resent = records.iter().filter(|r| r.resent).count() as u64;
    let applied = setup.requests as u64 + resent;
    assert_eq!(counts.get(kind), applied, "{kind}: rate 1 applies to every request and resend");
    assert_eq!(counts.total(), applied, "{kind}: nothing else injected");
}

macro_rules! alone_tests {
    ($($name:ident => $kind:expr),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            alone($kind).await;
        }
    )*};
}

alone_tests! {
    alone_http_429 => FaultKind::Http429,
    alone_http_500 => FaultKind::Http500,
    alone_http_503 => FaultKind::Http503,
    alone_close => FaultKind::Close,
    alone_reset => FaultKind::Reset,
    alone_stall_beyond_timeout => FaultKind::Stall,
    alone_malformed_json => FaultKind::MalformedJson,
    alone_oversized_event => FaultKind::OversizedEvent,
    alone_truncate => FaultKind::Truncate,
    alone_no_done => FaultKind::NoDone,
    alone_crlf => FaultKind::Crlf,
    alone_data_no_space => FaultKind::DataNoSpace,
    alone_keep_alive => FaultKind::KeepAlive,
    alone_trickle => FaultKind::Trickle,
}

/// A stall shorter than the stall timeout is only a slow request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_within_timeout_completes() {
    let mut setup = Setup::alone(FaultKind::Stall);
    setup.faults = setup.faults.with_stall(Duration::from_millis(100));
    setup.stall_timeout = Duration::from_secs(10);
    let (records, counts) = run(&setup).await;
    check(&setup, &records, &counts);
    assert!(records.iter().all(|r| r.outcome == Outcome::Completed));
    // The stall is one long gap between two token events. The sim holds the event back 100 ms,
    // but the client sees the gap between two *receive* times: if the event before the stall is
    // read a little late, the gap is a little shorter (99.7 ms seen under CI load). Other gaps
    // are 1–5 ms, so 90 ms still singles out the stall.
    for r in &records {
        assert!(r.token_events.gaps_us.iter().any(|g| *g >= 90_000), "{r:?}");
    }
}

/// Every quirk at once on the chat dialect (role chunk first, `delta.content`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_quirks_together_on_chat_complete() {
    let mut faults = FaultConfig::default().with_seed(5);
    for k in [FaultKind::Crlf, FaultKind::DataNoSpace, FaultKind::KeepAlive, FaultKind::Trickle] {
        faults.set_rate(k, 1.0).unwrap();
    }
    let setup = Setup {
        faults,
        requests: 16,
        concurrency: Some(16),
        stall_timeout: Duration::from_secs(10),
        backend: BackendKind::Chat,
        timing_ms: (5.0, 2.0),
    };
    let (records, counts) = run(&setup).await;
    check(&setup, &records, &counts);
    assert_eq!(counts.total(), 4 * 16);
}

/// Every kind at 10 %, 400 requests released at once (400 concurrent streams).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_faults_mixed_at_ten_percent_over_400_concurrent_streams() {
    let mut faults = FaultConfig::default().with_seed(2026).with_stall(Duration::from_secs(3));
    faults.apply_spec("all=0.1").unwrap();
    let setup = Setup {
        faults,
        requests: 400,
        concurrency: None,
        stall_timeout: Duration::from_millis(1500),
        backend: BackendKind::Completions,
        // Streams long enough (~120 ms) that most of the 400 overlap.
        timing_ms: (50.0, 10.0),
    };
    let (records, counts) = run(&setup).await;
    let seen = check(&setup, &records, &counts);
    let m = compute(&records, &MetricsConfig::default());
    assert!(m.max_concurrent_requests >= 200, "{}", m.max_concurrent_requests);
    // Every kind was exercised at least once.
    for k in FaultKind::ALL {
        assert!(counts.get(k) > 0, "{k} never injected: {seen:?}");
    }
    println!(
        "mixed: sent {} completed {} failed {} cancelled {}; max concurrency {}; failures {:?}; \
         injected {:?}",
        m.sent,
        m.completed,
        m.failed,
        m.cancelled,
        m.max_concurrent_requests,
        m.failures_by_kind.iter().filter(|(_, n)| *n > 0).collect::<Vec<_>>(),
        counts.iter().collect::<Vec<_>>()
    );
}
