//! `/tokenize` and `/detokenize` in every dialect servers speak, against scripted servers that
//! answer byte for byte as the real ones do (vLLM, SGLang, llama.cpp, TGI, GuideLLM's mock),
//! wrong-dialect answers included.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::body::Body;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::Value;
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_core::{BenchError, TextTokenizer};
use servebench_data::random::RandomDatasetConfig;
use servebench_runner::prepare::server_workload::build_server_workload;
use servebench_runner::prepare::tokenize_dialect::TokenizeDialect;
use servebench_runner::prepare::{ServerTokenize, Verification};
use std::sync::{Arc, Mutex};

const BOS: u32 = 100_257;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Vllm,
    Sglang,
    LlamaCpp,
    Tgi,
    GuideLlm,
}

/// What the scripted server saw: (path, body).
type Seen = Arc<Mutex<Vec<(String, String)>>>;

struct Scripted {
    kind: Kind,
    tok: Arc<dyn TextTokenizer>,
    /// The server's tokenizer adds a BOS the client's does not.
    bos: bool,
    /// Routes served only under `/v1` (a gateway that forwards `/v1/*` only).
    v1_only: bool,
}

fn json(status: StatusCode, body: String) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap()
}

fn text(status: StatusCode, body: &str) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(Body::from(body.to_owned()))
        .unwrap()
}

fn ids_json(ids: &[u32]) -> String {
    serde_json::to_string(ids).unwrap()
}

impl Scripted {
    fn encode(&self, s: &str, special: bool) -> Vec<u32> {
        let mut ids = if self.bos && special { vec![BOS] } else { vec![] };
        ids.extend(self.tok.encode(s, false).unwrap());
        ids
    }

    fn decode(&self, ids: &[u32]) -> String {
        let ids: Vec<u32> = ids.iter().copied().filter(|&i| i != BOS).collect();
        self.tok.decode(&ids, false).unwrap()
    }

