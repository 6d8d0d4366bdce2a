//! Fault injection at the byte level: each kind alone, what goes on the wire, determinism and
//! the counters (`SimHandle::fault_counts`, `/metrics`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common::*;
use serde_json::json;
use servebench_sim::{FaultConfig, FaultKind, SimHandle};

const TOKENS: u32 = 6;

/// Data payloads that carry generated text.
fn token_events(r: &Raw) -> usize {
    r.data()
        .iter()
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter(|v| v["choices"][0]["text"].as_str().is_some_and(|t| !t.is_empty()))
        .count()
}

/// Sends one completion (streamed or not) with `x-request-id: id` and reads everything until
/// EOF.
async fn fetch(sim: &SimHandle, id: &str, stream: bool) -> Raw {
    let body = json!({"model": MODEL, "prompt": "hello there", "max_tokens": TOKENS, "ignore_eos": true,
                      "stream": stream, "stream_options": {"include_usage": true}});
    fetch_raw(sim.local_addr(), "/v1/completions", id, &body).await
}

async fn sim_with(kind: FaultKind) -> SimHandle {
    let faults = FaultConfig::default().with_rate(kind, 1.0).unwrap().with_stall(Duration::from_millis(150));
    start(config().with_faults(faults)).await
}

#[tokio::test]
async fn error_statuses_have_vllm_bodies_and_retry_after() {
    for (kind, status) in [(FaultKind::Http429, 429), (FaultKind::Http500, 500), (FaultKind::Http503, 503)] {
        let sim = sim_with(kind).await;
        let r = fetch(&sim, "r-1", true).await;
        assert_eq!(r.status, status);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["error"]["code"], status);
        assert!(v["error"]["message"].as_str().unwrap().contains("injected"));
        assert_eq!(r.header("retry-after").is_some(), status != 500, "{status}");
        assert_eq!(r.header("x-request-id").as_deref(), Some("r-1"));
        // Non-streamed requests get the same answer.
        assert_eq!(fetch(&sim, "r-2", false).await.status, status);
        assert_eq!(sim.fault_counts().get(kind), 2);
        assert_eq!(sim.fault_counts().total(), 2);
        sim.shutdown().await;
    }
}

#[tokio::test]
async fn close_sends_nothing() {
    let sim = sim_with(FaultKind::Close).await;
    let r = fetch(&sim, "c", true).await;
    assert!(r.empty, "{r:?}");
    assert_eq!(sim.fault_counts().get(FaultKind::Close), 1);
    // Other endpoints are untouched.
    let mut c = Conn::connect(sim.local_addr()).await;
    assert_eq!(c.get("/health").await.status, 200);
    sim.shutdown().await;
}

#[tokio::test]
async fn stream_failures_happen_after_the_planned_event() {
    for kind in [FaultKind::Reset, FaultKind::MalformedJson, FaultKind::Truncate, FaultKind::OversizedEvent] {
        let sim = sim_with(kind).await;
        let faults = FaultConfig::default().with_rate(kind, 1.0).unwrap();
        for id in ["a", "b", "c"] {
            let n = faults.plan(id).after_events(TOKENS) as usize;
            assert!((1..TOKENS as usize).contains(&n));
            let r = fetch(&sim, id, true).await;
            assert_eq!(r.status, 200);
            let text = r.text();
            let ends = matches!(kind, FaultKind::Reset | FaultKind::Truncate);
            assert_eq!(!text.contains("[DONE]"), ends, "{kind}: {text}");
            match kind {
                FaultKind::Reset => {
                    assert!(!r.clean_end, "a reset never ends the chunked body cleanly");
                    assert_eq!(token_events(&r), n, "{kind} {id}");
                }
                FaultKind::Truncate => {
                    assert!(r.clean_end);
                    assert_eq!(token_events(&r), n);
                    assert!(!text.contains("finish_reason\":\"length"), "{text}");
                    assert!(!text.contains("usage"));
                }
                FaultKind::MalformedJson => {
                    let data = r.data();
                    let bad: Vec<usize> = (0..data.len())
                        .filter(|i| {
                            data[*i] != "[DONE]"
                                && serde_json::from_str::<serde_json::Value>(&data[*i]).is_err()
                        })
                        .collect();
                    assert_eq!(bad, vec![n], "exactly event {n} is malformed: {data:?}");
                    // The stream goes on after it (the client is expected to give up).
                    assert_eq!(token_events(&r), TOKENS as usize);
                    assert!(r.clean_end);
                }
                FaultKind::OversizedEvent => {
                    let data = r.data();
                    let big = data.iter().position(|d| d.len() > 1 << 20).unwrap();
                    assert_eq!(big, n, "the oversized event comes after {n} token events");
                    assert!(serde_json::from_str::<serde_json::Value>(&data[big]).is_ok(), "valid JSON");
                }
                _ => unreachable!(),
            }
        }
        assert_eq!(sim.fault_counts().get(kind), 3, "{kind}");
        assert_eq!(sim.fault_counts().total(), 3, "{kind}");
        sim.shutdown().await;
    }
}

