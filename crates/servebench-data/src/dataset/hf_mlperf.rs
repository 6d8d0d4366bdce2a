//! vLLM's MLPerf parser (mgoin/mlperf-inference-llama2-data, mgoin/mlperf-inference-llama3.1-data;
//! vLLM 0.33): rows `{"system_prompt", "question", "output"}`. vLLM renders the model's chat
//! template over `[{system: system_prompt}, {user: question}]` and sends the rendered text;
//! servebench renders no template, so it sends those two messages as the chat `messages` of
//! `--backend openai-chat` and the server renders its own template (other backends: SB114).
//! As vLLM: the output length is the token count of `output` without special tokens (or
//! `--hf-output-len` / `--output-len`), and a row is kept only if vLLM's `is_valid_sequence`
//! (prompt ≥ 4 and ≤ 1024 tokens, output ≥ 4, total ≤ 2048) keeps it — applied with a fixed
//! output length too, as vLLM does. The prompt length of the filter is the system prompt's and
//! the question's tokens (vLLM: the rendered template's, a few tokens more); `prompt_tokens`
//! is the question's (the text `/tokenize` verification checks; the server's `usage` counts the
//! whole).

use super::file::{DataFile, Location};
use super::hf_text::Limits;
use super::{collect_samples, finish, shuffle_source, Sample, Sampling};
use serde_json::Value;
use servebench_core::{BenchError, ChatMessages, Result, TextTokenizer, Workload};
use std::sync::Arc;

/// vLLM's default `is_valid_sequence` limits.
const LIMITS: Limits = Limits { min_len: 4, max_prompt_len: 1024, max_total_len: 2048 };

fn text<'a>(row: &'a Value, col: &str) -> std::result::Result<&'a str, String> {
    row.get(col).and_then(Value::as_str).ok_or_else(|| format!("column '{col}' is missing or not text"))
}

/// The system prompt, question and reference answer of a row.
pub fn fields(row: &Value) -> std::result::Result<(&str, &str, &str), String> {
    Ok((text(row, "system_prompt")?, text(row, "question")?, text(row, "output")?))
}

/// The chat `messages` of a row: the system prompt, then the question.
pub fn messages(system: &str, question: &str) -> std::result::Result<ChatMessages, String> {
    let json = serde_json::to_string(&serde_json::json!([
        {"role": "system", "content": system},
        {"role": "user", "content": question},
    ]))
    .map_err(|e| e.to_string())?;
    Ok(ChatMessages { json: Arc::from(json), media_items: 0 })
}

/// Builds the MLPerf workload.
pub fn generate(
    file: &DataFile,
    mut rows: Vec<(Location, Value)>,
    output_len: Option<usize>,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    for (at, row) in &rows {
        fields(row).map_err(|p| file.error(*at, p, "fix the row (MLPerfDataset reads it)"))?;
    }
    shuffle_source(&mut rows, sampling);
    let samples = collect_samples(&rows, sampling.num_prompts, |(_, row)| {
        let (system, question, reference) = fields(row).map_err(|d| BenchError::Dataset { detail: d })?;
        let question_len = tok.encode(question, true)?.len();
        let prompt_len = tok.encode(system, true)?.len() + question_len;
        let output = match output_len {
            Some(n) => n,
            None => tok.encode(reference, false)?.len(),
        };
        if !LIMITS.keeps(prompt_len, output) {
            return Ok(None);
        }
        let mut s = Sample::text(question, question_len, output);
        s.messages = Some(messages(system, question).map_err(|d| BenchError::Dataset { detail: d })?);
        Ok(Some(s))
    })?;
    if samples.is_empty() {
        return Err(file.error(
            Location::File,
            "no row passes MLPerfDataset's length filter",
            "pass more rows (prompts of 4 to 1024 tokens, answers of 4 or more)",
        ));
    }
    Ok(finish(samples, sampling))
}
