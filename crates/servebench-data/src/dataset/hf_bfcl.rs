//! vLLM's BFCL parser (gorilla-llm/Berkeley-Function-Calling-Leaderboard, vLLM 0.33): tool-calling
//! chat requests. The dataset repo holds one JSON Lines file per category at its root,
//! `BFCL_v3_<category>.json`, each row `{"id", "question", "function"}`. As vLLM:
//!
//! - the categories are `--bfcl-categories` (comma-separated names without the `BFCL_v3_`
//!   prefix and `.json` suffix), default `simple,live_simple,multiple`; a category without its
//!   file is an error naming the defaults;
//! - the rows of the categories are interleaved round-robin, then shuffled (seeded, unless
//!   `--disable-shuffle`);
//! - a row is skipped when `question` or `function` is empty, or the first turn of `question`
//!   (a list of turns, each a list of messages) is not a non-empty list;
//! - the request's chat `messages` are that first turn as it is; the functions (one object or a
//!   list) become OpenAI tools `{"type": "function", "function": F}` whose JSON-schema `type`
//!   names BFCL spells its own way are mapped (`dict` → `object`, `float` → `number`, `tuple` →
//!   `array`, `any` → `string`, at any depth); the body gets `tools` and `tool_choice: "auto"`
//!   (replacing `--extra-body` fields of those names);
//! - the output length is 512, or `--hf-output-len` / `--output-len`.
//!
//! `prompt_tokens` is, as vLLM counts it, the token count of the tokenizer's chat template
//! rendered over the messages with `tools` and `add_generation_prompt`
//! ([`super::chat_render`]); when the tokenizer has no template or it fails to render (vLLM
//! catches the exception), the messages' `content` joined by newlines. Needs
//! `--backend openai-chat`, as in vLLM.

use super::file::{parse_json_lines, DataFile, Location};
use super::{collect_samples, finish, shuffle_source, Sample, Sampling};
use crate::tokenizer::HubEnv;
use serde_json::{Map, Value};
use servebench_core::{BenchError, BodyOverrides, ChatMessages, ChatRender, Result, TextTokenizer, Workload};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// vLLM's default categories.
pub const DEFAULT_CATEGORIES: [&str; 3] = ["simple", "live_simple", "multiple"];

/// vLLM's default output length of BFCL requests.
pub const DEFAULT_OUTPUT_LEN: usize = 512;

/// The dataset id vLLM reads with this parser.
pub const DATASET_ID: &str = "gorilla-llm/Berkeley-Function-Calling-Leaderboard";

/// Where the category files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BfclSource {
    /// A local directory holding `BFCL_v3_<category>.json` files (a snapshot of the repo).
    Dir(PathBuf),
    /// The Hub repo (the Hugging Face cache first, then a download).
    Hub,
}

/// The file name of a category.
pub fn category_file(category: &str) -> String {
    format!("BFCL_v3_{category}.json")
}

/// `schema` with BFCL's type names mapped to JSON Schema's, at any depth.
pub fn translate_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => {
            let mut out: Map<String, Value> =
                m.iter().map(|(k, v)| (k.clone(), translate_schema(v))).collect();
            if let Some(Value::String(t)) = out.get("type") {
                let mapped = match t.as_str() {
                    "dict" => Some("object"),
                    "float" => Some("number"),
                    "tuple" => Some("array"),
                    "any" => Some("string"),
                    _ => None,
                };
                if let Some(m) = mapped {
                    out.insert("type".into(), Value::from(m));
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(translate_schema).collect()),
        other => other.clone(),
    }
}

/// The request of one row: its messages, their text, and its tools; None when vLLM skips it.
fn request_of(row: &Value) -> Option<(Vec<Value>, String, Value)> {
    let question = row.get("question").filter(|q| !is_empty(q))?;
    let functions = row.get("function").filter(|f| !is_empty(f))?;
    let first_turn = question.as_array()?.first()?.as_array().filter(|t| !t.is_empty())?;
    let functions = match functions {
        Value::Array(a) => a.clone(),
        one => vec![one.clone()],
    };
    let tools: Vec<Value> = functions
        .iter()
        .map(|f| serde_json::json!({"type": "function", "function": translate_schema(f)}))
        .collect();
    let text = first_turn
        .iter()
        .map(|m| m.get("content").and_then(Value::as_str).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    Some((first_turn.clone(), text, Value::Array(tools)))
}

/// Python's truthiness of a JSON value, as vLLM tests `not question`.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
    }
}

fn category_path(source: &BfclSource, category: &str, env: &HubEnv) -> Result<PathBuf> {
    let name = category_file(category);
    match source {
        BfclSource::Dir(dir) => {
            let p = dir.join(&name);
            if p.is_file() {
                return Ok(p);
            }
            Err(DataFile::new(dir).error(
                Location::File,
                format!("BFCL category '{category}' not found: no file '{name}' in the directory"),
                format!("check --bfcl-categories (defaults: {})", DEFAULT_CATEGORIES.join(", ")),
            ))
        }
        BfclSource::Hub => super::hub::dataset_file(DATASET_ID, &name, env),
    }
}

