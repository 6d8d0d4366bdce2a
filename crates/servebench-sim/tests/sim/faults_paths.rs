//! Fault injection beyond completions and chat streams, at the byte level: the Responses API's
//! typed-event stream, and the JSON answers of the pooling endpoints and of non-streamed
//! generation. Each kind alone, what goes on the wire, which kinds apply where, and the
//! counters against the plans (`FaultConfig::plan_on`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::*;
use serde_json::{json, Value};
use servebench_sim::{FaultConfig, FaultKind, ResponseShape, SimHandle};

const TOKENS: u32 = 6;
/// Reasoning tokens of every Responses output: the first stream events are reasoning deltas.
const REASONING: u32 = 2;
const STALL: Duration = Duration::from_millis(150);

/// The five pooling routes with a valid body each.
fn pooling_requests() -> Vec<(&'static str, Value)> {
    let embed = json!({"model": MODEL, "input": "hello there"});
    let rerank = json!({"model": MODEL, "query": "what is rust", "documents": ["a language", "a fungus"]});
    vec![
        ("/v1/embeddings", embed.clone()),
        ("/pooling", embed.clone()),
        ("/v1/pooling", embed),
        ("/v1/rerank", rerank.clone()),
        ("/rerank", rerank),
    ]
}

fn responses_body(stream: bool) -> Value {
    json!({"model": MODEL, "input": "hello there", "max_output_tokens": TOKENS, "ignore_eos": true,
           "stream": stream, "store": false})
}

fn chat_body(stream: bool) -> Value {
    json!({"model": MODEL, "messages": [{"role": "user", "content": "hello there"}],
           "max_completion_tokens": TOKENS, "ignore_eos": true, "stream": stream})
}

fn completion_body(stream: bool) -> Value {
    json!({"model": MODEL, "prompt": "hello there", "max_tokens": TOKENS, "ignore_eos": true, "stream": stream})
}

fn faults(kind: FaultKind) -> FaultConfig {
    FaultConfig::default().with_rate(kind, 1.0).unwrap().with_stall(STALL)
}

async fn sim_with(kind: FaultKind) -> SimHandle {
    start(config().with_reasoning_tokens(REASONING).with_faults(faults(kind))).await
}

/// The events of a typed-event stream (LF framing): name and JSON (`None`: does not parse).
fn typed(r: &Raw) -> Vec<(String, Option<Value>)> {
    r.text()
        .split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let (mut name, mut data) = (String::new(), String::new());
            for line in e.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = v.trim_start().to_owned();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data = v.trim_start().to_owned();
                }
            }
            (name, serde_json::from_str(&data).ok())
        })
        .collect()
}

fn is_delta(name: &str) -> bool {
    name == "response.reasoning_text.delta" || name == "response.output_text.delta"
}

/// Parseable delta events among `events`.
fn deltas(events: &[(String, Option<Value>)]) -> usize {
    events.iter().filter(|(n, v)| is_delta(n) && v.is_some()).count()
}

fn has_terminal(events: &[(String, Option<Value>)]) -> bool {
    events.iter().any(|(n, _)| n == "response.completed" || n == "response.incomplete")
}