#[tokio::test]
async fn no_done_keeps_finish_reason_and_usage() {
    let sim = sim_with(FaultKind::NoDone).await;
    let r = fetch(&sim, "n", true).await;
    assert!(r.clean_end);
    let text = r.text();
    assert!(!text.contains("[DONE]"));
    assert!(text.contains("\"finish_reason\":\"length\""));
    assert!(text.contains("\"completion_tokens\":6"));
    assert_eq!(token_events(&r), TOKENS as usize);
    assert_eq!(sim.fault_counts().get(FaultKind::NoDone), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn stall_holds_the_stream_then_continues() {
    let sim = sim_with(FaultKind::Stall).await;
    let r = fetch(&sim, "s", true).await;
    assert!(r.clean_end && r.text().ends_with("data: [DONE]\n\n"));
    assert_eq!(token_events(&r), TOKENS as usize);
    assert!(r.max_gap >= Duration::from_millis(150), "{:?}", r.max_gap);
    assert_eq!(sim.fault_counts().get(FaultKind::Stall), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn quirks_rewrite_the_framing_only() {
    let sim = sim_with(FaultKind::Crlf).await;
    let t = fetch(&sim, "q", true).await.text();
    assert!(t.ends_with("data: [DONE]\r\n\r\n") && !t.replace("\r\n", "").contains('\n'), "{t}");
    sim.shutdown().await;

    let sim = sim_with(FaultKind::DataNoSpace).await;
    let t = fetch(&sim, "q", true).await.text();
    assert!(t.starts_with("data:{") && !t.contains("data: ") && t.ends_with("data:[DONE]\n\n"), "{t}");
    sim.shutdown().await;

    let sim = sim_with(FaultKind::KeepAlive).await;
    let r = fetch(&sim, "q", true).await;
    let t = r.text();
    assert_eq!(t.matches(": keep-alive\n\n").count(), TOKENS as usize + 2, "before every event: {t}");
    assert_eq!(r.data().iter().filter(|d| d.starts_with('{')).count(), TOKENS as usize + 1);
    sim.shutdown().await;

    let sim = sim_with(FaultKind::Trickle).await;
    let r = fetch(&sim, "q", true).await;
    assert!(r.clean_end && r.text().ends_with("data: [DONE]\n\n"));
    assert!(r.chunks.iter().all(|c| *c == 1), "one byte per chunk");
    assert_eq!(r.chunks.len(), r.body.len());
    assert_eq!(token_events(&r), TOKENS as usize);
    assert_eq!(sim.fault_counts().get(FaultKind::Trickle), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn faults_are_seeded_per_request_and_exported_on_metrics() {
    let mut faults = FaultConfig::default().with_seed(42);
    faults.apply_spec("all=0.1").unwrap();
    let sim = start(config().with_faults(faults.clone())).await;
    let ids: Vec<String> = (0..40).map(|i| format!("req-{i}")).collect();
    let mut expected = std::collections::BTreeMap::<FaultKind, u64>::new();
    for id in &ids {
        let plan = faults.plan(id);
        for k in plan.kinds() {
            *expected.entry(k).or_default() += 1;
        }
        // Stalls and oversized events are not needed here: skip requests with slow faults.
        if plan.failure == Some(FaultKind::Stall) {
            *expected.entry(FaultKind::Stall).or_default() -= 1;
            for q in plan.quirks() {
                *expected.entry(q).or_default() -= 1;
            }
            continue;
        }
        let r = fetch(&sim, id, true).await;
        match plan.failure {
            Some(FaultKind::Close) => assert!(r.empty),
            Some(k) if k.http_status().is_some() => assert_eq!(Some(r.status), k.http_status()),
            _ => assert_eq!(r.status, 200),
        }
    }
    let counts = sim.fault_counts();
    for k in FaultKind::ALL {
        assert_eq!(counts.get(k), expected.get(&k).copied().unwrap_or(0), "{k}");
    }
    assert!(counts.total() > 0);
    let mut c = Conn::connect(sim.local_addr()).await;
    let metrics = c.get("/metrics").await.text();
    for k in FaultKind::ALL {
        let line = metrics
            .lines()
            .find(|l| l.starts_with("servebench_sim_faults_total{") && l.contains(&format!("kind=\"{k}\"")))
            .unwrap_or_else(|| panic!("no series for {k}"));
        assert!(line.ends_with(&format!(" {}", counts.get(k))), "{line}");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn without_faults_metrics_have_no_fault_series() {
    let sim = start(config()).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.get("/metrics").await;
    assert!(!r.text().contains("servebench_sim_faults_total"));
    assert_eq!(sim.fault_counts().total(), 0);
    sim.shutdown().await;
}

/// Engine mode paces events from the scheduler; faults hook in the same way.
#[tokio::test]
async fn engine_mode_streams_take_faults_too() {
    let mut engine = servebench_sim::EngineConfig::cpu_tiny();
    engine.decode_step_base = Duration::from_millis(2);
    engine.decode_per_seq = Duration::ZERO;
    for kind in [FaultKind::Reset, FaultKind::Stall, FaultKind::Crlf, FaultKind::Trickle] {
        let faults =
            FaultConfig::default().with_rate(kind, 1.0).unwrap().with_stall(Duration::from_millis(50));
        let sim = start(config().with_engine(engine).with_faults(faults)).await;
        let r = fetch(&sim, "e", true).await;
        assert_eq!(r.status, 200, "{kind}");
        assert_eq!(r.clean_end, kind != FaultKind::Reset, "{kind}");
        assert_eq!(r.text().contains("[DONE]"), kind != FaultKind::Reset, "{kind}");
        assert_eq!(sim.fault_counts().get(kind), 1, "{kind}");
        sim.shutdown().await;
    }
}
