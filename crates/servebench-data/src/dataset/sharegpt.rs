//! The `sharegpt` dataset: the first human message of each conversation as the prompt, the
//! first reply's length (or `--sharegpt-output-len`) as the output length, filtered as vLLM
//! does (prompt ≥ 4 and ≤ 1024 tokens, output ≥ 4 unless fixed, prompt + output ≤ 2048).

use super::file::{parse_json_array, parse_json_lines, DataFile, Format};
use super::{collect_samples, finish, hub, shuffle_source, Sample, Sampling};
use crate::tokenizer::HubEnv;
use serde::Deserialize;
use servebench_core::{Result, TextTokenizer, Workload};
use std::path::PathBuf;

/// The Hub dataset downloaded when no `--dataset-path` is given.
pub const SHAREGPT_REPO: &str = "anon8231489123/ShareGPT_Vicuna_unfiltered";
/// Its file.
pub const SHAREGPT_FILE: &str = "ShareGPT_V3_unfiltered_cleaned_split.json";

/// vLLM's validity limits (`is_valid_sequence` defaults).
pub const MIN_LEN: usize = 4;
pub const MAX_PROMPT_LEN: usize = 1024;
pub const MAX_TOTAL_LEN: usize = 2048;

/// Options of the sharegpt dataset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareGptConfig {
    /// `--dataset-path`; None = the Hub file (cache, else download).
    pub path: Option<PathBuf>,
    /// `--sharegpt-output-len` (also `--output-len`): fixed output length.
    pub output_len: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct Entry {
    conversations: Vec<Message>,
}

#[derive(Debug, Deserialize)]
struct Message {
    value: String,
}

/// Reads the file: JSON array (ShareGPT's format) or JSON Lines of the same objects.
fn read_entries(file: &DataFile) -> Result<Vec<Entry>> {
    let text = file.read_text()?;
    let records = match Format::detect(&file.path, text.as_bytes()) {
        Format::JsonLines => parse_json_lines::<Entry>(file, &text)?,
        _ => parse_json_array::<Entry>(file, &text).map_err(with_hint)?,
    };
    Ok(records.into_iter().map(|(_, e)| e).collect())
}

fn with_hint(e: servebench_core::BenchError) -> servebench_core::BenchError {
    match e {
        servebench_core::BenchError::DatasetFile { path, location, problem, fix }
            if problem.contains("missing field") =>
        {
            servebench_core::BenchError::DatasetFile {
                path,
                location,
                problem,
                fix: format!(
                    "{fix}; each record needs \"conversations\": [{{\"from\": ..., \"value\": ...}}, ...]"
                ),
            }
        }
        other => other,
    }
}

/// Builds the sharegpt workload.
pub fn generate_sharegpt(
    cfg: &ShareGptConfig,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
    env: &HubEnv,
) -> Result<Workload> {
    let path = match &cfg.path {
        Some(p) => p.clone(),
        None => hub::dataset_file(SHAREGPT_REPO, SHAREGPT_FILE, env)?,
    };
    let file = DataFile::new(path);
    let mut entries: Vec<Entry> =
        read_entries(&file)?.into_iter().filter(|e| e.conversations.len() >= 2).collect();
    if entries.is_empty() {
        return Err(file.error(
            super::file::Location::File,
            "no conversation has two or more messages",
            "pass a ShareGPT file whose conversations have a prompt and a reply",
        ));
    }
    shuffle_source(&mut entries, sampling);
    let samples = collect_samples(&entries, sampling.num_prompts, |e| sample_of(e, cfg.output_len, tok))?;
    Ok(finish(samples, sampling))
}

fn sample_of(e: &Entry, fixed_output: Option<usize>, tok: &dyn TextTokenizer) -> Result<Option<Sample>> {
    let prompt = &e.conversations[0].value;
    let prompt_len = tok.encode(prompt, true)?.len();
    if !(MIN_LEN..=MAX_PROMPT_LEN).contains(&prompt_len) {
        return Ok(None); // invalid whatever the reply: do not tokenize it
    }
    let output_len = match fixed_output {
        Some(n) => n,
        None => tok.encode(&e.conversations[1].value, true)?.len(),
    };
    if !is_valid(prompt_len, output_len, fixed_output.is_some()) {
        return Ok(None);
    }
    Ok(Some(Sample::text(prompt.as_str(), prompt_len, output_len)))
}

/// vLLM's `is_valid_sequence` with its defaults.
pub fn is_valid(prompt_len: usize, output_len: usize, skip_min_output: bool) -> bool {
    let too_short = prompt_len < MIN_LEN || (!skip_min_output && output_len < MIN_LEN);
    let too_long = prompt_len > MAX_PROMPT_LEN || prompt_len + output_len > MAX_TOTAL_LEN;
    !(too_short || too_long)
}