/// Builds the BFCL workload.
pub fn generate(
    source: &BfclSource,
    categories: &[String],
    output_len: Option<usize>,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
    env: &HubEnv,
) -> Result<Workload> {
    let categories: Vec<String> = if categories.iter().all(|c| c.trim().is_empty()) {
        DEFAULT_CATEGORIES.iter().map(|c| c.to_string()).collect()
    } else {
        categories.iter().map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect()
    };
    let mut per_category: Vec<(DataFile, Vec<(Location, Value)>)> = Vec::new();
    for c in &categories {
        let path = category_path(source, c, env)?;
        let file = DataFile::new(&path);
        let text = file.read_text()?;
        let rows: Vec<(Location, Value)> = parse_json_lines(&file, &text)?;
        per_category.push((file, rows));
    }
    let longest = per_category.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    let mut rows: Vec<&Value> = Vec::new();
    for i in 0..longest {
        for (_, r) in &per_category {
            if let Some((_, row)) = r.get(i) {
                rows.push(row);
            }
        }
    }
    shuffle_source(&mut rows, sampling);
    let output = output_len.unwrap_or(DEFAULT_OUTPUT_LEN);
    let samples = collect_samples(&rows, sampling.num_prompts, |row| {
        let Some((messages, text, tools)) = request_of(row) else { return Ok(None) };
        let rendered = tok.chat_template().and_then(|t| {
            let opts = ChatRender { add_generation_prompt: true, tools: Some(&tools), kwargs: None };
            t.render(&Value::Array(messages.clone()), &opts).ok()
        });
        let prompt_len = tok.encode(rendered.as_deref().unwrap_or(&text), true)?.len();
        let json =
            serde_json::to_string(&messages).map_err(|e| BenchError::dataset_from("BFCL messages", e))?;
        let tools = serde_json::to_string(&tools).map_err(|e| BenchError::dataset_from("BFCL tools", e))?;
        let prompt = messages.last().and_then(|m| m.get("content")).and_then(Value::as_str).unwrap_or("");
        let mut s = Sample::text(prompt, prompt_len, output);
        s.messages = Some(ChatMessages { json: Arc::from(json), media_items: 0 });
        s.overrides = Some(Arc::new(BodyOverrides::new(vec![
            ("tools".into(), tools),
            ("tool_choice".into(), "\"auto\"".into()),
        ])));
        Ok(Some(s))
    })?;
    if samples.is_empty() {
        let names: Vec<String> = per_category.iter().map(|(f, _)| f.path.display().to_string()).collect();
        return Err(BenchError::Dataset {
            detail: format!(
                "no BFCL row has a question and functions ({}); fix: pass the category files of the \
                 Berkeley-Function-Calling-Leaderboard repo",
                names.join(", ")
            ),
            source: None,
        });
    }
    Ok(finish(samples, sampling))
}

/// The directory of a local BFCL snapshot: `path` itself, or the directory of a file in it.
pub fn local_dir(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bfcl_types_are_mapped_to_json_schema_at_any_depth() {
        let f = json!({"name": "f", "parameters": {"type": "dict", "properties": {
            "x": {"type": "float"}, "p": {"type": "tuple", "items": {"type": "any"}}, "n": {"type": "integer"}}}});
        let t = translate_schema(&f);
        assert_eq!(t["parameters"]["type"], "object");
        assert_eq!(t["parameters"]["properties"]["x"]["type"], "number");
        assert_eq!(t["parameters"]["properties"]["p"]["type"], "array");
        assert_eq!(t["parameters"]["properties"]["p"]["items"]["type"], "string");
        assert_eq!(t["parameters"]["properties"]["n"]["type"], "integer");
        assert_eq!(t["name"], "f");
    }

    #[test]
    fn rows_without_a_first_turn_or_functions_are_skipped_as_vllm_does() {
        let ok = json!({"question": [[{"role": "user", "content": "hi"}]], "function": {"name": "f"}});
        let (m, text, tools) = request_of(&ok).unwrap();
        assert_eq!((m.len(), text.as_str()), (1, "hi"));
        assert_eq!(tools, json!([{"type": "function", "function": {"name": "f"}}]));
        for bad in [
            json!({"question": [], "function": [{"name": "f"}]}),
            json!({"question": [[]], "function": [{"name": "f"}]}),
            json!({"question": [[{"role": "user", "content": "hi"}]], "function": []}),
            json!({"question": "text", "function": [{"name": "f"}]}),
        ] {
            assert!(request_of(&bad).is_none(), "{bad}");
        }
    }
}
