//! The `spec_bench` dataset: Spec-Bench's `question.jsonl` (github.com/hemingkx/Spec-Bench),
//! one `{"question_id": N, "category": "...", "turns": ["...", ...]}` per line. As vLLM does:
//! the prompt is the first turn, `--spec-bench-category` keeps only the lines of that category
//! (exact match; none = every line), the lines are shuffled (seeded, unless
//! `--disable-shuffle`), and every request asks for `--spec-bench-output-len` tokens (default
//! 256, `--output-len` overrides). Prompts are sent as they are, like the custom dataset
//! (servebench applies no client-side chat template; docs/datasets.md).

use super::file::{parse_json_lines, DataFile, Location};
use super::{collect_samples, finish, shuffle_source, Sampling};
use serde::Deserialize;
use serde_json::Value;
use servebench_core::{Result, TextTokenizer, Workload};
use std::path::PathBuf;

/// vLLM's `--spec-bench-output-len` default.
pub const DEFAULT_OUTPUT_LEN: usize = 256;

/// Options of the spec_bench dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecBenchConfig {
    /// `--dataset-path` (Spec-Bench's question.jsonl).
    pub path: PathBuf,
    /// `--spec-bench-category` (None = every category).
    pub category: Option<String>,
    /// `--spec-bench-output-len` (or `--output-len`).
    pub output_len: usize,
    /// The chat template rendering (vLLM renders spec_bench prompts always, without kwargs).
    pub template: super::chat_render::PromptTemplate,
}

#[derive(Debug, Deserialize)]
struct Question {
    #[serde(default)]
    category: Option<Value>,
    turns: Option<Vec<Value>>,
}

/// The first turn of a line, or what is wrong with it.
fn first_turn(q: &Question) -> std::result::Result<&str, &'static str> {
    match q.turns.as_deref() {
        None => Err("the line has no \"turns\" list"),
        Some([]) => Err("\"turns\" is empty"),
        Some([Value::String(s), ..]) => Ok(s),
        Some(_) => Err("the first of \"turns\" is not text"),
    }
}

/// Builds the spec_bench workload.
pub fn generate_spec_bench(
    cfg: &SpecBenchConfig,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    let file = DataFile::new(&cfg.path);
    let text = file.read_text()?;
    let lines: Vec<(Location, Question)> = parse_json_lines(&file, &text)?;
    let wanted = cfg.category.as_deref().filter(|c| !c.is_empty());
    let mut prompts = Vec::with_capacity(lines.len());
    for (at, q) in &lines {
        let prompt = first_turn(q).map_err(|p| {
            file.error(*at, p, "each line is {\"category\": \"...\", \"turns\": [\"first question\", ...]}")
        })?;
        let category = q.category.as_ref().and_then(Value::as_str);
        if wanted.is_none_or(|w| category == Some(w)) {
            prompts.push(prompt);
        }
    }
    if prompts.is_empty() {
        let mut seen: Vec<&str> =
            lines.iter().filter_map(|(_, q)| q.category.as_ref().and_then(Value::as_str)).collect();
        seen.sort_unstable();
        seen.dedup();
        return Err(file.error(
            Location::File,
            format!("no line has category '{}'", wanted.unwrap_or_default()),
            format!("pass one of the file's categories: {}", seen.join(", ")),
        ));
    }
    shuffle_source(&mut prompts, sampling);
    let samples = collect_samples(&prompts, sampling.num_prompts, |p| {
        Ok(Some(cfg.template.sample(tok, p, cfg.output_len, || "the spec_bench dataset".into())?))
    })?;
    Ok(finish(samples, sampling))
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::Prompt;

    fn write(lines: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("question.jsonl");
        std::fs::write(&path, lines).unwrap();
        (dir, path)
    }

    const QUESTIONS: &str = concat!(
        r#"{"question_id": 1, "category": "writing", "turns": ["Write a haiku about rivers.", "Now a limerick."]}"#,
        "\n",
        r#"{"question_id": 2, "category": "math_reasoning", "turns": ["What is seven times six, exactly?"]}"#,
        "\n",
        r#"{"question_id": 3, "category": "writing", "turns": ["Describe a quiet library at night."]}"#,
        "\n",
    );

    fn texts(w: &Workload) -> Vec<String> {
        w.requests
            .iter()
            .map(|r| match &r.prompt {
                Prompt::Text(t) => t.to_string(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn first_turn_of_the_category_with_the_fixed_output_len() {
        let (_d, path) = write(QUESTIONS);
        let tok = crate::load_tokenizer("cl100k_base").unwrap();
        let cfg = SpecBenchConfig {
            path,
            category: Some("writing".into()),
            output_len: 17,
            template: Default::default(),
        };
        let s = Sampling { num_prompts: 2, shuffle: false, ..Sampling::default() };
        let w = generate_spec_bench(&cfg, &s, tok.as_ref()).unwrap();
        assert_eq!(texts(&w), ["Write a haiku about rivers.", "Describe a quiet library at night."]);
        assert!(w.requests.iter().all(|r| r.expected_output_tokens == 17));
        let expected = tok.encode("Write a haiku about rivers.", true).unwrap().len() as u32;
        assert_eq!(w.requests[0].prompt_tokens, expected);
        // No category: every line; oversampled up to --num-prompts.
        let cfg = SpecBenchConfig { category: None, ..cfg };
        let s = Sampling { num_prompts: 5, ..Sampling::default() };
        let w = generate_spec_bench(&cfg, &s, tok.as_ref()).unwrap();
        assert_eq!(w.len(), 5);
        assert!(texts(&w).contains(&"What is seven times six, exactly?".to_string()));
    }

    #[test]
    fn unknown_category_and_missing_turns_are_file_errors() {
        let (_d, path) = write(QUESTIONS);
        let tok = crate::load_tokenizer("cl100k_base").unwrap();
        let cfg = SpecBenchConfig {
            path,
            category: Some("coding".into()),
            output_len: 8,
            template: Default::default(),
        };
        let err = generate_spec_bench(&cfg, &Sampling::default(), tok.as_ref()).unwrap_err();
        assert_eq!(err.code(), servebench_core::ErrorCode::DatasetFile);
        assert!(err.to_string().contains("math_reasoning, writing"), "{err}");
        let (_d, path) = write("{\"category\": \"writing\", \"prompt\": \"x\"}\n");
        let cfg = SpecBenchConfig { path, category: None, output_len: 8, template: Default::default() };
        let err = generate_spec_bench(&cfg, &Sampling::default(), tok.as_ref()).unwrap_err();
        assert!(err.to_string().contains("line 1") && err.to_string().contains("turns"), "{err}");
    }
}
