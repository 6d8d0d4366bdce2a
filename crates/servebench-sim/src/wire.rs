//! Personality-dependent bodies outside the token streams: error bodies, unknown routes, the
//! model list, `/tokenize` and `/detokenize` dialects and `/metrics` names.

use bytes::Bytes;
use serde_json::{json, Value};

use crate::personality::{ErrorStyle, ModelsShape, TokenizeDialect};
use crate::protocol::ApiError;

/// The status and JSON body of an error in the personality's shape.
pub(crate) fn error_body(style: ErrorStyle, e: &ApiError) -> (u16, Bytes) {
    let v = match style {
        ErrorStyle::Vllm => return (e.status, e.body()),
        ErrorStyle::Sglang => json!({
            "object": "error", "message": e.message, "type": e.kind, "param": null, "code": e.status
        }),
        ErrorStyle::LlamaCpp => {
            let kind = match e.status {
                404 => "not_found_error",
                401 => "authentication_error",
                501 => "not_supported_error",
                503 => "unavailable_error",
                s if s >= 500 => "server_error",
                _ => "invalid_request_error",
            };
            json!({"error": {"code": e.status, "message": e.message, "type": kind}})
        }
        ErrorStyle::Tgi => {
            // TGI answers a request it cannot validate with 422 and `error_type: validation`.
            let (status, kind) = match e.status {
                400 => (422, "validation"),
                413 => (413, "validation"),
                429 => (429, "overloaded"),
                s if s >= 500 => (s, "generation"),
                s => (s, "validation"),
            };
            return (status, Bytes::from(json!({"error": e.message, "error_type": kind}).to_string()));
        }
        ErrorStyle::OpenAi => {
            let code = if e.status == 404 { json!("model_not_found") } else { Value::Null };
            json!({"error": {"message": e.message, "type": "invalid_request_error", "param": null, "code": code}})
        }
    };
    (e.status, Bytes::from(v.to_string()))
}

/// The body of a 404 for a route the personality does not serve (`None`: empty body), and its
/// content type.
pub(crate) fn not_found(style: ErrorStyle, method: &str, path: &str) -> Option<(&'static str, Bytes)> {
    const JSON: &str = "application/json";
    match style {
        ErrorStyle::Vllm | ErrorStyle::Sglang => {
            Some((JSON, Bytes::from_static(b"{\"detail\":\"Not Found\"}")))
        }
        ErrorStyle::LlamaCpp => Some((
            JSON,
            Bytes::from_static(
                b"{\"error\":{\"code\":404,\"message\":\"File Not Found\",\"type\":\"not_found_error\"}}",
            ),
        )),
        ErrorStyle::Tgi => None,
        ErrorStyle::OpenAi => {
            let msg = format!("Invalid URL ({method} {path})");
            let v = json!({"error": {"message": msg, "type": "invalid_request_error", "param": null, "code": null}});
            Some((JSON, Bytes::from(v.to_string())))
        }
    }
}

/// `GET /v1/models` for the shapes other than vLLM's (`response::models_body`).
pub(crate) fn models_body(
    shape: ModelsShape,
    names: &[&str],
    created: u64,
    max_model_len: u32,
    n_vocab: u32,
) -> Bytes {
    let cards: Vec<Value> = names
        .iter()
        .map(|id| match shape {
            ModelsShape::Sglang => json!({
                "id": id, "object": "model", "created": created, "owned_by": "sglang", "root": id,
                "max_model_len": max_model_len
            }),
            ModelsShape::LlamaCpp => json!({
                "id": id, "object": "model", "created": created, "owned_by": "llamacpp",
                "meta": {"vocab_type": 2, "n_vocab": n_vocab, "n_ctx_train": max_model_len}
            }),
            ModelsShape::OpenAi | ModelsShape::Vllm => {
                json!({"id": id, "object": "model", "created": created, "owned_by": "system"})
            }
        })
        .collect();
    let v = if shape == ModelsShape::LlamaCpp {
        let models: Vec<Value> = names
            .iter()
            .map(|id| json!({"name": id, "model": id, "type": "model", "capabilities": ["completion"]}))
            .collect();
        json!({"models": models, "object": "list", "data": cards})
    } else {
        json!({"object": "list", "data": cards})
    };
    Bytes::from(v.to_string())
}

/// A parsed `/tokenize` request of any dialect.
pub(crate) enum TokenizeInput {
    /// Text to encode with special tokens or not.
    Text(String, bool),
    /// The dialect's field was missing: llama.cpp answers an empty list.
    Empty,
}

