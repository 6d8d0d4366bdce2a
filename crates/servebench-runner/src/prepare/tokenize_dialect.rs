//! The `/tokenize` and `/detokenize` dialects servers speak (docs/backends.md, "Server
//! tokenizer"): request bodies and the parsing of answers. Pure functions; the calls, the
//! detection and the retry policy are in `server_tokenize.rs`.
//!
//! | dialect | `/tokenize` body | answer | `/detokenize` answer | servers |
//! |---|---|---|---|---|
//! | `prompt` | `{"model", "prompt"}` | `{"tokens": [ids], "count", …}` | `{"prompt"}` / `{"text"}` | vLLM, SGLang |
//! | `content` | `{"content", "add_special": true}` | `{"tokens": [ids]}` | `{"content"}` | llama.cpp |
//! | `inputs` | `{"inputs"}` | `[{"id", "text", "start", "stop"}, …]` | none | TGI |
//! | `text` | `{"model", "text"}` | `{"tokens": [ids], "count"}` | `{"text"}` | GuideLLM's mock |

use serde::Serialize;
use serde_json::{json, Value};

/// How a server's `/tokenize` wants its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenizeDialect {
    /// `{"prompt": ...}`: vLLM, SGLang.
    Prompt,
    /// `{"content": ...}`: llama.cpp's `llama-server`.
    Content,
    /// `{"inputs": ...}`: Hugging Face TGI.
    Inputs,
    /// `{"text": ...}`: GuideLLM's mock server and other small servers.
    Text,
}

impl TokenizeDialect {
    /// The order dialects are tried in: the most common servers first.
    pub const ALL: [TokenizeDialect; 4] =
        [TokenizeDialect::Prompt, TokenizeDialect::Content, TokenizeDialect::Inputs, TokenizeDialect::Text];

    /// The name in messages and the result JSON: the field that carries the text.
    pub fn name(self) -> &'static str {
        match self {
            TokenizeDialect::Prompt => "prompt",
            TokenizeDialect::Content => "content",
            TokenizeDialect::Inputs => "inputs",
            TokenizeDialect::Text => "text",
        }
    }

    /// Servers known to speak it.
    pub fn servers(self) -> &'static str {
        match self {
            TokenizeDialect::Prompt => "vLLM/SGLang",
            TokenizeDialect::Content => "llama.cpp",
            TokenizeDialect::Inputs => "TGI",
            TokenizeDialect::Text => "GuideLLM mock",
        }
    }

    /// Whether servers of this dialect have a `/detokenize` (TGI has none).
    pub fn has_detokenize(self) -> bool {
        self != TokenizeDialect::Inputs
    }

    /// The `/tokenize` body for `text`. Special tokens (BOS) are counted as the server adds
    /// them to a completion prompt: vLLM's default, llama.cpp's `add_special`.
    pub fn tokenize_body(self, model: &str, text: &str) -> Value {
        match self {
            TokenizeDialect::Prompt => json!({"model": model, "prompt": text}),
            TokenizeDialect::Content => json!({"content": text, "add_special": true}),
            TokenizeDialect::Inputs => json!({"inputs": text}),
            TokenizeDialect::Text => json!({"model": model, "text": text}),
        }
    }

    /// The `/detokenize` body for `ids` (the same in every dialect that has one; llama.cpp
    /// ignores `model`).
    pub fn detokenize_body(self, model: &str, ids: &[u32]) -> Value {
        json!({"model": model, "tokens": ids})
    }
}

/// One token of an answer: an id, or an object with an `id` (TGI, llama.cpp `with_pieces`).
fn token_id(v: &Value) -> Option<u32> {
    let n = match v {
        Value::Object(o) => o.get("id")?.as_u64()?,
        other => other.as_u64()?,
    };
    u32::try_from(n).ok()
}

fn ids_of(list: &[Value]) -> Result<Vec<u32>, String> {
    list.iter().map(|v| token_id(v).ok_or_else(|| "a token that is not an id".to_owned())).collect()
}

