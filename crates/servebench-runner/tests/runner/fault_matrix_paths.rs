//! Fault matrix beyond completions and chat streams: whole runs (`run_benchmark`) with the
//! Responses backend (streamed, and `stream: false`), non-streamed chat, and every pooling
//! backend and route, against the in-process simulator with every fault kind mixed in.
//!
//! As in `fault_matrix.rs`, the simulator decides faults from its seed, the shape of the answer
//! and the request id alone (`FaultConfig::plan_on`), so each record is checked against the
//! plan of its id; then the failed records per error kind must equal the simulator's counters
//! of the kinds that map to it, and completed + failed + cancelled = sent.
//!
//! Expected mapping, streamed Responses (typed events): statuses → `HttpStatus`; `close`,
//! `reset` → `Transport`; `stall` beyond the stall timeout → `Timeout`; `malformed_json` →
//! `Protocol`; `oversized_event` → `EventTooLarge`; `truncate` (no terminal event) →
//! `Incomplete`; the quirks → completed. `no_done` does not apply (no `[DONE]` in the API).
//! JSON answers (pooling, `stream: false`): statuses → `HttpStatus`; `close` and `reset` (the
//! body cut in the middle) → `Transport`; `stall` (body held back after the headers) →
//! `Timeout`; `malformed_json` (half the JSON) → `Protocol`; `oversized_event` (padded JSON) →
//! `EventTooLarge`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use servebench_runner::CancellationToken;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use servebench_client::backend::BackendKind;
use servebench_core::metrics::{compute, MetricsConfig};
use servebench_core::{ErrorKind, Outcome, RequestRecord};
use servebench_data::random::RandomDatasetConfig;
use servebench_runner::{run_benchmark, DatasetSpec, RunConfig, RunResult};
use servebench_sim::{FaultConfig, FaultCounts, FaultKind, FaultPlan, ResponseShape, SimConfig};

use crate::common::{Quiet, TOKENIZER};

const MODEL: &str = "fault-paths-model";
const OUT: u32 = 8;
/// Reasoning tokens of every chat and Responses output: the first token events are reasoning.
const REASONING: u32 = 2;
const PREFIX: &str = "fp-";
/// Longer than `STALL_TIMEOUT`, so every stall ends the request as a timeout.
const STALL: Duration = Duration::from_secs(3);
const STALL_TIMEOUT: Duration = Duration::from_millis(1500);

/// One run: a backend on a route, with the answers' shape.
struct PathRun {
    backend: BackendKind,
    /// Another route than the backend's default.
    endpoint: Option<&'static str>,
    /// Non-streamed answers (`--extra-body '{"stream": false}'`).
    no_stream: bool,
    shape: ResponseShape,
    faults: FaultConfig,
    requests: usize,
}

impl PathRun {
    fn new(backend: BackendKind, shape: ResponseShape, seed: u64, rate: f64, requests: usize) -> PathRun {
        let mut faults = FaultConfig::default().with_seed(seed).with_stall(STALL);
        faults.apply_spec(&format!("all={rate}")).unwrap();
        PathRun { backend, endpoint: None, no_stream: false, shape, faults, requests }
    }

    fn at(mut self, endpoint: &'static str) -> PathRun {
        self.endpoint = Some(endpoint);
        self
    }

    fn not_streamed(mut self) -> PathRun {
        self.no_stream = true;
        self
    }

    fn name(&self) -> String {
        let stream = if self.no_stream { " stream:false" } else { "" };
        format!("{} {}{stream}", self.backend, self.endpoint.unwrap_or(self.backend.default_endpoint()))
    }

    fn plan(&self, record: &RequestRecord) -> FaultPlan {
        self.faults.plan_on(self.shape, &record.request_id)
    }
}