/// Reads the text of a `/tokenize` body in the llama.cpp, TGI or text dialect. `Err` carries
/// the status and body of the refusal (the text dialect's multi-line pydantic message).
pub(crate) fn tokenize_input(dialect: TokenizeDialect, body: &[u8]) -> Result<TokenizeInput, ApiError> {
    let v: Value = crate::protocol::parse_json(body)?;
    let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match dialect {
        TokenizeDialect::Content => Ok(match field("content") {
            Some(t) => TokenizeInput::Text(t, v.get("add_special").and_then(Value::as_bool).unwrap_or(false)),
            None => TokenizeInput::Empty,
        }),
        TokenizeDialect::Inputs => match field("inputs") {
            Some(t) => Ok(TokenizeInput::Text(t, v.get("add_special_tokens").and_then(Value::as_bool).unwrap_or(true))),
            None => Err(ApiError::bad_request("Failed to deserialize the JSON body into the target type: missing field `inputs`")),
        },
        TokenizeDialect::Text => match field("text") {
            Some(t) => Ok(TokenizeInput::Text(t, true)),
            None => Err(ApiError {
                status: 400,
                kind: "ValidationError",
                message: format!(
                    "1 validation error for TokenizeRequest\ntext\n  Field required [type=missing, input_value={}, input_type=dict]\n    For further information visit https://errors.pydantic.dev/2.11/v/missing",
                    short(&v.to_string())
                ),
            }),
        },
        TokenizeDialect::Prompt | TokenizeDialect::None => Err(ApiError::bad_request("unsupported tokenize dialect")),
    }
}

/// The `/tokenize` answer of the llama.cpp, TGI or text dialect for `ids` (`pieces`: the text
/// of each token, for TGI's offsets and llama.cpp's `with_pieces`).
pub(crate) fn tokenize_answer(
    dialect: TokenizeDialect,
    ids: &[u32],
    pieces: &[String],
    with_pieces: bool,
) -> Bytes {
    let v = match dialect {
        TokenizeDialect::Inputs => {
            let mut start = 0usize;
            let items: Vec<Value> = ids
                .iter()
                .zip(pieces)
                .map(|(id, text)| {
                    let stop = start + text.chars().count();
                    let item = json!({"id": id, "text": text, "start": start, "stop": stop});
                    start = stop;
                    item
                })
                .collect();
            Value::Array(items)
        }
        TokenizeDialect::Content if with_pieces => {
            let items: Vec<Value> =
                ids.iter().zip(pieces).map(|(id, p)| json!({"id": id, "piece": p})).collect();
            json!({"tokens": items})
        }
        _ => json!({"tokens": ids}),
    };
    Bytes::from(v.to_string())
}

/// At most 80 characters of `s` (pydantic shortens `input_value` the same way).
fn short(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_bodies_are_read_in_each_servers_dialect() {
        let Ok(TokenizeInput::Empty) = tokenize_input(TokenizeDialect::Content, br#"{"prompt":"hi"}"#) else {
            panic!("llama.cpp answers a prompt body with an empty list")
        };
        let e = tokenize_input(TokenizeDialect::Text, br#"{"prompt":"hi"}"#).err().unwrap();
        assert_eq!(e.status, 400);
        assert!(e.message.lines().count() >= 3, "{}", e.message);
        assert!(tokenize_input(TokenizeDialect::Inputs, br#"{"prompt":"hi"}"#).is_err());
        let pieces = ["He".to_string(), "llo".to_string()];
        let v: Value =
            serde_json::from_slice(&tokenize_answer(TokenizeDialect::Inputs, &[7, 8], &pieces, false))
                .unwrap();
        assert_eq!(v[1], json!({"id": 8, "text": "llo", "start": 2, "stop": 5}));
        let v: Value =
            serde_json::from_slice(&tokenize_answer(TokenizeDialect::Content, &[7], &pieces, true)).unwrap();
        assert_eq!(v["tokens"][0]["piece"], "He");
    }

    #[test]
    fn each_personality_writes_errors_in_its_servers_shape_and_status() {
        let e = ApiError::bad_request("bad");
        let (s, b) = error_body(ErrorStyle::Tgi, &e);
        assert_eq!(s, 422);
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v, json!({"error": "bad", "error_type": "validation"}));
        let (_, b) = error_body(ErrorStyle::LlamaCpp, &e);
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["error"]["type"], "invalid_request_error");
        let (_, b) = error_body(ErrorStyle::Sglang, &e);
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["object"], "error");
    }
}
