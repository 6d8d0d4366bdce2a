//! vLLM's hf parsers that wrap the prompt in the model's chat template unless
//! `--skip-chat-template` is given: InstructCoder, MT-Bench, HumanEval, GSM8K and Blazedit. As
//! vLLM: the prompt becomes `[{"role": "user", "content": prompt}]` rendered with the
//! tokenizer's template and `add_generation_prompt` ([`super::chat_render`]; a tokenizer without
//! one is SB206), and `prompt_tokens` counts the rendered text. A completions backend sends the
//! rendered text; `--backend openai-chat` sends the one user message un-rendered and the server
//! renders its template once (vLLM would wrap the rendered text in a second template). The
//! output length is fixed (the parser's default, or `--hf-output-len` / `--output-len`);
//! prompts are not filtered by length. Blazedit keeps rows whose `norm_distance` is within
//! `--blazedit-min-distance`..=`--blazedit-max-distance`.

use super::chat_render::{require_template, PromptTemplate};
use super::file::{DataFile, Location};
use super::hf_parsers::HfParser;
use super::{collect_samples, finish, shuffle_source, Sampling};
use serde_json::Value;
use servebench_core::{BenchError, Result, TextTokenizer, Workload};

/// Options of the chat-template parsers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChatParserOptions {
    /// `--skip-chat-template`.
    pub skip_chat_template: bool,
    /// `--blazedit-min-distance`, `--blazedit-max-distance`.
    pub blazedit_distance: (f64, f64),
    /// The backend sends chat messages (`openai-chat`): a rendered prompt also keeps its
    /// un-rendered conversation as the request's messages.
    pub chat_messages: bool,
}

impl Default for ChatParserOptions {
    fn default() -> Self {
        ChatParserOptions { skip_chat_template: false, blazedit_distance: (0.0, 1.0), chat_messages: false }
    }
}

/// vLLM's default output length of a chat-template parser (None: not one of these).
pub fn default_output_len(parser: HfParser) -> Option<usize> {
    match parser {
        HfParser::InstructCoder => Some(200),
        HfParser::MtBench | HfParser::HumanEval | HfParser::Gsm8k => Some(256),
        HfParser::Blazedit => Some(4000),
        _ => None,
    }
}

fn text<'a>(row: &'a Value, col: &str) -> std::result::Result<&'a str, String> {
    row.get(col).and_then(Value::as_str).ok_or_else(|| format!("column '{col}' is missing or not text"))
}

/// The prompt vLLM builds from a row (before any chat template); None when the row is filtered.
pub fn prompt_of(
    parser: HfParser,
    row: &Value,
    opts: &ChatParserOptions,
) -> std::result::Result<Option<String>, String> {
    match parser {
        HfParser::InstructCoder => Ok(Some(format!(
            "{}\n\n{} Just output the code, do not include any explanation.",
            text(row, "input")?,
            text(row, "instruction")?
        ))),
        HfParser::MtBench => {
            let first = row.get("turns").and_then(Value::as_array).and_then(|t| t.first());
            Ok(Some(
                first.and_then(Value::as_str).ok_or("column 'turns' has no first text turn")?.to_string(),
            ))
        }
        HfParser::HumanEval => Ok(Some(text(row, "prompt")?.to_string())),
        HfParser::Gsm8k => Ok(Some(text(row, "question")?.to_string())),
        HfParser::Blazedit => {
            let (code, change) = (text(row, "code")?, text(row, "change_request")?);
            let d = row
                .get("norm_distance")
                .and_then(Value::as_f64)
                .ok_or("column 'norm_distance' is not a number")?;
            let (lo, hi) = opts.blazedit_distance;
            if d < lo || d > hi {
                return Ok(None);
            }
            Ok(Some(format!(
                "Given a code file, please apply the change requests and generate the new file.\n\n\
                 Original file:\n```python\n{code}\n```\n\nChange request:\n{change}\n\n\
                 Please generate the new code file in the \"New file\" section below."
            )))
        }
        other => Err(format!("{} is not a chat-template parser", other.name())),
    }
}

/// Refuses (SB206), before any download, a chat-template parser without
/// `--skip-chat-template` when the tokenizer has no chat template to render.
pub fn check_template(
    id: &str,
    parser: HfParser,
    opts: &ChatParserOptions,
    tok: &dyn TextTokenizer,
) -> Result<()> {
    if opts.skip_chat_template {
        return Ok(());
    }
    require_template(tok, || format!("the {} parser of '{id}' (without --skip-chat-template)", parser.name()))
}

/// Builds the workload of a chat-template parser.
pub fn generate(
    parser: HfParser,
    file: &DataFile,
    mut rows: Vec<(Location, Value)>,
    output_len: Option<usize>,
    opts: &ChatParserOptions,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    let default = default_output_len(parser).ok_or_else(|| BenchError::Dataset {
        detail: format!("{} is not a chat-template parser", parser.name()),
        source: None,
    })?;
    for (at, row) in &rows {
        prompt_of(parser, row, opts)
            .map_err(|p| file.error(*at, p, format!("fix the row ({} reads it)", parser.name())))?;
    }
    shuffle_source(&mut rows, sampling);
    let output = output_len.unwrap_or(default);
    // vLLM passes no --chat-template-kwargs to these parsers.
    let template =
        PromptTemplate { render: !opts.skip_chat_template, kwargs: None, chat_messages: opts.chat_messages };
    let samples = collect_samples(&rows, sampling.num_prompts, |(_, row)| {
        let Some(prompt) = prompt_of(parser, row, opts).map_err(BenchError::dataset)? else {
            return Ok(None);
        };
        template.sample(tok, &prompt, output, || format!("the {} parser", parser.name())).map(Some)
    })?;
    if samples.is_empty() {
        return Err(file.error(
            Location::File,
            format!("no row passes {}'s filter", parser.name()),
            "widen --blazedit-min-distance/--blazedit-max-distance, or pass more rows",
        ));
    }
    Ok(finish(samples, sampling))
}
