//! vLLM's dataset-specific hf parsers that send the row text as it is (no chat template):
//! AIMO (`problem` → prompt, `solution` → completion) and the conversation set (`conversations`
//! with two or more turns: first `value` → prompt, second → completion). Without a fixed output
//! length (`--hf-output-len` / `--output-len`) the output length is the completion's token
//! count and rows are kept only if vLLM's `is_valid_sequence` keeps them (prompt and completion
//! of 4 or more tokens, prompt and total under the parser's limits); with a fixed length every
//! row is kept. The zeta parser (zed-industries/zeta) formats vLLM's next-edit prompt from
//! `events` and `input`; its output length is the token count of `output` from the editable
//! region marker on, and no row is filtered. Tokens are counted with special tokens, as vLLM's `tokenizer(text)` does.

use super::file::{DataFile, Location};
use super::hf_parsers::HfParser;
use super::{collect_samples, finish, shuffle_source, Sample, Sampling};
use serde_json::Value;
use servebench_core::{BenchError, Result, TextTokenizer, Workload};

/// vLLM's `is_valid_sequence` limits of one parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub min_len: usize,
    pub max_prompt_len: usize,
    pub max_total_len: usize,
}

impl Limits {
    /// Whether vLLM keeps a row with these lengths.
    pub fn keeps(&self, prompt_len: usize, output_len: usize) -> bool {
        prompt_len >= self.min_len
            && output_len >= self.min_len
            && prompt_len <= self.max_prompt_len
            && prompt_len.saturating_add(output_len) <= self.max_total_len
    }
}

/// The limits vLLM uses for a text parser (None: the parser is not one of these).
pub fn limits(parser: HfParser) -> Option<Limits> {
    match parser {
        HfParser::Aimo => Some(Limits { min_len: 4, max_prompt_len: 2048, max_total_len: 32000 }),
        HfParser::Conversation | HfParser::MultiModalConversation => {
            Some(Limits { min_len: 4, max_prompt_len: 1024, max_total_len: 2048 })
        }
        // vLLM keeps every zeta row.
        HfParser::NextEditPrediction => {
            Some(Limits { min_len: 0, max_prompt_len: usize::MAX, max_total_len: usize::MAX })
        }
        _ => None,
    }
}

fn text<'a>(v: Option<&'a Value>, what: &str) -> std::result::Result<&'a str, String> {
    v.and_then(Value::as_str).ok_or_else(|| format!("{what} is missing or not text"))
}

/// The prompt and completion of a row; None when the parser drops the row (a conversation of
/// fewer than two turns).
pub fn extract(parser: HfParser, row: &Value) -> std::result::Result<Option<(String, String)>, String> {
    match parser {
        HfParser::Aimo => Ok(Some((
            text(row.get("problem"), "column 'problem'")?.into(),
            text(row.get("solution"), "column 'solution'")?.into(),
        ))),
        HfParser::Conversation | HfParser::MultiModalConversation => {
            let conv = row
                .get("conversations")
                .and_then(Value::as_array)
                .ok_or("column 'conversations' is missing or not a list")?;
            if conv.len() < 2 {
                return Ok(None);
            }
            let turn = |i: usize| text(conv[i].get("value"), &format!("conversations[{i}].value"));
            Ok(Some((turn(0)?.into(), turn(1)?.into())))
        }
        HfParser::NextEditPrediction => {
            let events = text(row.get("events"), "column 'events'")?;
            let input = text(row.get("input"), "column 'input'")?;
            let output = text(row.get("output"), "column 'output'")?;
            Ok(Some((zeta_prompt(events, input), zeta_expected_output(output))))
        }
        other => Err(format!("{} is not a text parser", other.name())),
    }
}

/// vLLM's zeta prompt around the user's edits and excerpt.
pub fn zeta_prompt(events: &str, input: &str) -> String {
    format!(
        "### Instruction:\nYou are a code completion assistant and your task is to analyze user edits \
         and then rewrite an excerpt that the user provides, suggesting the appropriate edits within \
         the excerpt, taking into account the cursor location.\n\n### User Edits:\n\n{events}\n\n\
         ### User Excerpt:\n\n{input}\n\n### Response:\n\n"
    )
}

/// The part of a zeta `output` from `<|editable_region_start|>` on. Without the marker vLLM's
/// `str.find` gives -1 and the slice keeps only the last character; so does this.
pub fn zeta_expected_output(output: &str) -> String {
    match output.find(ZETA_MARKER) {
        Some(i) => output[i..].to_string(),
        None => output.chars().last().map(String::from).unwrap_or_default(),
    }
}

const ZETA_MARKER: &str = "<|editable_region_start|>";

/// Builds the workload of a text parser from the rows.
pub fn generate(
    parser: HfParser,
    file: &DataFile,
    mut rows: Vec<(Location, Value)>,
    output_len: Option<usize>,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    let limits = limits(parser)
        .ok_or_else(|| BenchError::dataset(format!("{} is not a text parser", parser.name())))?;
    for (at, row) in &rows {
        extract(parser, row)
            .map_err(|p| file.error(*at, p, format!("fix the row ({} reads it)", parser.name())))?;
    }
    shuffle_source(&mut rows, sampling);
    let media = super::media::MediaResolver::new(false);
    let samples = collect_samples(&rows, sampling.num_prompts, |(at, row)| {
        let Some((prompt, completion)) = extract(parser, row).map_err(BenchError::dataset)? else {
            return Ok(None);
        };
        let prompt_len = tok.encode(&prompt, true)?.len();
        let output = match output_len {
            Some(n) => n,
            None => {
                let completion_len = tok.encode(&completion, true)?.len();
                if !limits.keeps(prompt_len, completion_len) {
                    return Ok(None);
                }
                completion_len
            }
        };
        let mut s = Sample::text(prompt, prompt_len, output);
        // LLaVA-OneVision: the row's image (if any) follows the text, as vLLM's process_image.
        if let Some(cell) =
            row.get("image").filter(|c| !c.is_null() && parser == HfParser::MultiModalConversation)
        {
            let url = super::hf_image::image_url(cell, &media)
                .map_err(|p| file.error_problem(*at, p, "fix the row's image"))?;
            s.multimodal = Some(vec![super::hf_image::image_part(&url)].into());
        }
        Ok(Some(s))
    })?;
    if samples.is_empty() {
        return Err(file.error(
            Location::File,
            format!("no row passes {}'s filter", parser.name()),
            "pass more rows, or a fixed --hf-output-len (no length filter)",
        ));
    }
    Ok(finish(samples, sampling))
}
