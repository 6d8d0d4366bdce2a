//! vLLM's MLPerf parser (mgoin/mlperf-inference-llama2-data, mgoin/mlperf-inference-llama3.1-data;
//! vLLM 0.33): rows `{"system_prompt", "question", "output"}`. As vLLM: the prompt is the
//! tokenizer's chat template rendered over `[{system: system_prompt}, {user: question}]` with
//! `add_generation_prompt` ([`super::chat_render`]; a tokenizer without a template is SB206,
//! `--skip-chat-template` does not apply), `prompt_tokens` is the rendered text's token count,
//! the output length is the token count of `output` without special tokens (or
//! `--hf-output-len` / `--output-len`), and a row is kept only if vLLM's `is_valid_sequence`
//! (prompt ≥ 4 and ≤ 1024 tokens, output ≥ 4, total ≤ 2048) keeps it — applied with a fixed
//! output length too, as vLLM does.
//!
//! A completions backend sends the rendered text, as vLLM. `--backend openai-chat` sends the
//! two messages un-rendered and the server renders its template once (vLLM sends the rendered
//! text as a user message, which the server wraps in a second template).

use super::chat_render::{chat_messages, render_for_generation};
use super::file::{DataFile, Location};
use super::hf_chat::ChatParserOptions;
use super::hf_text::Limits;
use super::{collect_samples, finish, shuffle_source, Sample, Sampling};
use serde_json::Value;
use servebench_core::{BenchError, Result, TextTokenizer, Workload};

/// vLLM's default `is_valid_sequence` limits.
const LIMITS: Limits = Limits { min_len: 4, max_prompt_len: 1024, max_total_len: 2048 };

fn text<'a>(row: &'a Value, col: &str) -> std::result::Result<&'a str, String> {
    row.get(col).and_then(Value::as_str).ok_or_else(|| format!("column '{col}' is missing or not text"))
}

/// The system prompt, question and reference answer of a row.
pub fn fields(row: &Value) -> std::result::Result<(&str, &str, &str), String> {
    Ok((text(row, "system_prompt")?, text(row, "question")?, text(row, "output")?))
}

/// The conversation of a row: the system prompt, then the question.
pub fn conversation(system: &str, question: &str) -> Value {
    serde_json::json!([
        {"role": "system", "content": system},
        {"role": "user", "content": question},
    ])
}

/// Builds the MLPerf workload.
pub fn generate(
    file: &DataFile,
    mut rows: Vec<(Location, Value)>,
    output_len: Option<usize>,
    opts: &ChatParserOptions,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    for (at, row) in &rows {
        fields(row).map_err(|p| file.error(*at, p, "fix the row (MLPerfDataset reads it)"))?;
    }
    shuffle_source(&mut rows, sampling);
    let samples = collect_samples(&rows, sampling.num_prompts, |(_, row)| {
        let (system, question, reference) = fields(row).map_err(BenchError::dataset)?;
        let turns = conversation(system, question);
        let rendered = render_for_generation(tok, &turns, None, || "the MLPerfDataset parser".into())?;
        let prompt_len = tok.encode(&rendered, true)?.len();
        let output = match output_len {
            Some(n) => n,
            None => tok.encode(reference, false)?.len(),
        };
        if !LIMITS.keeps(prompt_len, output) {
            return Ok(None);
        }
        let mut s = Sample::text(rendered, prompt_len, output);
        if opts.chat_messages {
            s.messages = Some(chat_messages(&turns)?);
        }
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
