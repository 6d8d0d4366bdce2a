//! The readiness check stops with the code of what the server said, read from the failure's
//! typed cause (set by the client where it read the server's answer), never from its message.

use crate::common::{config, Quiet};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use servebench_client::backend::BackendKind;
use servebench_core::ErrorCode;
use servebench_runner::{run_benchmark, CancellationToken};
use std::sync::Arc;
use std::time::Duration;

/// vLLM's answer to a chat request for a model without a chat template.
const NO_TEMPLATE: &str = r#"{"object":"error","message":"As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.","type":"BadRequestError","param":null,"code":400}"#;

#[tokio::test]
async fn a_server_without_a_chat_template_stops_the_readiness_check_with_sb403() {
    let app = Router::new()
        .route("/v1/chat/completions", post(|| async { (StatusCode::BAD_REQUEST, NO_TEMPLATE) }));
    let base = servebench_testkit::axum_server::serve(app).await;
    let mut cfg = config(base, "m", BackendKind::Chat, 2);
    cfg.ready_check_timeout = Duration::from_secs(30);
    let err = run_benchmark(cfg, Arc::new(Quiet), CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::ChatTemplate, "{err}");
    assert!(err.to_string().contains("default chat template is no longer allowed"), "{err}");
}