/// The token ids of a `/tokenize` answer in any dialect: `{"tokens": [...], "count"?}` or a
/// top-level list (TGI). `Err` names what is wrong with the shape.
pub fn parse_tokens(body: &[u8]) -> Result<Vec<u32>, String> {
    let v: Value = serde_json::from_slice(body).map_err(|_| "a body that is not JSON".to_owned())?;
    match &v {
        // TGI: a list of token objects (a bare list of numbers is no known dialect).
        Value::Array(list) if list.iter().all(Value::is_object) => ids_of(list),
        Value::Object(o) => {
            let Some(Value::Array(list)) = o.get("tokens") else {
                return Err("a body without a `tokens` list".into());
            };
            let ids = ids_of(list)?;
            match o.get("count").and_then(Value::as_u64) {
                Some(c) if c != ids.len() as u64 => Err("a `count` that disagrees with its `tokens`".into()),
                _ => Ok(ids),
            }
        }
        _ => Err("a body of another shape".into()),
    }
}

/// The text of a `/detokenize` answer: `prompt` (vLLM), `text` (SGLang, GuideLLM's mock) or
/// `content` (llama.cpp).
pub fn parse_text(body: &[u8]) -> Result<String, String> {
    let v: Value = serde_json::from_slice(body).map_err(|_| "a body that is not JSON".to_owned())?;
    ["prompt", "text", "content"]
        .iter()
        .find_map(|k| v.get(k).and_then(Value::as_str))
        .map(str::to_owned)
        .ok_or_else(|| "a body without `prompt`, `text` or `content`".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_of_every_dialect_parse() {
        // vLLM 0.x
        assert_eq!(
            parse_tokens(br#"{"count":3,"max_model_len":4096,"tokens":[1,2,3],"token_strs":null}"#),
            Ok(vec![1, 2, 3])
        );
        // llama.cpp, plain and with pieces
        assert_eq!(parse_tokens(br#"{"tokens":[1,15043,3186]}"#), Ok(vec![1, 15043, 3186]));
        assert_eq!(
            parse_tokens(br#"{"tokens":[{"id":1,"piece":"<s>"},{"id":7,"piece":" a"}]}"#),
            Ok(vec![1, 7])
        );
        // TGI
        assert_eq!(
            parse_tokens(br#"[{"id":9906,"text":"Hello","start":0,"stop":5},{"id":1917,"text":" world","start":5,"stop":11}]"#),
            Ok(vec![9906, 1917])
        );
        // Another shape
        assert!(parse_tokens(br#"{"ids":[1]}"#).is_err());
        assert!(parse_tokens(br#"{"tokens":[1],"count":2}"#).is_err());
        assert!(parse_tokens(br#"{"tokens":["a"]}"#).is_err());
        assert!(parse_tokens(b"<html>").is_err());
        assert_eq!(parse_tokens(br#"{"tokens":[]}"#), Ok(vec![]));
        assert_eq!(parse_text(br#"{"prompt":"a b"}"#).as_deref(), Ok("a b"));
        assert_eq!(parse_text(br#"{"text":"a"}"#).as_deref(), Ok("a"));
        assert_eq!(parse_text(br#"{"content":" x"}"#).as_deref(), Ok(" x"));
        assert!(parse_text(br#"{"ids":[]}"#).is_err());
    }

    #[test]
    fn bodies_name_the_dialects_field() {
        for d in TokenizeDialect::ALL {
            let b = d.tokenize_body("m", "hi");
            assert_eq!(b[d.name()], "hi", "{d:?}");
        }
        assert_eq!(TokenizeDialect::Content.tokenize_body("m", "x")["add_special"], true);
        assert!(!TokenizeDialect::Inputs.has_detokenize());
        assert_eq!(serde_json::to_value(TokenizeDialect::Content).unwrap(), "content");
    }
}
