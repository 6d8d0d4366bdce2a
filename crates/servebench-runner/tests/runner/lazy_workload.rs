//! Issue 27 item 1: lazy requests (built from the seed as they are sent, ahead of the
//! dispatcher) put on the wire exactly what the eager workload held: a server records every
//! body, and the prompts and `max_tokens` it saw are those of `generate_random` (after the same
//! `--max-model-len` filtering), request for request.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::routing::post;
use axum::{Json, Router};
use servebench_client::backend::BackendKind;
use servebench_data::random::{generate_random, RandomDatasetConfig};
use servebench_runner::DatasetSpec;
use std::sync::{Arc, Mutex};

type Seen = Arc<Mutex<Vec<(String, u64)>>>;

/// `/v1/completions` streaming one token, remembering each prompt and max_tokens.
async fn recording_server(seen: Seen) -> String {
    let app = Router::new().route(
        "/v1/completions",
        post(move |Json(body): Json<serde_json::Value>| {
            let seen = seen.clone();
            async move {
                let prompt = body["prompt"].as_str().unwrap_or_default().to_string();
                let max = body["max_tokens"].as_u64().unwrap_or(0);
                seen.lock().unwrap().push((prompt, max));
                let sse = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":\"length\"}],\
                           \"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\ndata: [DONE]\n\n";
                ([("content-type", "text/event-stream")], sse)
            }
        }),
    );
    servebench_testkit::axum_server::serve(app).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lazy_random_requests_send_the_eager_workload_byte_for_byte() {
    let seen: Seen = Arc::default();
    let base = recording_server(seen.clone()).await;
    let random = RandomDatasetConfig {
        num_prompts: 60,
        input_len: 120,
        output_len: 16,
        prefix_len: 8,
        range_ratio_input: 0.5,
        range_ratio_output: 0.5,
        seed: 9,
        ..RandomDatasetConfig::default()
    };
    let mut cfg = crate::common::config(base, "m", BackendKind::Completions, 60);
    cfg.dataset = DatasetSpec::Random(random.clone());
    cfg.max_model_len = Some(150);
    cfg.max_concurrency = Some(3);
    let messages = Arc::new(crate::common::Messages::default());
    let records = crate::common::run_observed(cfg, messages.clone()).await;
    let eager = generate_random(&random, crate::common::cl100k().as_ref()).unwrap();
    let mut want: Vec<(String, u64)> = eager
        .requests
        .iter()
        .filter(|r| r.prompt_tokens + r.expected_output_tokens <= 150)
        .map(|r| (r.prompt.text().unwrap().to_string(), u64::from(r.expected_output_tokens)))
        .collect();
    assert!(want.len() < 60 && want.len() > 10, "the filter drops some: {}", want.len());
    assert_eq!(records.len(), want.len());
    // The console says how many --max-model-len dropped (it was said only in a dry run).
    let dropped = format!("; {} dropped by --max-model-len)", 60 - want.len());
    let said = messages.0.lock().unwrap().clone();
    assert!(said.iter().any(|m| m.starts_with("Prepared") && m.contains(&dropped)), "{said:?}");
    let mut got = seen.lock().unwrap().clone();
    got.sort();
    want.sort();
    assert_eq!(got, want);
}
