//! Multi-turn sessions against a scripted chat server that checks every turn's history (the
//! assistant messages must be exactly the replies it sent on that `X-Session-ID`) and reports
//! `usage.prompt_tokens` as the token count of the message contents it received. A turn's input
//! tokens must equal that count: the history actually sent, never the turn's own output.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use servebench_client::backend::BackendKind;
use servebench_core::{Outcome, TextTokenizer};
use servebench_runner::config::load_options::MultiTurnConfig;
use servebench_runner::config::load_options::{LoraAssignment, LoraConfig};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Replies sent and models seen, per session id.
type Sessions = Arc<Mutex<HashMap<String, (Vec<String>, Vec<String>)>>>;

#[derive(Clone)]
struct Script {
    tok: Arc<dyn TextTokenizer>,
    /// Replies sent per session, and the models each session used.
    sessions: Sessions,
    /// Answer this turn of every session with HTTP 500 (the conversation then ends).
    fail_turn: Option<usize>,
    /// Hold the first turn of every session this long before answering.
    slow_first: Option<Duration>,
}

fn bad(msg: String) -> Response {
    (StatusCode::BAD_REQUEST, msg).into_response()
}

async fn chat(
    axum::extract::State(s): axum::extract::State<Script>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let Some(session) = headers.get("x-session-id").and_then(|v| v.to_str().ok()).map(str::to_string) else {
        return bad("no X-Session-ID".into());
    };
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if let (Some(hold), 1) = (s.slow_first, messages.len()) {
        tokio::time::sleep(hold).await;
    }
    let model = body["model"].as_str().unwrap_or_default().to_string();
    let mut sessions = s.sessions.lock().unwrap();
    let (replies, models) = sessions.entry(session.clone()).or_default();
    // History: user, assistant, user, assistant, ..., user — the assistant turns being exactly
    // the replies sent before on this session.
    if messages.len() != 2 * replies.len() + 1 {
        return bad(format!("turn {} sent {} messages", replies.len(), messages.len()));
    }
    if s.fail_turn == Some(replies.len()) {
        return (StatusCode::INTERNAL_SERVER_ERROR, "turn failed").into_response();
    }
    let mut prompt_tokens = 0;
    for (i, m) in messages.iter().enumerate() {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        if m["role"] != role {
            return bad(format!("message {i} has role {}", m["role"]));
        }
        let content = m["content"].as_str().unwrap_or_default();
        if role == "assistant" && content != replies[i / 2] {
            return bad(format!("assistant message {i} is not the reply sent"));
        }
        prompt_tokens += s.tok.count(content).unwrap();
    }
    let reply = format!(" reply {} of {session} with a few words", replies.len());
    replies.push(reply.clone());
    models.push(model);
    let completion = s.tok.count(&reply).unwrap();
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {"content": reply}, "finish_reason": null}]});
    let usage = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion, "total_tokens": prompt_tokens + completion}});
    let sse = format!("data: {chunk}\n\ndata: {usage}\n\ndata: [DONE]\n\n");
    ([("content-type", "text/event-stream")], sse).into_response()
}

