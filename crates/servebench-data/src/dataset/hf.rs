//! The `hf` dataset: rows of any Hugging Face dataset — a local file (JSON array, JSON Lines
//! or Parquet) or a Hub dataset fetched through the datasets-server API (cached locally).
//! The prompt column is detected on the first row (or named with `--hf-text-column`):
//! chat columns `conversation`/`conversations`/`messages` (first user message is the prompt,
//! first assistant message the completion), `turns` (first string), `context` + `input`
//! joined by a blank line, then the first of `prompt, question, problem, input, text, content,
//! instruction`. The output length is `--hf-output-len`, else the tokenized completion
//! (`completion, response, answer, output, solution, answers`), else 128. Prompts under 4
//! tokens are skipped, as vLLM does.

use super::file::{read_records, DataFile, Location};
use super::{collect_samples, finish, hf_chat, hf_parsers, hf_text, hub, shuffle_source, Sample, Sampling};
use crate::tokenizer::HubEnv;
use serde_json::Value;
use servebench_core::{BenchError, Result, TextTokenizer, Workload};
use std::path::PathBuf;

/// Output length when neither `--hf-output-len` nor a completion column gives one.
pub const DEFAULT_OUTPUT_LEN: usize = 128;
/// Prompts shorter than this (tokens) are skipped.
pub const MIN_PROMPT_LEN: usize = 4;

const CHAT_COLUMNS: [&str; 3] = ["conversation", "conversations", "messages"];
const TEXT_COLUMNS: [&str; 7] = ["prompt", "question", "problem", "input", "text", "content", "instruction"];
const OUTPUT_COLUMNS: [&str; 6] = ["completion", "response", "answer", "output", "solution", "answers"];

/// Where the rows come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HfSource {
    /// A local JSON / JSONL / Parquet file.
    File(PathBuf),
    /// A Hub dataset id, with `--hf-subset` (config) and `--hf-split`. `whole_split`
    /// (`--no-stream`) downloads every row of the split before shuffling, as vLLM's non-streaming
    /// `load_dataset` does; otherwise only the first `--num-prompts` rows are fetched (vLLM's
    /// default streaming mode reads the split in order).
    Hub { dataset: String, subset: Option<String>, split: Option<String>, whole_split: bool },
}

/// Options of the hf dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct HfConfig {
    pub source: HfSource,
    /// `--hf-text-column`.
    pub text_column: Option<String>,
    /// `--hf-output-len` (also `--output-len`).
    pub output_len: Option<usize>,
    /// Dataset ids that select one of vLLM's dataset-specific parsers (`--dataset-path`, then
    /// `--hf-name`); see [`super::hf_parsers`].
    pub dataset_ids: Vec<String>,
    /// Options of vLLM's chat-template parsers (`--skip-chat-template`, `--blazedit-*`).
    pub chat: hf_chat::ChatParserOptions,
    /// `--bfcl-categories` of the BFCL parser (empty: vLLM's defaults).
    pub bfcl_categories: Vec<String>,
    /// Options of the ASR parser (`--asr-*-audio-len-sec`, the tokenizer's name).
    pub asr: super::hf_asr::AsrOptions,
}

/// How a row's prompt and completion are found (decided on the first row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Columns {
    Chat(String),
    Turns,
    ContextInput,
    Text { prompt: String, output: Option<String> },
}

/// Detects the columns from the first row.
pub fn detect_columns(row: &Value, text_column: Option<&str>) -> std::result::Result<Columns, String> {
    let obj = row.as_object().ok_or("rows must be JSON objects")?;
    let output = OUTPUT_COLUMNS.iter().find(|c| obj.contains_key(**c)).map(|c| c.to_string());
    if let Some(col) = text_column {
        if !obj.contains_key(col) {
            return Err(format!("--hf-text-column '{col}' is not a column (columns: {})", names(obj)));
        }
        if obj[col].is_array() {
            return Ok(Columns::Chat(col.to_string()));
        }
        return Ok(Columns::Text { prompt: col.to_string(), output });
    }
    if let Some(c) = CHAT_COLUMNS.iter().find(|c| obj.get(**c).is_some_and(Value::is_array)) {
        return Ok(Columns::Chat(c.to_string()));
    }
    if obj.get("turns").is_some_and(Value::is_array) {
        return Ok(Columns::Turns);
    }
    if obj.contains_key("context") && obj.contains_key("input") {
        return Ok(Columns::ContextInput);
    }
    if let Some(c) = TEXT_COLUMNS.iter().find(|c| obj.contains_key(**c)) {
        return Ok(Columns::Text { prompt: c.to_string(), output });
    }
    Err(format!("no prompt column found (columns: {})", names(obj)))
}

fn names(obj: &serde_json::Map<String, Value>) -> String {
    obj.keys().cloned().collect::<Vec<_>>().join(", ")
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => a.first().and_then(as_text),
        _ => None,
    }
}

