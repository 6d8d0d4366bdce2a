//! A server that streams without `usage` (the readiness check off, as by default): the client
//! does not keep its tokenizer through the measured phase (it costs 10-15 MiB of RSS); the
//! records lacking usage are counted after the run by the tokenizer loaded again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::routing::post;
use axum::Router;
use servebench_client::backend::BackendKind;

/// `/v1/completions` streaming "hello world" in two chunks, a finish reason and `[DONE]`, and
/// never a `usage` object (even when `stream_options.include_usage` asks for one).
async fn server_without_usage() -> String {
    let body = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\"hello\",\"finish_reason\":null}]}\n\n\
                data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\" world\",\"finish_reason\":null}]}\n\n\
                data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n\
                data: [DONE]\n\n";
    let app = Router::new().route(
        "/v1/completions",
        post(move || async move { ([("content-type", "text/event-stream")], body) }),
    );
    servebench_testkit::axum_server::serve(app).await
}

#[tokio::test]
async fn responses_without_usage_are_retokenized_after_the_run_not_during_it() {
    let base = server_without_usage().await;
    let records = crate::common::run(crate::common::config(base, "m", BackendKind::Completions, 6)).await;
    assert_eq!(records.len(), 6);
    for r in &records {
        assert_eq!(r.outcome, servebench_core::Outcome::Completed, "{r:?}");
        assert_eq!(r.completion_tokens, None, "the server sent no usage");
        // cl100k_base: "hello world" is two tokens.
        assert_eq!(r.retokenized_tokens, Some(2), "{r:?}");
        assert_eq!(r.generated_text, None, "text dropped once counted (no --save-detailed)");
    }
}