async fn serve(script: Script) -> String {
    let app = Router::new().route("/v1/chat/completions", post(chat)).with_state(script);
    servebench_testkit::axum_server::serve(app).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_turn_counts_the_history_actually_sent() {
    let tok = servebench_data::tokenizer::load_tokenizer(crate::common::TOKENIZER).unwrap();
    let script = Script { tok: tok.clone(), sessions: Arc::default(), fail_turn: None, slow_first: None };
    let url = serve(script.clone()).await;
    let mut cfg = crate::common::config(url, "mt-model", BackendKind::Chat, 4);
    let delay = Duration::from_millis(30);
    cfg.load.multi_turn = Some(MultiTurnConfig {
        num_turns: 3,
        min_turns: 2,
        max_turns: 4,
        delay,
        concurrency: Some(2),
        ..MultiTurnConfig::default()
    });
    cfg.load.lora = Some(LoraConfig {
        modules: vec!["l-a".into(), "l-b".into()],
        assignment: LoraAssignment::RoundRobin,
    });
    let records = crate::common::run(cfg).await;
    assert!(records.len() >= 8, "4 conversations of 2..4 turns");
    let mut last: HashMap<u64, (u32, u64, u32)> = HashMap::new();
    for r in &records {
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
        // Input tokens = the server's count of what it received (history + new user message).
        assert_eq!(Some(r.prompt_tokens), r.server_prompt_tokens, "record {}", r.index);
        let (c, t) = (r.conversation.unwrap(), r.turn.unwrap());
        // LoRA is sticky per conversation (round-robin over conversations).
        assert_eq!(r.lora.as_deref(), Some(if c % 2 == 0 { "l-a" } else { "l-b" }));
        match last.get(&c) {
            None => assert_eq!(t, 0),
            Some(&(pt, done, prompt)) => {
                assert_eq!(t, pt + 1);
                // Turn n + 1 is due when turn n ended plus the think time, and not sent earlier.
                assert_eq!(r.intended_us, done + delay.as_micros() as u64);
                assert!(r.dispatched_us.unwrap() >= r.intended_us);
                // The history grew by the previous reply and the new user message.
                assert!(r.prompt_tokens > prompt);
            }
        }
        last.insert(c, (t, r.done_us.unwrap(), r.prompt_tokens));
    }
    // The server saw each conversation on one session id, with its adapter as the model.
    let sessions = script.sessions.lock().unwrap();
    assert_eq!(sessions.len(), 4);
    for (_, models) in sessions.values() {
        assert!(models.windows(2).all(|w| w[0] == w[1]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_turns_hit_the_simulators_prefix_cache() {
    use servebench_sim::{EngineConfig, SimConfig};
    let tok = servebench_data::tokenizer::load_tokenizer(crate::common::TOKENIZER).unwrap();
    let mut engine = EngineConfig::h100_8b();
    engine.jitter = 0.0;
    let sim =
        servebench_sim::start(SimConfig::new("mt", tok).with_engine(engine), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
    let mut cfg = crate::common::config(sim.base_url(), "mt", BackendKind::Chat, 3);
    cfg.load.multi_turn = Some(MultiTurnConfig { num_turns: 3, ..MultiTurnConfig::default() });
    let records = crate::common::run(cfg).await;
    assert_eq!(records.len(), 9);
    for r in &records {
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
        // Each later turn resends the conversation so far: its prefix was computed by the
        // previous turn and is cached on the server.
        if r.turn.unwrap() > 0 {
            assert!(r.cached_prompt_tokens.unwrap() >= 16, "turn {:?}: {:?}", r.turn, r.cached_prompt_tokens);
        }
    }
    sim.shutdown().await;
}

/// Pins the turns after a failed one: never sent, they are cancelled with `cancelled_by` =
/// `dependency_failed`, as a session tree's (they had no reason, and the errors list said the
/// legacy "cancelled: never sent"). The server fails turn 1 of every conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_after_a_failed_turn_are_cancelled_as_dependency_failed() {
    let tok = servebench_data::tokenizer::load_tokenizer(crate::common::TOKENIZER).unwrap();
    let script = Script { tok, sessions: Arc::default(), fail_turn: Some(1), slow_first: None };
    let url = serve(script).await;
    let mut cfg = crate::common::config(url, "mt-model", BackendKind::Chat, 3);
    cfg.load.multi_turn =
        Some(MultiTurnConfig { num_turns: 4, min_turns: 4, max_turns: 4, ..MultiTurnConfig::default() });
    let records = crate::common::run(cfg).await;
    assert_eq!(records.len(), 12, "3 conversations of 4 turns");
    for r in &records {
        match r.turn.unwrap() {
            0 => assert_eq!(r.outcome, Outcome::Completed, "{r:?}"),
            1 => assert_eq!(r.outcome, Outcome::Failed, "{r:?}"),
            _ => {
                assert_eq!(r.outcome, Outcome::Cancelled, "{r:?}");
                assert_eq!(r.cancelled_by, Some(servebench_core::CancelReason::DependencyFailed), "{r:?}");
                assert!(r.dispatched_us.is_none(), "never sent: {r:?}");
            }
        }
    }
}

/// Pins the turns after a turn cancelled by design (`--request-cancellation-rate`): its user
/// left, so the conversation ends as after a failed turn and the later turns are cancelled with
/// `cancelled_by` = `dependency_failed`. They used to be cancelled with no `cancelled_by` at
/// all, and the console's note did not say why they were never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_after_a_turn_cancelled_by_design_are_cancelled_as_dependency_failed() {
    let tok = servebench_data::tokenizer::load_tokenizer(crate::common::TOKENIZER).unwrap();
    let slow_first = Some(Duration::from_secs(5));
    let script = Script { tok, sessions: Arc::default(), fail_turn: None, slow_first };
    let url = serve(script).await;
    let mut cfg = crate::common::config(url, "mt-model", BackendKind::Chat, 3);
    cfg.load.multi_turn =
        Some(MultiTurnConfig { num_turns: 3, min_turns: 3, max_turns: 3, ..MultiTurnConfig::default() });
    // Every request chosen; the first turn (held 5 s) is cancelled after 50 ms.
    cfg.load.cancellation = Some((100.0, Duration::from_millis(50)));
    let records = crate::common::run(cfg).await;
    assert_eq!(records.len(), 9, "3 conversations of 3 turns");
    for r in &records {
        assert_eq!(r.outcome, Outcome::Cancelled, "{r:?}");
        let why = if r.turn.unwrap() == 0 {
            servebench_core::CancelReason::ByDesign
        } else {
            assert!(r.dispatched_us.is_none(), "never sent: {r:?}");
            servebench_core::CancelReason::DependencyFailed
        };
        assert_eq!(r.cancelled_by, Some(why), "{r:?}");
    }
}
