//! The `speed-bench` dataset: NVIDIA SPEED-Bench rows (`turns`, `category`, `multiturn`), from
//! a local file (JSON, JSONL or Parquet, `--dataset-path`) or from the Hub datasets-server
//! (`nvidia/SPEED-Bench`, config = `--speed-bench-dataset-subset`, split `test`, cached).
//! Rows are kept when `turns` is non-empty, the row is not a masked placeholder, it is not
//! multi-turn, and its `category` matches `--speed-bench-category` (if given). The prompt is
//! the first turn (skipped under 4 tokens); the output length is `--speed-bench-output-len`.
//! `--speed-bench-max-input-len N` (vllm-rs) truncates a longer first turn to its first N
//! tokens (encoded without special tokens, decoded skipping them), before any chat template.

use super::file::{read_records, DataFile, Location};
use super::{collect_samples, finish, hub, shuffle_source, Sampling};
use crate::tokenizer::HubEnv;
use serde_json::Value;
use servebench_core::{Result, TextTokenizer, Workload};
use std::borrow::Cow;
use std::path::PathBuf;

/// The Hub dataset.
pub const SPEED_BENCH_REPO: &str = "nvidia/SPEED-Bench";
/// First-turn text of rows whose content must be fetched separately (skipped).
pub const MASKED_PREFIX: &str = "FULL BENCHMARK DATA SHOULD BE FETCHED";
/// Configs of the Hub dataset.
pub const SUBSETS: [&str; 6] =
    ["qualitative", "throughput_1k", "throughput_2k", "throughput_8k", "throughput_16k", "throughput_32k"];

/// Options of the speed-bench dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeedBenchConfig {
    /// `--dataset-path`; None = the Hub.
    pub path: Option<PathBuf>,
    /// `--speed-bench-dataset-subset` (default `qualitative`).
    pub subset: String,
    /// `--speed-bench-category`.
    pub category: Option<String>,
    /// `--speed-bench-output-len` (default 4096).
    pub output_len: usize,
    /// `--speed-bench-max-input-len` (vllm-rs): prompts longer than this many tokens are cut
    /// to their first this-many tokens.
    pub max_input_len: Option<usize>,
    /// The chat template rendering of the prompts (vLLM: unless `--skip-chat-template`, with
    /// `--chat-template-kwargs`).
    pub template: super::chat_render::PromptTemplate,
}

fn first_turn(row: &Value) -> Option<&str> {
    row.get("turns")?.as_array()?.first()?.as_str()
}

fn keep(row: &Value, category: Option<&str>) -> bool {
    let Some(t) = first_turn(row) else { return false };
    !t.starts_with(MASKED_PREFIX)
        && !row.get("multiturn").and_then(Value::as_bool).unwrap_or(false)
        && category.is_none_or(|c| row.get("category").and_then(Value::as_str) == Some(c))
}

/// `prompt` cut to its first `max` tokens when it is longer (vllm-rs's
/// `--speed-bench-max-input-len`: ids without special tokens, decoded skipping them).
fn truncated<'a>(tok: &dyn TextTokenizer, prompt: &'a str, max: Option<usize>) -> Result<Cow<'a, str>> {
    let Some(max) = max else { return Ok(Cow::Borrowed(prompt)) };
    let ids = tok.encode(prompt, false)?;
    if ids.len() <= max {
        return Ok(Cow::Borrowed(prompt));
    }
    Ok(Cow::Owned(tok.decode(&ids[..max], true)?))
}

/// Builds the speed-bench workload.
pub fn generate_speed_bench(
    cfg: &SpeedBenchConfig,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
    env: &HubEnv,
) -> Result<Workload> {
    let (file, rows) = match &cfg.path {
        Some(p) => {
            let file = DataFile::new(p);
            let rows = read_records(&file)?;
            (file, rows)
        }
        None => {
            let req = hub::RowsRequest {
                dataset: SPEED_BENCH_REPO,
                config: Some(&cfg.subset),
                split: Some("test"),
                rows: usize::MAX,
            };
            let rows = hub::fetch_rows(&req, env)?;
            let file = DataFile::new(format!("hf://{SPEED_BENCH_REPO}/{}", cfg.subset));
            (file, rows.into_iter().enumerate().map(|(i, r)| (Location::Row(i), r)).collect())
        }
    };
    if let Some((at, _)) = rows.iter().find(|(_, r)| r.get("turns").is_some_and(|t| !t.is_array())) {
        return Err(file.error(*at, "column 'turns' is not a list of strings", "fix the row"));
    }
    if !rows.iter().any(|(_, r)| r.get("turns").is_some()) {
        return Err(file.error(
            Location::File,
            "no row has a 'turns' column",
            "pass a SPEED-Bench file (rows with turns, category, multiturn)",
        ));
    }
    let mut kept: Vec<&Value> =
        rows.iter().map(|(_, r)| r).filter(|r| keep(r, cfg.category.as_deref())).collect();
    if kept.is_empty() {
        return Err(file.error(
            Location::File,
            "no usable row (all masked, multi-turn, empty, or of another category)",
            "check --speed-bench-category, or fetch the full data",
        ));
    }
    shuffle_source(&mut kept, sampling);
    let samples = collect_samples(&kept, sampling.num_prompts, |row| {
        let prompt = truncated(tok, first_turn(row).unwrap_or(""), cfg.max_input_len)?;
        let needed = || "the speed-bench dataset (without --skip-chat-template)".to_string();
        let s = cfg.template.sample(tok, &prompt, cfg.output_len, needed)?;
        Ok((s.prompt_len >= 4).then_some(s))
    })?;
    Ok(finish(samples, sampling))
}
