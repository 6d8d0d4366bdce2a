//! Base URL prefixes, end to end: a gateway mounts the server under a prefix (`/v`, `/tok`,
//! `/team-a`), the base URL names it in every way users write it (with or without `/v1`, with
//! a trailing slash), and every call the client makes — `/v1/models`, the generation endpoint,
//! `/tokenize`, `/metrics`, profiling, prefix-cache reset — reaches the route it means.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::body::Body;
use axum::http::{Method, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::Value;
use servebench_client::backend::BackendKind;
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_core::{Outcome, TextTokenizer};
use servebench_runner::observe::profiling::{post_control, reset_prefix_cache};
use servebench_runner::observe::scrape::fetch_metrics_text;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// (method, full path, the route it reached or `None` for a 404).
type Seen = Arc<Mutex<Vec<(String, String, Option<&'static str>)>>>;

const ROUTES: [&str; 7] = [
    "/v1/models",
    "/v1/completions",
    "/tokenize",
    "/metrics",
    "/start_profile",
    "/stop_profile",
    "/reset_prefix_cache",
];

fn respond(status: StatusCode, ctype: &str, body: String) -> Response {
    Response::builder().status(status).header("content-type", ctype).body(Body::from(body)).unwrap()
}

fn route(
    tok: &dyn TextTokenizer,
    method: &Method,
    path: &str,
    body: &str,
) -> Option<(&'static str, Response)> {
    let r = ROUTES.iter().copied().find(|r| *r == path)?;
    let get = r == "/v1/models" || r == "/metrics";
    if get != (method == Method::GET) {
        return None;
    }
    let resp = match r {
        "/v1/models" => respond(
            StatusCode::OK,
            "application/json",
            r#"{"object":"list","data":[{"id":"m","object":"model","root":"m","max_model_len":4096}]}"#.into(),
        ),
        "/v1/completions" => respond(
            StatusCode::OK,
            "text/event-stream",
            concat!(
                "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" hi\",\"finish_reason\":null}]}\n\n",
                "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":24,\"completion_tokens\":1,\"total_tokens\":25}}\n\n",
                "data: [DONE]\n\n"
            )
            .into(),
        ),
        "/tokenize" => {
            let b: Value = serde_json::from_str(body).unwrap_or(Value::Null);
            let ids = tok.encode(b["prompt"].as_str().unwrap_or(""), false).unwrap();
            let body = format!(r#"{{"count":{},"max_model_len":4096,"tokens":{:?}}}"#, ids.len(), ids);
            respond(StatusCode::OK, "application/json", body.replace(' ', ""))
        }
        "/metrics" => respond(StatusCode::OK, "text/plain", "vllm:num_requests_running{model_name=\"m\"} 1\n".into()),
        _ => respond(StatusCode::OK, "application/json", "{}".into()),
    };
    Some((r, resp))
}

/// A gateway that serves the routes under `mount` only.
async fn gateway(mount: &'static str, seen: Seen) -> String {
    let tok = servebench_data::tokenizer::load_tokenizer(crate::common::TOKENIZER).unwrap();
    let app = Router::new().fallback(move |method: Method, uri: Uri, body: String| {
        let (tok, seen) = (tok.clone(), seen.clone());
        async move {
            let path = uri.path().to_owned();
            let inner = match path.strip_prefix(mount) {
                Some(rest) if rest.starts_with('/') => Some(rest.to_owned()),
                _ => None,
            };
            let hit = inner.and_then(|p| route(tok.as_ref(), &method, &p, &body));
            seen.lock().unwrap().push((method.to_string(), path, hit.as_ref().map(|h| h.0)));
            match hit {
                Some((_, resp)) => resp,
                None => respond(StatusCode::NOT_FOUND, "text/plain", "Not Found".into()),
            }
        }
    });
    servebench_testkit::axum_server::serve(app).await
}

#[tokio::test]
async fn every_call_reaches_its_route_under_every_prefix() {
    // Verified (server, model, tokenizer) triples are remembered under the cache directory: a
    // fresh one, so that every run calls /tokenize (the only test of this binary that runs).
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_CACHE_HOME", cache.path());
    // (gateway mount, base URL path as the user writes it)
    let matrix: [(&'static str, &str); 9] = [
        ("", ""),
        ("", "/"),
        ("", "/v1"),
        ("", "/v1/"),
        ("/v", "/v"),
        ("/tok", "/tok/"),
        ("/team-a", "/team-a"),
        ("/team-a", "/team-a/v1"),
        ("/team-a", "/team-a/v1/"),
    ];
    for (mount, base_path) in matrix {
        let seen: Seen = Arc::default();
        let origin = gateway(mount, seen.clone()).await;
        let base = format!("{origin}{base_path}");
        let mut cfg = crate::common::config(base.clone(), "m", BackendKind::Completions, 3);
        cfg.model = None; // detected from /v1/models
        cfg.verify_prompts = 2; // /tokenize
        let records = crate::common::run(cfg).await;
        assert!(records.iter().all(|r| r.outcome == Outcome::Completed), "{base}: {records:?}");

        let client =
            HttpClient::new(ClientOptions { base_url: base.clone(), ..ClientOptions::default() }).unwrap();
        let h = http::HeaderMap::new();
        reset_prefix_cache(&client, &h).await.unwrap();
        fetch_metrics_text(&client, &h).await.unwrap();
        post_control(&client, &h, "/start_profile").await.unwrap();
        post_control(&client, &h, "/stop_profile").await.unwrap();

        let seen = seen.lock().unwrap();
        let missed: Vec<_> = seen.iter().filter(|(_, _, hit)| hit.is_none()).collect();
        assert!(missed.is_empty(), "{base}: requests that reached no route: {missed:?}");
        let hit: BTreeSet<&str> = seen.iter().filter_map(|(_, _, h)| *h).collect();
        assert_eq!(hit, ROUTES.iter().copied().collect(), "{base}");
        assert!(
            seen.iter().all(|(_, p, _)| p.starts_with(mount) && !p.contains("/v1/v1")),
            "{base}: {seen:?}"
        );
    }
}

/// Messages name the real path: a refused control call quotes the full URL path requested.
#[tokio::test]
async fn a_failed_control_call_names_the_path_actually_requested() {
    let seen: Seen = Arc::default();
    let origin = gateway("/team-a", seen).await;
    let client =
        HttpClient::new(ClientOptions { base_url: format!("{origin}/other/v1"), ..ClientOptions::default() })
            .unwrap();
    let e = fetch_metrics_text(&client, &http::HeaderMap::new()).await.unwrap_err().to_string();
    assert!(e.contains(&format!("GET {origin}/other/metrics: HTTP 404")), "{e}");
    let e = client.get_json::<Value>("/v1/models", &http::HeaderMap::new()).await.unwrap_err().to_string();
    assert!(e.contains(&format!("GET {origin}/other/v1/models: HTTP 404")), "{e}");
}