/// The text of a chat message's content: a string, a list of strings (the first, as before), or
/// a list of OpenAI content parts, whose `text` parts are joined with a line break as vLLM joins
/// them (`[{"type": "text", "text": "…"}]` used to read as "has no user/human message").
fn content_text(v: &Value) -> std::result::Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) if parts.first().is_some_and(Value::is_string) => {
            Ok(parts.first().and_then(Value::as_str).unwrap_or_default().to_string())
        }
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .map(|p| p.get("text").and_then(Value::as_str).ok_or("a text part has no string \"text\""))
                .collect::<std::result::Result<_, _>>()?;
            if texts.is_empty() {
                return Err("its content parts hold no text part".to_string());
            }
            Ok(texts.join("\n"))
        }
        other => Err(format!("its content is {}, not text", kind(other))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The text of the first message whose role is one of `roles` (`{role, content}` or `{from,
/// value}`) and that has text: a message without (an assistant's tool call, `content: null`;
/// a user message of image parts only) is passed over for the next one. `Err` naming the first
/// such message when none of the role has text; `None` without a message of the role.
fn chat_message(messages: &[Value], roles: &[&str]) -> Option<std::result::Result<String, String>> {
    let mut first_problem: Option<String> = None;
    for m in messages {
        let Some(role) = m.get("role").or_else(|| m.get("from")).and_then(Value::as_str) else { continue };
        if !roles.contains(&role) {
            continue;
        }
        let text = m
            .get("content")
            .or_else(|| m.get("value"))
            .ok_or_else(|| "it has no content".to_string())
            .and_then(content_text);
        match text {
            Ok(t) => return Some(Ok(t)),
            Err(why) => {
                first_problem.get_or_insert(format!("the {role} message: {why}"));
            }
        }
    }
    first_problem.map(Err)
}

/// The prompt and optional completion of one row.
pub fn extract(row: &Value, cols: &Columns) -> std::result::Result<(String, Option<String>), String> {
    let get = |c: &str| row.get(c).ok_or_else(|| format!("column '{c}' is missing"));
    match cols {
        Columns::Chat(c) => {
            let msgs = get(c)?.as_array().ok_or_else(|| format!("column '{c}' is not a list of messages"))?;
            let prompt = chat_message(msgs, &["user", "human"])
                .ok_or_else(|| format!("column '{c}' has no user/human message"))?
                .map_err(|why| format!("column '{c}', {why}"))?;
            // The reply only sets the output length: a row whose assistant messages carry no
            // text (tool calls only) has none, as a row without one.
            let reply = chat_message(msgs, &["assistant", "gpt"]).and_then(Result::ok);
            Ok((prompt, reply))
        }
        Columns::Turns => {
            let t = get("turns")?;
            Ok((as_text(t).ok_or("column 'turns' has no text")?, None))
        }
        Columns::ContextInput => {
            let ctx = as_text(get("context")?).ok_or("column 'context' is not text")?;
            let input = as_text(get("input")?).ok_or("column 'input' is not text")?;
            Ok((format!("{ctx}\n\n{input}"), None))
        }
        Columns::Text { prompt, output } => {
            let p = as_text(get(prompt)?).ok_or_else(|| format!("column '{prompt}' is not text"))?;
            Ok((p, output.as_ref().and_then(|o| row.get(o)).and_then(as_text)))
        }
    }
}

/// Rows of the source, each with its location (Hub rows are numbered as rows).
fn load_rows(cfg: &HfConfig, needed: usize, env: &HubEnv) -> Result<(DataFile, Vec<(Location, Value)>)> {
    match &cfg.source {
        HfSource::File(p) => {
            let file = DataFile::new(p);
            let rows = read_records(&file)?;
            Ok((file, rows))
        }
        HfSource::Hub { dataset, subset, split, whole_split } => {
            let req = hub::RowsRequest {
                dataset,
                config: subset.as_deref(),
                split: split.as_deref(),
                rows: if *whole_split { usize::MAX } else { needed },
            };
            let rows = hub::fetch_rows(&req, env)?;
            let file = DataFile::new(format!("hf://{dataset}"));
            Ok((file, rows.into_iter().enumerate().map(|(i, r)| (Location::Row(i), r)).collect()))
        }
    }
}

/// The config with the Hub split vLLM forces for `parser` (AIMO: train, and no subset).
fn with_split(cfg: &HfConfig, parser: hf_parsers::HfParser) -> HfConfig {
    let mut cfg = cfg.clone();
    if let (HfSource::Hub { subset, split, .. }, Some(forced)) = (&mut cfg.source, parser.forced_split()) {
        *split = Some(forced.to_string());
        // vLLM drops --hf-subset for these.
        if matches!(
            parser,
            hf_parsers::HfParser::Aimo
                | hf_parsers::HfParser::VisionArena
                | hf_parsers::HfParser::MmStar
                | hf_parsers::HfParser::Mmvu
        ) {
            *subset = None;
        }
        // vLLM reads GSM8K's `main` configuration unless --hf-subset names another.
        if parser == hf_parsers::HfParser::Gsm8k && subset.is_none() {
            *subset = Some("main".into());
        }
    }
    cfg
}

/// Builds the hf workload.
pub fn generate_hf(
    cfg: &HfConfig,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
    env: &HubEnv,
) -> Result<Workload> {
    if let Some((id, parser)) = hf_parsers::resolve(&cfg.dataset_ids)? {
        if cfg.text_column.is_some() {
            return Err(BenchError::not_applicable(
                "--hf-text-column",
                "the generic hf loader",
                format!("vLLM reads '{id}' with its {} parser, whose columns are fixed", parser.name()),
                "drop --hf-text-column",
            ));
        }
        if parser == hf_parsers::HfParser::Bfcl {
            let source = match &cfg.source {
                HfSource::File(p) => super::hf_bfcl::BfclSource::Dir(super::hf_bfcl::local_dir(p)),
                HfSource::Hub { .. } => super::hf_bfcl::BfclSource::Hub,
            };
            return super::hf_bfcl::generate(
                &source,
                &cfg.bfcl_categories,
                cfg.output_len,
                sampling,
                tok,
                env,
            );
        }
        if parser == hf_parsers::HfParser::MlPerf {
            super::chat_render::require_template(tok, || format!("the MLPerfDataset parser of '{id}'"))?;
            let (file, rows) = load_rows(&with_split(cfg, parser), sampling.num_prompts, env)?;
            return super::hf_mlperf::generate(&file, rows, cfg.output_len, &cfg.chat, sampling, tok);
        }
        if parser == hf_parsers::HfParser::Asr {
            let (file, rows) = load_rows(&with_split(cfg, parser), sampling.num_prompts, env)?;
            return super::hf_asr::generate(&file, rows, cfg.output_len, &cfg.asr, sampling, tok);
        }
        if super::hf_image::is_image_parser(parser) {
            let (file, rows) = load_rows(&with_split(cfg, parser), sampling.num_prompts, env)?;
            let local_root = match &cfg.source {
                HfSource::File(p) => p.parent().map(std::path::Path::to_path_buf),
                HfSource::Hub { .. } => None,
            };
            let reader = super::hf_image::Reader { parser, id: &id, local_root: local_root.as_deref() };
            return super::hf_image::generate(reader, &file, rows, cfg.output_len, sampling, tok);
        }
        if hf_chat::default_output_len(parser).is_some() {
            hf_chat::check_template(&id, parser, &cfg.chat, tok)?;
            let (file, rows) = load_rows(&with_split(cfg, parser), sampling.num_prompts, env)?;
            return hf_chat::generate(parser, &file, rows, cfg.output_len, &cfg.chat, sampling, tok);
        }
        if parser == hf_parsers::HfParser::NextEditPrediction && cfg.output_len.is_some() {
            return Err(BenchError::not_applicable(
                "--hf-output-len/--output-len",
                "parsers with a settable output length",
                format!(
                    "vLLM's {} always takes it from the row's output (it ignores the flag)",
                    parser.name()
                ),
                "drop the flag",
            ));
        }
        let (file, rows) = load_rows(&with_split(cfg, parser), sampling.num_prompts, env)?;
        return hf_text::generate(parser, &file, rows, cfg.output_len, sampling, tok);
    }
    let (file, mut rows) = load_rows(cfg, sampling.num_prompts, env)?;
    let Some((first_at, first)) = rows.first() else {
        return Err(file.error(Location::File, "no rows", "pass a dataset with rows"));
    };
    let cols = detect_columns(first, cfg.text_column.as_deref())
        .map_err(|p| file.error(*first_at, p, "name the prompt column with --hf-text-column"))?;
    // Every row must fit the detected layout: report the first that does not.
    for (at, row) in &rows {
        extract(row, &cols).map_err(|p| {
            file.error(*at, p, "fix the row, or name the prompt column with --hf-text-column")
        })?;
    }
    shuffle_source(&mut rows, sampling);
    let samples = collect_samples(&rows, sampling.num_prompts, |(_, row)| {
        let (prompt, completion) = extract(row, &cols).map_err(BenchError::dataset)?;
        let prompt_len = tok.encode(&prompt, true)?.len();
        if prompt_len < MIN_PROMPT_LEN {
            return Ok(None);
        }
        let output = match (cfg.output_len, completion) {
            (Some(n), _) => n,
            (None, Some(c)) => tok.encode(&c, true)?.len().max(1),
            (None, None) => DEFAULT_OUTPUT_LEN,
        };
        Ok(Some(Sample::text(prompt, prompt_len, output)))
    })?;
    if samples.is_empty() {
        return Err(file.error(
            Location::File,
            format!("no prompt of {MIN_PROMPT_LEN} or more tokens"),
            "check the prompt column (--hf-text-column)",
        ));
    }
    Ok(finish(samples, sampling))
}