#[tokio::test]
async fn responses_stream_failures_happen_after_the_planned_event() {
    let ids = ["a", "b", "c", "d"];
    for kind in [FaultKind::Reset, FaultKind::MalformedJson, FaultKind::Truncate, FaultKind::OversizedEvent] {
        let sim = sim_with(kind).await;
        for id in ids {
            let n = faults(kind).plan_on(ResponseShape::TypedEventStream, id).after_events(TOKENS) as usize;
            assert!((1..TOKENS as usize).contains(&n));
            let r = fetch_raw(sim.local_addr(), "/v1/responses", id, &responses_body(true)).await;
            assert_eq!(r.status, 200, "{kind}");
            let ev = typed(&r);
            let ctx = format!("{kind} {id} after {n}: {}", r.text().chars().take(3000).collect::<String>());
            match kind {
                FaultKind::Reset => {
                    assert!(!r.clean_end, "{ctx}");
                    assert_eq!(deltas(&ev), n, "{ctx}");
                    assert!(!has_terminal(&ev), "{ctx}");
                }
                FaultKind::Truncate => {
                    assert!(r.clean_end, "{ctx}");
                    assert_eq!(deltas(&ev), n, "{ctx}");
                    assert!(!has_terminal(&ev), "no response.completed or .incomplete: {ctx}");
                }
                FaultKind::MalformedJson => {
                    let bad: Vec<usize> = (0..ev.len()).filter(|i| ev[*i].1.is_none()).collect();
                    assert_eq!(bad.len(), 1, "{ctx}");
                    assert!(is_delta(&ev[bad[0]].0), "a delta event: {ctx}");
                    assert_eq!(deltas(&ev[..bad[0]]), n, "{ctx}");
                    // The stream goes on after it (the client is expected to give up).
                    assert_eq!(deltas(&ev), TOKENS as usize, "{ctx}");
                    assert!(r.clean_end && has_terminal(&ev), "{ctx}");
                }
                FaultKind::OversizedEvent => {
                    let big = r.text().split("\n\n").position(|e| e.len() > 1 << 20).unwrap();
                    let (name, v) = &ev[big];
                    assert!(v.is_some(), "valid JSON");
                    assert_eq!(deltas(&ev[..big]), n, "{ctx}");
                    // The oversized delta belongs to the open item: reasoning for the first
                    // REASONING events.
                    let want = if n <= REASONING as usize {
                        "response.reasoning_text.delta"
                    } else {
                        "response.output_text.delta"
                    };
                    assert_eq!(name, want, "{kind} {id} after {n}");
                }
                _ => unreachable!(),
            }
        }
        assert_eq!(sim.fault_counts().get(kind), ids.len() as u64, "{kind}");
        assert_eq!(sim.fault_counts().total(), ids.len() as u64, "{kind}");
        sim.shutdown().await;
    }
}

