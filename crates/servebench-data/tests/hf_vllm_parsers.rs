//! vLLM's dataset-specific hf parsers on the committed fixtures (fixtures/datasets/hf), each
//! selected by its dataset id: the prompt text and output lengths vLLM would produce.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use servebench_core::{ErrorCode, TextTokenizer, Workload};
use servebench_data::dataset::hf::{generate_hf, HfConfig, HfSource};
use servebench_data::dataset::Sampling;
use servebench_data::{load_tokenizer, HubEnv};
use std::path::PathBuf;
use std::sync::Arc;

fn tok() -> Arc<dyn TextTokenizer> {
    load_tokenizer("cl100k_base").unwrap()
}

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/datasets/hf").join(rel)
}

fn in_order(n: usize) -> Sampling {
    Sampling { num_prompts: n, seed: 0, shuffle: false, oversample: false }
}

fn local(rel: &str, id: &str, output_len: Option<usize>) -> HfConfig {
    HfConfig {
        source: HfSource::File(fixture(rel)),
        text_column: None,
        output_len,
        dataset_ids: vec![fixture(rel).to_string_lossy().into_owned(), id.to_string()],
    }
}

fn build(cfg: &HfConfig, n: usize) -> Workload {
    let env = HubEnv { offline: true, ..HubEnv::default() };
    generate_hf(cfg, &in_order(n), tok().as_ref(), &env).unwrap()
}

fn rows(w: &Workload) -> Vec<(String, u32, u32)> {
    w.requests
        .iter()
        .map(|r| (r.prompt.text().unwrap().to_string(), r.prompt_tokens, r.expected_output_tokens))
        .collect()
}

const AIMO: &str = "AI-MO/aimo-validation-aime/aimo_validation_aime.jsonl";
const CONV: &str = "Aeala/ShareGPT_Vicuna_unfiltered/ShareGPT_V4.3_unfiltered_cleaned_split.json";

#[test]
fn aimo_sends_the_problem_and_expects_the_solution_length() {
    let t = tok();
    let w = build(&local(AIMO, "AI-MO/aimo-validation-aime", None), 10);
    let got = rows(&w);
    // Row 1's solution "2" is under 4 tokens: vLLM's is_valid_sequence drops it.
    assert_eq!(got.len(), 2, "{got:?}");
    let first = "Find the number of positive integers $n \\le 100$ such that $n^2 + n$ is divisible by 6.";
    assert_eq!(got[0].0, first);
    assert_eq!(got[1].0, "A square has perimeter 36. What is its area?");
    let sol = "Each side is $36/4 = 9$, so the area is $9^2 = \\boxed{81}$.";
    assert_eq!(got[1].2 as usize, t.encode(sol, true).unwrap().len());
    assert_eq!(got[1].1 as usize, t.encode(&got[1].0, true).unwrap().len());
    assert_eq!((got[0].1, got[0].2, got[1].1, got[1].2), (28, 85, 12, 26));
}

#[test]
fn aimo_with_a_fixed_output_len_keeps_every_row() {
    let w = build(&local(AIMO, "AI-MO/NuminaMath-CoT", Some(64)), 10);
    let got = rows(&w);
    assert_eq!(got.len(), 3, "a fixed length disables the length filter");
    assert_eq!(got[1].0, "What is the remainder when $2^{10}$ is divided by 7?");
    assert!(got.iter().all(|r| r.2 == 64));
}

#[test]
fn conversation_sends_the_first_turn_and_drops_short_and_long_rows() {
    let t = tok();
    let w = build(&local(CONV, "Aeala/ShareGPT_Vicuna_unfiltered", None), 10);
    let got = rows(&w);
    // sb1 has one turn (always dropped); sb2's prompt is over 1024 tokens (dropped when the
    // output length comes from the completion).
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "Write a haiku about a benchmark that never ends.");
    let reply = "Requests keep arriving,\nlatency curves bend and rise,\nthe run has no end.";
    assert_eq!(got[0].2 as usize, t.encode(reply, true).unwrap().len());
    assert_eq!(got[1].0, "Name three prime numbers.");
    assert_eq!((got[1].1, got[1].2), (5, 6));
    let fixed = build(&local(CONV, "Aeala/ShareGPT_Vicuna_unfiltered", Some(50)), 10);
    assert_eq!(rows(&fixed).len(), 3, "only the one-turn row is dropped with a fixed length");
}

#[test]
fn a_row_outside_the_parser_schema_is_a_coded_file_error() {
    // The conversation fixture has no 'problem' column: read as AIMO it is malformed.
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let cfg = local(CONV, "AI-MO/aimo-validation-aime", None);
    let err = generate_hf(&cfg, &in_order(3), tok().as_ref(), &env).unwrap_err();
    assert_eq!(err.code(), ErrorCode::DatasetFile, "{err}");
    assert!(err.to_string().contains("problem"), "{err}");
}

#[test]
fn hf_text_column_does_not_apply_to_a_vllm_parser() {
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let cfg =
        HfConfig { text_column: Some("answer".into()), ..local(AIMO, "AI-MO/aimo-validation-aime", None) };
    let err = generate_hf(&cfg, &in_order(3), tok().as_ref(), &env).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FlagNotApplicable, "{err}");
}