/// Runs the benchmark against a fresh simulator; returns the records and the sim's counters.
async fn run(p: &PathRun) -> (Vec<RequestRecord>, FaultCounts) {
    let tok = servebench_data::tokenizer::load_tokenizer(TOKENIZER).unwrap();
    let sim_cfg = SimConfig::new(MODEL, tok)
        .with_fixed_timing_ms(5.0, 2.0)
        .unwrap()
        .with_reasoning_tokens(REASONING)
        .with_faults(p.faults.clone());
    let sim = servebench_sim::start(sim_cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let mut base = crate::common::config(sim.base_url(), MODEL, p.backend, p.requests);
    base.target.endpoint = p.endpoint.map(str::to_owned);
    if p.no_stream {
        base.target.extra_body.insert("stream".into(), false.into());
    }
    if p.backend.is_pooling() {
        base.target.ignore_eos = false;
    }
    let cfg = RunConfig {
        dataset: DatasetSpec::Random(RandomDatasetConfig {
            num_prompts: p.requests,
            input_len: 16,
            output_len: OUT as usize,
            ..RandomDatasetConfig::default()
        }),
        // Every request released at once: the stalled ones overlap instead of queueing.
        max_concurrency: None,
        seed: 0,
        request_id_prefix: PREFIX.into(),
        request_timeout: Some(Duration::from_secs(120)),
        stall_timeout: Some(STALL_TIMEOUT),
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
    // Stalled answers may still be sleeping in the simulator: cut them.
    sim.abort();
    (out.records.to_vec(), counts)
}

/// The error a client must report for an applied failure `kind` (every stall times out here).
fn error_of(kind: FaultKind) -> Option<ErrorKind> {
    match kind {
        k if k.http_status().is_some() => Some(ErrorKind::HttpStatus),
        FaultKind::Close | FaultKind::Reset => Some(ErrorKind::Transport),
        FaultKind::Stall => Some(ErrorKind::Stall),
        FaultKind::MalformedJson => Some(ErrorKind::Protocol),
        FaultKind::OversizedEvent => Some(ErrorKind::EventTooLarge),
        FaultKind::Truncate => Some(ErrorKind::Incomplete),
        _ => None,
    }
}

/// Checks every record against its plan, and the failed records per error kind against the
/// counters; returns the failure kinds that occurred.
fn check(p: &PathRun, records: &[RequestRecord], counts: &FaultCounts) -> BTreeSet<FaultKind> {
    let name = p.name();
    assert_eq!(records.len(), p.requests, "{name}: one record per request");
    let mut predicted: BTreeMap<FaultKind, u64> = BTreeMap::new();
    let mut failures = BTreeSet::new();
    let streamed = p.shape != ResponseShape::JsonBody;
    for r in records {
        assert_eq!(r.request_id, format!("{PREFIX}{}", r.index));
        let plan = p.plan(r);
        // A request the simulator closed without answering on a reused connection (fault
        // `close`) was resent once on a fresh connection: the simulator saw its plan twice.
        assert!(!r.resent || plan.failure == Some(FaultKind::Close), "{r:?}");
        for k in plan.kinds() {
            assert!(k.applies_to(p.shape), "{name}: {k}");
            *predicted.entry(k).or_default() += 1 + u64::from(r.resent);
        }
        let ctx = format!("{name}: {} plan {plan:?} record {r:?}", r.request_id);
        match plan.failure.and_then(error_of) {
            None => {
                assert_eq!(r.outcome, Outcome::Completed, "{ctx}");
                assert!(r.error.is_none(), "{ctx}");
                if p.backend.is_pooling() {
                    assert_eq!(r.completion_tokens, Some(0), "{ctx}");
                    assert!(r.server_prompt_tokens.is_some_and(|n| n > 0), "{ctx}");
                } else {
                    assert_eq!(r.completion_tokens, Some(OUT), "{ctx}");
                    let events = if streamed { OUT } else { 1 };
                    assert_eq!(r.token_event_count, events, "{ctx}");
                    assert_eq!(r.reasoning_events, if streamed { REASONING } else { 1 }, "{ctx}");
                }
            }
            Some(kind) => {
                let failure = plan.failure.unwrap();
                failures.insert(failure);
                assert_eq!(r.outcome, Outcome::Failed, "{ctx}");
                assert_eq!(r.error.as_ref().map(|e| e.kind), Some(kind), "{ctx}");
                assert!(r.done_us.is_some(), "{ctx}");
                if let Some(status) = failure.http_status() {
                    assert_eq!(r.http_status, Some(status), "{ctx}");
                } else if failure == FaultKind::Close {
                    assert!(r.http_status.is_none() && r.headers_us.is_none(), "{ctx}");
                } else {
                    assert_eq!(r.http_status, Some(200), "{ctx}");
                    assert!(r.headers_us.is_some(), "{ctx}");
                    if streamed {
                        // A stream failure after N token events keeps those N events.
                        assert_eq!(r.token_event_count, plan.after_events(OUT), "{ctx}");
                        assert!(r.first_token_us.is_some(), "{ctx}");
                    } else {
                        assert_eq!(r.token_event_count, 0, "a broken body has no token: {ctx}");
                    }
                }
            }
        }
    }
    for k in FaultKind::ALL {
        assert_eq!(counts.get(k), predicted.get(&k).copied().unwrap_or(0), "{name}: sim counter of {k}");
    }
    // What the client saw, per error kind, is exactly what the simulator injected.
    let mut injected: BTreeMap<ErrorKind, u64> = BTreeMap::new();
    for (k, n) in counts.iter().filter(|(_, n)| *n > 0) {
        if let Some(e) = error_of(k) {
            *injected.entry(e).or_default() += n;
        }
    }
    // A resent request (fault `close` on a reused connection) met its fault twice.
    let mut failed: BTreeMap<ErrorKind, u64> = BTreeMap::new();
    for r in records.iter().filter(|r| r.outcome == Outcome::Failed) {
        *failed.entry(r.error.as_ref().unwrap().kind).or_default() += 1 + u64::from(r.resent);
    }
    assert_eq!(failed, injected, "{name}: failed records per kind vs the sim's counters");
    let resent = records.iter().filter(|r| r.resent).count() as u64;
    if let Some(n) = injected.get_mut(&ErrorKind::Transport) {
        *n -= resent;
    }
    let m = compute(records, &MetricsConfig::default());
    assert_eq!(m.sent, p.requests as u64, "{name}");
    assert_eq!(m.completed + m.failed + m.cancelled, m.sent, "{name}");
    assert_eq!(m.cancelled, 0, "{name}");
    assert_eq!(m.failures_unclassified, 0, "{name}");
    assert_eq!(m.failed, injected.values().sum::<u64>(), "{name}");
    for (kind, count) in &m.failures_by_kind {
        assert_eq!(*count, injected.get(kind).copied().unwrap_or(0), "{name}: failures of {kind:?}");
    }
    failures
}

/// The failure kinds that apply to `shape`.
fn failure_kinds(shape: ResponseShape) -> BTreeSet<FaultKind> {
    FaultKind::ALL.into_iter().filter(|k| !k.is_quirk() && k.applies_to(shape)).collect()
}

/// Streamed Responses with every kind at 10 %: each failure kind that applies occurs (the seed
/// is fixed, so this is deterministic), and the quirks complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_stream_every_kind_mixed() {
    let p = PathRun::new(BackendKind::Responses, ResponseShape::TypedEventStream, 2026, 0.1, 240);
    let (records, counts) = run(&p).await;
    let failures = check(&p, &records, &counts);
    assert_eq!(failures, failure_kinds(ResponseShape::TypedEventStream), "every failure kind exercised");
    for q in [FaultKind::Crlf, FaultKind::DataNoSpace, FaultKind::KeepAlive, FaultKind::Trickle] {
        assert!(counts.get(q) > 0, "{q} never injected");
    }
    assert_eq!(counts.get(FaultKind::NoDone), 0, "no [DONE] to leave out");
}

/// Every pooling backend on every route the simulator serves, then non-streamed Responses and
/// chat: the JSON-body faults, each kind at 15 %.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_answers_every_route_mixed() {
    let json = ResponseShape::JsonBody;
    let runs = [
        PathRun::new(BackendKind::Embeddings, json, 1, 0.15, 60),
        PathRun::new(BackendKind::Pooling, json, 2, 0.15, 60),
        PathRun::new(BackendKind::Pooling, json, 3, 0.15, 60).at("/v1/pooling"),
        PathRun::new(BackendKind::Rerank, json, 4, 0.15, 60),
        PathRun::new(BackendKind::Rerank, json, 5, 0.15, 60).at("/rerank"),
        PathRun::new(BackendKind::Responses, json, 6, 0.15, 60).not_streamed(),
        PathRun::new(BackendKind::Chat, json, 7, 0.15, 60).not_streamed(),
    ];
    let mut seen = BTreeSet::new();
    for p in &runs {
        let (records, counts) = run(p).await;
        seen.extend(check(p, &records, &counts));
        assert_eq!(counts.iter().filter(|(k, n)| *n > 0 && !k.applies_to(json)).count(), 0, "{}", p.name());
    }
    assert_eq!(seen, failure_kinds(json), "every JSON-body failure kind exercised");
}