#[tokio::test]
async fn responses_statuses_close_and_stall() {
    for (kind, status) in [(FaultKind::Http429, 429), (FaultKind::Http500, 500), (FaultKind::Http503, 503)] {
        let sim = sim_with(kind).await;
        for stream in [true, false] {
            let r = fetch_raw(sim.local_addr(), "/v1/responses", "s", &responses_body(stream)).await;
            assert_eq!(r.status, status);
            assert_eq!(r.json().unwrap()["error"]["code"], status);
            assert_eq!(r.header("retry-after").is_some(), status != 500, "{status}");
        }
        assert_eq!(sim.fault_counts().get(kind), 2);
        sim.shutdown().await;
    }
    let sim = sim_with(FaultKind::Close).await;
    assert!(fetch_raw(sim.local_addr(), "/v1/responses", "c", &responses_body(true)).await.empty);
    assert_eq!(sim.fault_counts().get(FaultKind::Close), 1);
    sim.shutdown().await;

    let sim = sim_with(FaultKind::Stall).await;
    let r = fetch_raw(sim.local_addr(), "/v1/responses", "st", &responses_body(true)).await;
    let ev = typed(&r);
    assert!(r.clean_end && has_terminal(&ev));
    assert_eq!(deltas(&ev), TOKENS as usize);
    // A lower bound only: the simulator sleeps at least this long.
    assert!(r.max_gap >= STALL, "{:?}", r.max_gap);
    assert_eq!(sim.fault_counts().get(FaultKind::Stall), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn responses_quirks_rewrite_the_framing_only() {
    let sim = sim_with(FaultKind::Crlf).await;
    let t = fetch_raw(sim.local_addr(), "/v1/responses", "q", &responses_body(true)).await.text();
    assert!(t.starts_with("event: response.created\r\ndata: {"), "{t}");
    assert!(t.ends_with("}\r\n\r\n") && !t.replace("\r\n", "").contains('\n'), "{t}");
    sim.shutdown().await;

    let sim = sim_with(FaultKind::DataNoSpace).await;
    let r = fetch_raw(sim.local_addr(), "/v1/responses", "q", &responses_body(true)).await;
    let t = r.text();
    assert!(t.contains("\ndata:{") && !t.contains("data: "), "{t}");
    assert!(t.contains("event: response.completed") || t.contains("event: response.incomplete"));
    assert_eq!(deltas(&typed(&r)), TOKENS as usize);
    sim.shutdown().await;

    let sim = sim_with(FaultKind::KeepAlive).await;
    let r = fetch_raw(sim.local_addr(), "/v1/responses", "q", &responses_body(true)).await;
    let t = r.text();
    let events = t.split("\n\n").filter(|e| e.starts_with("event: ")).count();
    assert!(events > TOKENS as usize);
    assert_eq!(t.matches(": keep-alive\n\n").count(), events, "one before every event: {t}");
    sim.shutdown().await;

    let sim = sim_with(FaultKind::Trickle).await;
    let r = fetch_raw(sim.local_addr(), "/v1/responses", "q", &responses_body(true)).await;
    assert!(r.clean_end && r.chunks.iter().all(|c| *c == 1), "one byte per chunk");
    let ev = typed(&r);
    assert!(has_terminal(&ev));
    assert_eq!(deltas(&ev), TOKENS as usize);
    assert_eq!(sim.fault_counts().get(FaultKind::Trickle), 1);
    sim.shutdown().await;
}

/// The Responses API has no `[DONE]`: `no_done` is not drawn for it (and not counted), while
/// a chat stream of the same server still gets it.
#[tokio::test]
async fn no_done_does_not_apply_to_typed_event_streams() {
    assert!(faults(FaultKind::NoDone).plan_on(ResponseShape::TypedEventStream, "x").is_clean());
    let sim = sim_with(FaultKind::NoDone).await;
    let r = fetch_raw(sim.local_addr(), "/v1/responses", "x", &responses_body(true)).await;
    assert!(r.clean_end && has_terminal(&typed(&r)));
    assert_eq!(sim.fault_counts().total(), 0);
    let r = fetch_raw(sim.local_addr(), "/v1/chat/completions", "y", &chat_body(true)).await;
    assert!(r.clean_end && !r.text().contains("[DONE]"));
    assert_eq!(sim.fault_counts().get(FaultKind::NoDone), 1);
    sim.shutdown().await;
}

/// Checks one faulted JSON answer of `kind` (a pooling or non-streamed generation answer whose
/// valid form has the member `key`).
fn check_json_answer(kind: FaultKind, r: &Raw, key: &str, ctx: &str) {
    if let Some(status) = kind.http_status() {
        assert_eq!(r.status, status, "{ctx}");
        assert_eq!(r.json().unwrap()["error"]["code"], status, "{ctx}");
        assert_eq!(r.header("retry-after").is_some(), status != 500, "{ctx}");
        return;
    }
    if kind == FaultKind::Close {
        assert!(r.empty, "{ctx}: {r:?}");
        return;
    }
    assert_eq!(r.status, 200, "{ctx}");
    match kind {
        FaultKind::Reset => {
            assert_eq!(r.header("transfer-encoding").as_deref(), Some("chunked"), "{ctx}");
            assert!(!r.clean_end, "the body never ends: {ctx}");
            assert!(r.body.starts_with(b"{") && r.json().is_none(), "{ctx}: {}", r.text());
        }
        FaultKind::Stall => {
            assert!(r.json().unwrap().get(key).is_some(), "{ctx}");
            // The head goes out first, the body after the stall (a lower bound only: the
            // simulator sleeps at least this long).
            assert!(r.head_to_body_end >= STALL, "{ctx}: {:?}", r.head_to_body_end);
        }
        FaultKind::MalformedJson => {
            assert_eq!(r.header("content-length"), Some(r.body.len().to_string()), "complete: {ctx}");
            assert!(r.body.starts_with(b"{") && r.json().is_none(), "{ctx}: {}", r.text());
        }
        FaultKind::OversizedEvent => {
            assert!(r.body.len() > (1 << 20) + (64 << 10), "{ctx}");
            let v = r.json().unwrap();
            assert_eq!(v["injected_padding"].as_str().unwrap().len(), (1 << 20) + (64 << 10), "{ctx}");
            assert!(v.get(key).is_some(), "the answer is still there: {ctx}");
        }
        other => panic!("{other} has no body form"),
    }
}

const JSON_KINDS: [FaultKind; 8] = [
    FaultKind::Http429,
    FaultKind::Http500,
    FaultKind::Http503,
    FaultKind::Close,
    FaultKind::Reset,
    FaultKind::Stall,
    FaultKind::MalformedJson,
    FaultKind::OversizedEvent,
];

#[tokio::test]
async fn json_body_faults_on_every_pooling_route() {
    for kind in JSON_KINDS {
        assert!(kind.applies_to(ResponseShape::JsonBody));
        let sim = sim_with(kind).await;
        let requests = pooling_requests();
        for (path, body) in &requests {
            let r = fetch_raw(sim.local_addr(), path, &format!("{path}-{kind}"), body).await;
            let key = if path.contains("rerank") { "results" } else { "data" };
            check_json_answer(kind, &r, key, &format!("{kind} {path}"));
        }
        assert_eq!(sim.fault_counts().get(kind), requests.len() as u64, "{kind}");
        assert_eq!(sim.fault_counts().total(), requests.len() as u64, "{kind}");
        sim.shutdown().await;
    }
}

#[tokio::test]
async fn non_streamed_generation_takes_the_json_body_faults() {
    for kind in JSON_KINDS {
        let sim = sim_with(kind).await;
        let requests = [
            ("/v1/completions", completion_body(false), "choices"),
            ("/v1/chat/completions", chat_body(false), "choices"),
            ("/v1/responses", responses_body(false), "output"),
        ];
        for (path, body, key) in &requests {
            let r = fetch_raw(sim.local_addr(), path, "g", body).await;
            check_json_answer(kind, &r, key, &format!("{kind} {path}"));
        }
        assert_eq!(sim.fault_counts().get(kind), 3, "{kind}");
        assert_eq!(sim.fault_counts().total(), 3, "{kind}");
        sim.shutdown().await;
    }
}

/// Truncation, `no_done` and the SSE quirks have no JSON-body form: pooling and non-streamed
/// answers come back untouched and nothing is counted for them.
#[tokio::test]
async fn stream_only_kinds_leave_json_answers_alone() {
    let mut f = FaultConfig::default();
    for k in [
        FaultKind::Truncate,
        FaultKind::NoDone,
        FaultKind::Crlf,
        FaultKind::DataNoSpace,
        FaultKind::KeepAlive,
        FaultKind::Trickle,
    ] {
        assert!(!k.applies_to(ResponseShape::JsonBody), "{k}");
        f.set_rate(k, 1.0).unwrap();
    }
    let sim = start(config().with_faults(f)).await;
    let mut requests = pooling_requests();
    requests.push(("/v1/chat/completions", chat_body(false)));
    requests.push(("/v1/responses", responses_body(false)));
    for (path, body) in &requests {
        let r = fetch_raw(sim.local_addr(), path, "p", body).await;
        assert_eq!(r.status, 200, "{path}");
        assert!(r.json().is_some(), "{path}: {}", r.text());
    }
    assert_eq!(sim.fault_counts().total(), 0);
    sim.shutdown().await;
}

/// Every kind at 20 % over every route; the counters (and `/metrics`) equal the plans of the
/// request ids on the shape of each answer.
#[tokio::test]
async fn mixed_faults_on_every_route_match_the_plans() {
    let mut f = FaultConfig::default().with_seed(77).with_stall(Duration::from_millis(20));
    f.apply_spec("all=0.2").unwrap();
    let sim = start(config().with_reasoning_tokens(REASONING).with_faults(f.clone())).await;
    let mut routes: Vec<(&str, Value, ResponseShape)> = vec![
        ("/v1/completions", completion_body(true), ResponseShape::ChunkStream),
        ("/v1/chat/completions", chat_body(false), ResponseShape::JsonBody),
        ("/v1/responses", responses_body(true), ResponseShape::TypedEventStream),
        ("/v1/responses", responses_body(false), ResponseShape::JsonBody),
    ];
    routes.extend(pooling_requests().into_iter().map(|(p, b)| (p, b, ResponseShape::JsonBody)));
    let mut expected = BTreeMap::<FaultKind, u64>::new();
    for (r, (path, body, shape)) in routes.iter().enumerate() {
        for i in 0..16 {
            let id = format!("m-{r}-{i}");
            for k in f.plan_on(*shape, &id).kinds() {
                *expected.entry(k).or_default() += 1;
            }
            let resp = fetch_raw(sim.local_addr(), path, &id, body).await;
            match f.plan_on(*shape, &id).failure {
                Some(FaultKind::Close) => assert!(resp.empty, "{id}"),
                Some(k) if k.http_status().is_some() => assert_eq!(Some(resp.status), k.http_status()),
                _ => assert_eq!(resp.status, 200, "{id} {path}"),
            }
        }
    }
    let counts = sim.fault_counts();
    for k in FaultKind::ALL {
        assert_eq!(counts.get(k), expected.get(&k).copied().unwrap_or(0), "{k}");
    }
    let mut c = Conn::connect(sim.local_addr()).await;
    let metrics = c.get("/metrics").await.text();
    for k in FaultKind::ALL {
        let line = metrics
            .lines()
            .find(|l| l.starts_with("servebench_sim_faults_total{") && l.contains(&format!("kind=\"{k}\"")))
            .unwrap_or_else(|| panic!("no series for {k}"));
        assert!(line.ends_with(&format!(" {}", counts.get(k))), "{line}");
    }
    assert!(counts.total() > 0);
    sim.shutdown().await;
}
