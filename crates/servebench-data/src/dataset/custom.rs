//! The `custom` dataset: a JSON Lines file, one `{"prompt": "...", "output_tokens": N}` per
//! line (`output_tokens` optional). The output length is `--custom-output-len` (default 256),
//! or each line's `output_tokens` when that flag is -1. As vLLM's `CustomDataset`, each prompt
//! is rendered with the tokenizer's chat template (with `--chat-template-kwargs`) unless
//! `--skip-chat-template` ([`super::chat_render::PromptTemplate`]); `prompt_tokens` is the sent
//! text encoded with the tokenizer's special tokens.

use super::chat_render::PromptTemplate;
use super::file::{parse_json_lines_of_form, DataFile, FormHint, Location};
use super::{collect_samples, finish, shuffle_source, Sampling};
use serde::Deserialize;
use servebench_core::{Result, TextTokenizer, Workload};
use std::path::PathBuf;

/// Options of the custom dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomConfig {
    /// `--dataset-path` (a `.jsonl` file).
    pub path: PathBuf,
    /// `--custom-output-len`: a fixed output length, or None (-1) for each line's
    /// `output_tokens`.
    pub output_len: Option<usize>,
    /// The chat template rendering of the prompts.
    pub template: PromptTemplate,
}

#[derive(Debug, Deserialize)]
struct Line {
    prompt: String,
    #[serde(default, deserialize_with = "whole_number")]
    output_tokens: Option<i64>,
}

/// A count as Python's `int()` reads it from JSON, as vLLM's `CustomDataset` does: an integer,
/// a whole float (`5.0`, which pandas writes for an integer column with gaps) or an integer
/// string (`"5"`); `null` is absent. A fraction, another string or another type is an error
/// naming the value (vLLM would cut `5.5` to 5 without a word).
pub(crate) fn whole_number<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<i64>, D::Error> {
    use serde::de::Error;
    let v = serde_json::Value::deserialize(d)?;
    let bad = || D::Error::custom(format!("output_tokens {v} is not a whole number"));
    match &v {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(Some(i)),
            // Beyond i64 (or a float): whole values as such, saturated (the range check names them).
            (None, Some(f)) if f.is_finite() && f.fract() == 0.0 => Ok(Some(f as i64)),
            _ => Err(bad()),
        },
        serde_json::Value::String(s) => s.trim().parse::<i64>().map(Some).map_err(|_| bad()),
        _ => Err(bad()),
    }
}

/// Builds the custom workload.
pub fn generate_custom(cfg: &CustomConfig, sampling: &Sampling, tok: &dyn TextTokenizer) -> Result<Workload> {
    let file = DataFile::new(&cfg.path);
    let text = file.read_text()?;
    let mut lines: Vec<(Location, Line)> = parse_json_lines_of_form(
        &file,
        &text,
        FormHint::WrongShape(r#"each line is {"prompt": "text", "output_tokens": N}"#),
    )?;
    if cfg.output_len.is_none() {
        for (at, l) in &lines {
            check_line_output_tokens(&file, *at, l.output_tokens)?;
        }
    }
    shuffle_source(&mut lines, sampling);
    let samples = collect_samples(&lines, sampling.num_prompts, |(_, l)| {
        let output = cfg.output_len.unwrap_or_else(|| l.output_tokens.unwrap_or(1).max(1) as usize);
        let needed = || "the custom dataset (without --skip-chat-template)".to_string();
        Ok(Some(cfg.template.sample(tok, &l.prompt, output, needed)?))
    })?;
    Ok(finish(samples, sampling))
}

/// With `--custom-output-len -1` every line needs a positive `output_tokens` that fits a
/// request's `max_tokens` (at most `u32::MAX`; larger ones used to be lowered to it silently).
pub(crate) fn check_line_output_tokens(file: &DataFile, at: Location, n: Option<i64>) -> Result<()> {
    match n {
        Some(n) if n > 0 && n <= i64::from(u32::MAX) => Ok(()),
        Some(n) if n > 0 => Err(file.error(
            at,
            format!(
                "output_tokens is {}, above the largest output length ({})",
                // A value beyond i64 was read saturated: say so rather than show the bound as if
                // it were the file's value.
                if n == i64::MAX { "9223372036854775807 or more".to_string() } else { n.to_string() },
                u32::MAX
            ),
            format!("use a length of at most {}", u32::MAX),
        )),
        Some(n) => Err(file.error(at, format!("output_tokens is {n}"), "use a positive number")),
        None => Err(file.error(
            at,
            "no output_tokens, and --custom-output-len is -1 (per-line lengths)",
            "add \"output_tokens\" to every line, or pass --custom-output-len N",
        )),
    }
}
