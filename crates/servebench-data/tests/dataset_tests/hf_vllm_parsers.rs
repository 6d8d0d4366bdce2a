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
        chat: Default::default(),
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

fn skip_template(mut cfg: HfConfig) -> HfConfig {
    cfg.chat.skip_chat_template = true;
    cfg
}

#[test]
fn instructcoder_appends_vllm_instruction_and_expects_200_tokens() {
    let t = tok();
    let w =
        build(&skip_template(local("likaixin/InstructCoder/train.jsonl", "likaixin/InstructCoder", None)), 2);
    let got = rows(&w);
    let want = "x = 0\nfor item in items:\n    x += 1\n\nRename the variable 'x' to 'count'. Just output the code, do not include any explanation.";
    assert_eq!(got[0].0, want);
    assert_eq!(got[0].1 as usize, t.encode(want, true).unwrap().len());
    assert!(got.iter().all(|r| r.2 == 200), "{got:?}");
}

#[test]
fn mt_bench_sends_the_first_turn_and_expects_256_tokens() {
    let w = build(
        &skip_template(local("philschmid/mt-bench/question.jsonl", "philschmid/mt-bench", Some(99))),
        2,
    );
    let got = rows(&w);
    assert_eq!(got[0].0, "Write a short travel note about a rainy day in a harbour town.");
    assert!(got.iter().all(|r| r.2 == 99), "--hf-output-len replaces 256");
    let w =
        build(&skip_template(local("philschmid/mt-bench/question.jsonl", "philschmid/mt-bench", None)), 2);
    assert!(rows(&w).iter().all(|r| r.2 == 256));
}

#[test]
fn blazedit_filters_by_norm_distance_and_uses_vllm_template() {
    let mut cfg = skip_template(local("vdaita/edit_5k_char/train.jsonl", "vdaita/edit_5k_char", None));
    cfg.chat.blazedit_distance = (0.2, 0.5);
    let got = rows(&build(&cfg, 5));
    assert_eq!(got.len(), 1, "only norm_distance 0.45 is within [0.2, 0.5]");
    let want = "Given a code file, please apply the change requests and generate the new file.\n\nOriginal file:\n```python\nprint('hello')\n```\n\nChange request:\nPrint the greeting in upper case.\n\nPlease generate the new code file in the \"New file\" section below.";
    assert_eq!(got[0].0, want);
    assert_eq!(got[0].2, 4000);
    cfg.chat.blazedit_distance = (0.0, 1.0);
    assert_eq!(rows(&build(&cfg, 5)).len(), 3);
}

#[test]
fn a_chat_template_parser_without_skip_chat_template_is_refused_with_sb114() {
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let cfg = local("philschmid/mt-bench/question.jsonl", "philschmid/mt-bench", None);
    let err = generate_hf(&cfg, &in_order(2), tok().as_ref(), &env).unwrap_err();
    assert_eq!(err.code(), ErrorCode::HfParserMissing, "{err}");
    assert!(err.to_string().contains("--skip-chat-template"), "{err}");
}

#[test]
fn zeta_formats_the_next_edit_prompt_and_counts_the_editable_region() {
    let t = tok();
    let w = build(&local("zed-industries/zeta/train.jsonl", "zed-industries/zeta", None), 5);
    let got = rows(&w);
    assert_eq!(got.len(), 2, "vLLM keeps every zeta row");
    let want = "### Instruction:\nYou are a code completion assistant and your task is to analyze user edits and then rewrite an excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking into account the cursor location.\n\n### User Edits:\n\nUser edited \"lib.py\":\n```diff\n+import os\n```\n\n### User Excerpt:\n\n```lib.py\nimport os\n```\n\n### Response:\n\n";
    assert_eq!(got[1].0, want);
    let region =
        "<|editable_region_start|>\nlet count = 1;\nprintln!(\"{}\", count);\n<|editable_region_end|>\n```";
    assert_eq!(got[0].2 as usize, t.encode(region, true).unwrap().len());
    // No marker: Python's find gives -1, and output[-1:] is the last character.
    assert_eq!(got[1].2 as usize, t.encode(".", true).unwrap().len());
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let fixed = local("zed-industries/zeta/train.jsonl", "zed-industries/zeta", Some(10));
    let err = generate_hf(&fixed, &in_order(2), t.as_ref(), &env).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FlagNotApplicable, "vLLM ignores the output length here: {err}");
}