    fn tokenize(&self, b: &Value) -> Response {
        let s = |k: &str| b.get(k).and_then(Value::as_str);
        match self.kind {
            Kind::Vllm | Kind::Sglang => match s("prompt") {
                Some(p) => {
                    let ids = self.encode(p, true);
                    json(StatusCode::OK, format!(
                        r#"{{"count":{},"max_model_len":4096,"tokens":{},"token_strs":null}}"#,
                        ids.len(),
                        ids_json(&ids)
                    ))
                }
                None => json(StatusCode::BAD_REQUEST, r#"{"object":"error","message":"[{'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required', 'input': {'content': 'x'}}]","type":"BadRequestError","param":null,"code":400}"#.into()),
            },
            // llama.cpp reads `content`; a body without it gets 200 and an empty list.
            Kind::LlamaCpp => {
                let special = b.get("add_special").and_then(Value::as_bool).unwrap_or(false);
                let ids = s("content").map(|c| self.encode(c, special)).unwrap_or_default();
                json(StatusCode::OK, format!(r#"{{"tokens":{}}}"#, ids_json(&ids)))
            }
            Kind::Tgi => match s("inputs") {
                Some(i) => {
                    let ids = self.encode(i, true);
                    let items: Vec<String> = ids
                        .iter()
                        .map(|id| format!(r#"{{"id":{id},"text":"t","start":0,"stop":1}}"#))
                        .collect();
                    json(StatusCode::OK, format!("[{}]", items.join(",")))
                }
                None => text(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Failed to deserialize the JSON body into the target type: missing field `inputs` at line 1 column 52",
                ),
            },
            Kind::GuideLlm => match s("text") {
                Some(t) => {
                    // (The mock's tokenizer here stands for a model whose tokenizer adds BOS.)
                    let ids = self.encode(t, true);
                    json(StatusCode::OK, format!(r#"{{"tokens":{},"count":{}}}"#, ids_json(&ids), ids.len()))
                }
                None => json(StatusCode::BAD_REQUEST, GUIDELLM_400.into()),
            },
        }
    }

    fn detokenize(&self, b: &Value) -> Response {
        let ids: Vec<u32> = serde_json::from_value(b["tokens"].clone()).unwrap_or_default();
        let t = serde_json::to_string(&self.decode(&ids)).unwrap();
        match self.kind {
            Kind::Vllm => json(StatusCode::OK, format!(r#"{{"prompt":{t}}}"#)),
            Kind::Sglang | Kind::GuideLlm => json(StatusCode::OK, format!(r#"{{"text":{t}}}"#)),
            Kind::LlamaCpp => json(StatusCode::OK, format!(r#"{{"content":{t}}}"#)),
            Kind::Tgi => text(StatusCode::NOT_FOUND, ""),
        }
    }

    fn answer(&self, path: &str, body: &str) -> Response {
        let b: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let route = match path.strip_prefix("/v1") {
            Some(rest) if self.v1_only || self.kind == Kind::Sglang => rest,
            Some(_) => return text(StatusCode::NOT_FOUND, "Not Found"),
            None if self.v1_only => return text(StatusCode::NOT_FOUND, "Not Found"),
            None => path,
        };
        match route {
            "/tokenize" => self.tokenize(&b),
            "/detokenize" => self.detokenize(&b),
            _ => text(StatusCode::NOT_FOUND, "Not Found"),
        }
    }
}

/// GuideLLM's mock server's answer to a body without `text` (a pydantic error inside).
const GUIDELLM_400: &str = r#"{"error":{"message":"Invalid request: 1 validation error for TokenizeRequest\ntext\n  Field required [type=missing, input_value={'model': 'm', 'prompt': 'The quick brown fox jumps over the lazy dog.'}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.11/v/missing","type":"invalid_request_error","code":"invalid_request"}}"#;

async fn serve(s: Scripted) -> (ServerTokenize, Seen) {
    let seen: Seen = Arc::default();
    let (s, seen2) = (Arc::new(s), seen.clone());
    let app = Router::new().fallback(move |uri: Uri, body: String| {
        let (s, seen) = (s.clone(), seen2.clone());
        async move {
            seen.lock().unwrap().push((uri.path().to_owned(), body.clone()));
            s.answer(uri.path(), &body)
        }
    });
    let base = servebench_testkit::axum_server::serve(app).await;
    let client = HttpClient::new(ClientOptions { base_url: base, ..ClientOptions::default() }).unwrap();
    (ServerTokenize::new(client, Default::default(), "m"), seen)
}

fn scripted(kind: Kind, bos: bool) -> Scripted {
    Scripted { kind, tok: crate::common::cl100k(), bos, v1_only: false }
}

const ALL: [(Kind, TokenizeDialect); 5] = [
    (Kind::Vllm, TokenizeDialect::Prompt),
    (Kind::Sglang, TokenizeDialect::Prompt),
    (Kind::LlamaCpp, TokenizeDialect::Content),
    (Kind::Tgi, TokenizeDialect::Inputs),
    (Kind::GuideLlm, TokenizeDialect::Text),
];

#[tokio::test]
async fn every_dialect_is_detected_and_verifies_prompt_lengths() {
    let tok = crate::common::cl100k();
    for (kind, dialect) in ALL {
        let (server, _) = serve(scripted(kind, false)).await;
        let mut w = crate::common::three_prompts(tok.as_ref());
        let v = crate::common::verify_held(&server, &mut w, 10).await.unwrap();
        assert_eq!(v, Verification::Verified { checked: 3 }, "{kind:?}");
        let r = server.report().unwrap();
        assert_eq!((r.dialect, r.tokenize_path.as_str()), (dialect, "/tokenize"), "{kind:?}");
    }
}

/// The server's tokenizer adds a BOS: every prompt is rewritten through /detokenize in the
/// dialects that have one; TGI has none, so the prompts stay and the reason is given.
#[tokio::test]
async fn every_dialect_with_detokenize_makes_prompts_exact() {
    let tok = crate::common::cl100k();
    for (kind, dialect) in ALL {
        let (server, _) = serve(scripted(kind, true)).await;
        let mut w = crate::common::three_prompts(tok.as_ref());
        let v = crate::common::verify_held(&server, &mut w, 10).await.unwrap();
        if dialect.has_detokenize() {
            assert_eq!(v, Verification::Fixed { checked: 3, fixed: 3, unresolved: 0 }, "{kind:?}");
            assert_eq!(server.report().unwrap().detokenize_path.as_deref(), Some("/detokenize"), "{kind:?}");
            for r in &w.requests {
                let text = r.prompt.text().unwrap();
                assert_eq!(tok.count(text).unwrap() as u32 + 1, r.prompt_tokens, "{kind:?} {text:?}");
            }
        } else {
            assert_eq!(v, Verification::Fixed { checked: 3, fixed: 0, unresolved: 3 }, "{kind:?}");
            let why = server.detokenize_problem().unwrap();
            assert!(why.contains("`inputs` dialect (TGI) has no /detokenize"), "{why}");
        }
    }
}

#[tokio::test]
async fn server_tokenizer_mode_works_with_every_dialect_that_has_detokenize() {
    let cfg = RandomDatasetConfig { num_prompts: 4, input_len: 20, output_len: 3, ..Default::default() };
    for (kind, dialect) in ALL {
        let (server, _) = serve(scripted(kind, true)).await;
        let built = build_server_workload(&server, &cfg).await;
        if dialect.has_detokenize() {
            let w = built.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            let check = scripted(kind, true);
            for r in &w.requests {
                let text = r.prompt.text().unwrap();
                let on_server = check.encode(text, true).len() as u32;
                assert_eq!((on_server, r.prompt_tokens), (20, 20), "{kind:?} {text:?}");
            }
        } else {
            let e = built.unwrap_err().to_string();
            assert!(e.contains("--tokenizer server needs") && e.contains("has no /detokenize"), "{e}");
            assert!(!e.contains('\n'));
        }
    }
}

/// llama.cpp answers 200 with an empty list to vLLM's body: that is the wrong dialect, and the
/// next one (`content`, with `add_special` so BOS counts as on a completion) is used.
#[tokio::test]
async fn llama_cpp_empty_answer_to_prompt_means_wrong_dialect() {
    let (server, seen) = serve(scripted(Kind::LlamaCpp, true)).await;
    let ids = server.tokenize("hello world").await.unwrap().ok().unwrap();
    assert_eq!(ids[0], BOS);
    let seen = seen.lock().unwrap();
    let first: Value = serde_json::from_str(&seen[0].1).unwrap();
    let second: Value = serde_json::from_str(&seen[1].1).unwrap();
    assert!(first.get("prompt").is_some(), "{first}");
    assert_eq!(second["add_special"], true, "{second}");
    // Detected once: later calls go straight to `content`.
    assert!(seen[2..].iter().all(|(_, b)| b.contains("\"content\"")), "{seen:?}");
}

/// SGLang behind a gateway that forwards only `/v1/*`: `/tokenize` is 404, `/v1/tokenize` works.
#[tokio::test]
async fn a_v1_only_gateway_is_reached_at_v1_tokenize() {
    let tok = crate::common::cl100k();
    let (server, _) =
        serve(Scripted { kind: Kind::Sglang, tok: tok.clone(), bos: false, v1_only: true }).await;
    let mut w = crate::common::three_prompts(tok.as_ref());
    let v = crate::common::verify_held(&server, &mut w, 10).await.unwrap();
    assert_eq!(v, Verification::Verified { checked: 3 });
    assert_eq!(server.report().unwrap().tokenize_path, "/v1/tokenize");
}

/// A server that rejects every dialect (each with a multi-line pydantic error): one line naming
/// each dialect's answer; verification is skipped, not failed.
#[tokio::test]
async fn an_unusable_endpoint_is_a_one_line_warning() {
    let app = Router::new().fallback(|| async { json(StatusCode::BAD_REQUEST, GUIDELLM_400.into()) });
    let base = servebench_testkit::axum_server::serve(app).await;
    let base = format!("{base}/v1");
    let client = HttpClient::new(ClientOptions { base_url: base, ..ClientOptions::default() }).unwrap();
    let server = ServerTokenize::new(client, Default::default(), "m");
    let tok = crate::common::cl100k();
    let mut w = crate::common::three_prompts(tok.as_ref());
    let v = crate::common::verify_held(&server, &mut w, 10).await.unwrap();
    let Verification::Unavailable { detail } = v else { panic!("{v:?}") };
    let line = BenchError::TokenizeUnavailable { detail }.to_string();
    assert!(!line.contains('\n') && !line.contains("\\n"), "{line}");
    for d in ["`prompt`", "`content`", "`inputs`", "`text`"] {
        assert!(line.contains(d), "{line}");
    }
    // The base URL ends in /v1: /tokenize is at the server root, and the message names the
    // real path.
    assert!(line.contains("POST /tokenize answered HTTP 400: Invalid request: 1 validation error"), "{line}");
    assert!(!line.contains("/v1/v1"), "{line}");
}

/// A server that crashes (500) on bodies it does not know but understands `text`: the 500s are
/// not fatal while another dialect works; a server that 500s on everything is SB303.
#[tokio::test]
async fn a_500_on_one_dialect_is_not_fatal_when_another_works() {
    let tok = crate::common::cl100k();
    let t2 = tok.clone();
    let app = Router::new().fallback(move |body: String| {
        let tok = t2.clone();
        async move {
            let b: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            match b.get("text").and_then(Value::as_str) {
                Some(t) => json(
                    StatusCode::OK,
                    format!(r#"{{"tokens":{}}}"#, ids_json(&tok.encode(t, false).unwrap())),
                ),
                None => text(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error\n\nKeyError: 'text'"),
            }
        }
    });
    let base = servebench_testkit::axum_server::serve(app).await;
    let client = HttpClient::new(ClientOptions { base_url: base, ..ClientOptions::default() }).unwrap();
    let server = ServerTokenize::new(client, Default::default(), "m");
    let mut w = crate::common::three_prompts(tok.as_ref());
    let v = crate::common::verify_held(&server, &mut w, 10).await.unwrap();
    assert_eq!(v, Verification::Verified { checked: 3 });
    assert_eq!(server.report().unwrap().dialect, TokenizeDialect::Text);
}

/// A server that cannot be reached is the unreachable-server error (SB315, at once, naming the
/// host and port) with one fix, not "tokenize endpoint failing" (SB303) with a second "fix:".
#[tokio::test]
async fn an_unreachable_server_is_sb315_with_one_fix() {
    let port = servebench_testkit::net::closed_port();
    let client = HttpClient::new(ClientOptions {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        ..ClientOptions::default()
    })
    .unwrap();
    let server = ServerTokenize::new(client, Default::default(), "m");
    let tok = crate::common::cl100k();
    let mut w = crate::common::three_prompts(tok.as_ref());
    let e = crate::common::verify_held(&server, &mut w, 10).await.unwrap_err();
    let text = e.to_string();
    assert_eq!(e.code().as_str(), "SB315", "{text}");
    assert_eq!(text.matches("fix:").count(), 1, "{text}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
}
