//! vLLM's dataset-specific hf parsers on the committed fixtures (fixtures/datasets/hf), each
//! selected by its dataset id: the prompt text and output lengths vLLM would produce.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use servebench_core::{ErrorCode, TextTokenizer, Workload};
use servebench_data::dataset::hf::{generate_hf, HfConfig, HfSource};
use servebench_data::dataset::Sampling;
use servebench_data::{load_tokenizer, HubEnv};
use servebench_testkit::fixtures;
use std::path::PathBuf;
use std::sync::Arc;

fn tok() -> Arc<dyn TextTokenizer> {
    load_tokenizer("cl100k_base").unwrap()
}

fn fixture(rel: &str) -> PathBuf {
    fixtures::fixture(&format!("datasets/hf/{rel}"))
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
        bfcl_categories: vec![],
        asr: Default::default(),
    }
}

fn build(cfg: &HfConfig, n: usize) -> Workload {
    build_with(cfg, n, tok().as_ref())
}

fn build_with(cfg: &HfConfig, n: usize, t: &dyn TextTokenizer) -> Workload {
    let env = HubEnv { offline: true, ..HubEnv::default() };
    generate_hf(cfg, &in_order(n), t, &env).unwrap()
}

/// SmolLM2's tokenizer with its chat template (fixtures/tokenizers/smollm2-135m).
fn smollm2() -> Arc<dyn TextTokenizer> {
    load_tokenizer(&fixtures::smollm2_tokenizer_arg()).unwrap()
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
fn a_chat_template_parser_without_a_tokenizer_template_is_sb206() {
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let cfg = local("philschmid/mt-bench/question.jsonl", "philschmid/mt-bench", None);
    let err = generate_hf(&cfg, &in_order(2), tok().as_ref(), &env).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ChatTemplateMissing, "{err}");
    let line = err.to_string();
    assert!(line.contains("MTBenchDataset") && line.contains("--skip-chat-template"), "{line}");
}

#[test]
fn chat_template_parsers_render_the_users_prompt_with_the_tokenizers_template() {
    let t = smollm2();
    let mut cfg = local("philschmid/mt-bench/question.jsonl", "philschmid/mt-bench", None);
    let w = build_with(&cfg, 1, t.as_ref());
    let want = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
                <|im_start|>user\nWrite a short travel note about a rainy day in a harbour town.<|im_end|>\n\
                <|im_start|>assistant\n";
    assert_eq!(w.requests[0].prompt.text(), Some(want), "sent as it is by a completions backend");
    assert_eq!(w.requests[0].prompt_tokens as usize, t.encode(want, true).unwrap().len());
    assert!(w.requests[0].messages.is_none());
    // With openai-chat the un-rendered user turn goes as the messages (the server renders).
    cfg.chat.chat_messages = true;
    let w = build_with(&cfg, 1, t.as_ref());
    let m: serde_json::Value = serde_json::from_str(&w.requests[0].messages.as_ref().unwrap().json).unwrap();
    let q = "Write a short travel note about a rainy day in a harbour town.";
    assert_eq!(m, serde_json::json!([{"role": "user", "content": q}]));
    assert_eq!(w.requests[0].prompt.text(), Some(want), "the count is the rendered prompt's");
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

#[test]
fn humaneval_sends_the_function_prompt_and_expects_256_tokens() {
    let t = tok();
    let cfg = skip_template(local("openai/openai_humaneval/test.jsonl", "openai/openai_humaneval", None));
    let got = rows(&build(&cfg, 2));
    let want = "def add(a: int, b: int) -> int:\n    \"\"\"Return the sum of a and b.\n    >>> add(2, 3)\n    5\n    \"\"\"\n";
    assert_eq!(got[0].0, want);
    assert_eq!(got[0].1 as usize, t.encode(want, true).unwrap().len());
    assert!(got.iter().all(|r| r.2 == 256), "{got:?}");
    let cfg = skip_template(local("openai/openai_humaneval/test.jsonl", "openai/openai_humaneval", Some(64)));
    assert!(rows(&build(&cfg, 2)).iter().all(|r| r.2 == 64));
}

#[test]
fn gsm8k_sends_the_question_and_expects_256_tokens() {
    let cfg = skip_template(local("openai/gsm8k/test.jsonl", "openai/gsm8k", None));
    let got = rows(&build(&cfg, 2));
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].0, "Tom reads 8 pages a day. How many pages does he read in two weeks?");
    assert!(got.iter().all(|r| r.2 == 256), "{got:?}");
    // Without --skip-chat-template vLLM renders the model's template: without one, SB206.
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let cfg = local("openai/gsm8k/test.jsonl", "openai/gsm8k", None);
    assert_eq!(
        generate_hf(&cfg, &in_order(2), tok().as_ref(), &env).unwrap_err().code(),
        ErrorCode::ChatTemplateMissing
    );
}

const BFCL_DIR: &str = "gorilla-llm/Berkeley-Function-Calling-Leaderboard";

fn bfcl(categories: &[&str]) -> HfConfig {
    let mut cfg = local(&format!("{BFCL_DIR}/BFCL_v3_simple.json"), BFCL_DIR, None);
    cfg.bfcl_categories = categories.iter().map(|c| c.to_string()).collect();
    cfg
}

#[test]
fn bfcl_interleaves_the_default_categories_and_sends_the_first_turn_with_tools() {
    let w = build(&bfcl(&[]), 10);
    // Round-robin over simple, live_simple, multiple; live_simple's row 1 has no question.
    let ids: Vec<String> = w.requests.iter().map(|r| r.prompt.text().unwrap().to_string()).collect();
    assert_eq!(
        ids,
        [
            "What is the area of a circle with radius 3.5?",
            "Find me a hotel in Lisbon for two nights.",
            "Add 4 and 9, then tell me if the sum is prime.",
            "Convert 20 degrees Celsius to Fahrenheit.",
        ]
    );
    let r = &w.requests[1];
    let messages: serde_json::Value = serde_json::from_str(&r.messages.as_ref().unwrap().json).unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages.as_array().unwrap().len(), 2);
    let o = r.overrides.as_ref().unwrap();
    assert_eq!(o.keys, ["tools", "tool_choice"]);
    let tools: serde_json::Value = serde_json::from_str(&format!("{{{}}}", o.json)).unwrap();
    assert_eq!(tools["tool_choice"], "auto");
    assert_eq!(tools["tools"][0]["type"], "function");
    assert_eq!(tools["tools"][0]["function"]["name"], "search_hotels", "one function object becomes a list");
    assert_eq!(tools["tools"][0]["function"]["parameters"]["type"], "object");
    let t = tok();
    let text = "You are a travel assistant.\nFind me a hotel in Lisbon for two nights.";
    assert_eq!(r.prompt_tokens as usize, t.encode(text, true).unwrap().len());
    assert!(w.requests.iter().all(|r| r.expected_output_tokens == 512));
}

#[test]
fn bfcl_prompt_tokens_count_the_chat_template_rendered_with_the_tools() {
    // A tool-aware template beside SmolLM2's tokenizer.json: the count is the rendered text's.
    let dir = tempfile::tempdir().unwrap();
    let src = fixtures::smollm2_tokenizer();
    std::fs::copy(&src, dir.path().join("tokenizer.json")).unwrap();
    let template = "{% if tools %}TOOLS {{ tools | tojson }}\n{% endif %}\
                    {% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}\
                    {% if add_generation_prompt %}[assistant]{% endif %}";
    std::fs::write(dir.path().join("chat_template.jinja"), template).unwrap();
    let t = load_tokenizer(dir.path().to_str().unwrap()).unwrap();
    let w = build_with(&bfcl(&[]), 10, t.as_ref());
    let r = &w.requests[1];
    let o = r.overrides.as_ref().unwrap();
    let body: serde_json::Value = serde_json::from_str(&format!("{{{}}}", o.json)).unwrap();
    let tools = servebench_data::tokenizer::py_json::dumps(&body["tools"], &Default::default());
    let want = format!(
        "TOOLS {tools}\n[system] You are a travel assistant.\n[user] Find me a hotel in Lisbon for two nights.\n[assistant]"
    );
    assert!(tools.starts_with(r#"[{""#) && tools.contains(r#""type": "function""#), "{tools}");
    assert_eq!(r.prompt_tokens as usize, t.encode(&want, true).unwrap().len());
    // A template that raises falls back to the joined text, as vLLM's except branch does.
    std::fs::write(dir.path().join("chat_template.jinja"), "{{ raise_exception('no tools here') }}").unwrap();
    let t = load_tokenizer(dir.path().to_str().unwrap()).unwrap();
    let r = &build_with(&bfcl(&[]), 10, t.as_ref()).requests[1];
    let text = "You are a travel assistant.\nFind me a hotel in Lisbon for two nights.";
    assert_eq!(r.prompt_tokens as usize, t.encode(text, true).unwrap().len());
}

#[test]
fn bfcl_categories_select_files_and_a_missing_one_is_named() {
    let w = build(&bfcl(&["multiple"]), 5);
    assert_eq!(w.len(), 1);
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let err = generate_hf(&bfcl(&["exec_simple"]), &in_order(2), tok().as_ref(), &env).unwrap_err();
    let line = err.to_string();
    assert!(
        line.contains("BFCL_v3_exec_simple.json") && line.contains("simple, live_simple, multiple"),
        "{line}"
    );
}

fn image_url_of(r: &servebench_core::RequestSpec) -> String {
    let part: serde_json::Value = serde_json::from_str(&r.multimodal.as_ref().unwrap()[0]).unwrap();
    assert_eq!(part["type"], "image_url");
    part["image_url"]["url"].as_str().unwrap().to_string()
}

#[test]
fn vision_arena_sends_the_first_user_message_and_its_image() {
    let t = tok();
    let w = build(&local("lmarena-ai/VisionArena-Chat/train.jsonl", "lmarena-ai/VisionArena-Chat", None), 5);
    let got = rows(&w);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].0, "What colour is the square in this picture?");
    assert_eq!(got[0].1 as usize, t.encode(&got[0].0, true).unwrap().len());
    assert!(got.iter().all(|r| r.2 == 128));
    // The fixture's PNG goes out re-encoded as an RGB JPEG, as vLLM's process_image sends it.
    assert!(image_url_of(&w.requests[0]).starts_with("data:image/jpeg;base64,/9j/"));
}

#[test]
fn mmstar_sends_the_question_without_options_and_its_image() {
    let w = build(&local("Lin-Chen/MMStar/val.jsonl", "Lin-Chen/MMStar", Some(16)), 5);
    let got = rows(&w);
    assert_eq!(got[0].0, "Which colour fills most of the image?");
    assert_eq!(got[1].0, "Is the shape a square?");
    assert!(got.iter().all(|r| r.2 == 16));
    assert!(image_url_of(&w.requests[1]).starts_with("data:image/jpeg;base64,/9j/"));
}

#[test]
fn llava_onevision_is_the_conversation_parser_with_the_rows_image() {
    let t = tok();
    let w =
        build(&local("lmms-lab/LLaVA-OneVision-Data/train.jsonl", "lmms-lab/LLaVA-OneVision-Data", None), 5);
    let got = rows(&w);
    assert_eq!(got.len(), 2, "a one-turn conversation is dropped: {got:?}");
    assert_eq!(got[0].0, "<image>\nWhat colour is the square in the picture?");
    let reply = "The square in the picture is green, a flat and even shade.";
    assert_eq!(got[0].2 as usize, t.encode(reply, true).unwrap().len());
    assert!(image_url_of(&w.requests[0]).starts_with("data:image/jpeg;base64,/9j/"));
    assert!(w.requests[1].multimodal.is_none(), "a row without an image is text only");
}

#[test]
fn asr_rows_become_audio_requests_filtered_by_duration() {
    let t = tok();
    let mut cfg = local("openslr/librispeech_asr/train.jsonl", "openslr/librispeech_asr", None);
    cfg.asr.tokenizer_name = "openai/whisper-large-v3".into();
    let w = build(&cfg, 5);
    let secs: Vec<f64> = w.requests.iter().map(|r| r.audio.as_ref().unwrap().seconds()).collect();
    assert_eq!(secs, [0.5, 1.0, 2.0]);
    let whisper = "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>";
    assert_eq!(w.requests[0].prompt.text(), Some(whisper));
    assert_eq!(w.requests[0].prompt_tokens as usize, t.encode(whisper, true).unwrap().len());
    assert!(w.requests.iter().all(|r| r.expected_output_tokens == 1024));
    cfg.asr.len_sec = (0.75, 1.5);
    cfg.asr.tokenizer_name = "some/model".into();
    let w = build(&cfg, 5);
    assert_eq!(w.len(), 1);
    assert_eq!(w.requests[0].audio.as_ref().unwrap().seconds(), 1.0);
    assert_eq!(w.requests[0].prompt.text(), Some(""));
}

#[test]
fn asr_flac_cells_are_decoded_and_sent_as_16bit_wav() {
    // The fixture's audio cells hold FLAC bytes, as LibriSpeech's Hub Parquet files do.
    let text = std::fs::read_to_string(fixture("openslr/librispeech_asr/train.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert!(first["audio"]["bytes"].as_str().unwrap().starts_with("ZkxhQw"), "base64 of fLaC");
    let w = build(&local("openslr/librispeech_asr/train.jsonl", "openslr/librispeech_asr", None), 3);
    for (r, secs) in w.requests.iter().zip([0.5, 1.0, 2.0]) {
        let clip = r.audio.as_ref().unwrap();
        let wav = &clip.wav;
        assert_eq!(&wav[0..4], b"RIFF");
        assert_eq!(u16::from_le_bytes([wav[20], wav[21]]), 1, "PCM");
        assert_eq!(u16::from_le_bytes([wav[22], wav[23]]), 1, "mono, as encoded");
        assert_eq!(u32::from_le_bytes([wav[24], wav[25], wav[26], wav[27]]), 8_000, "not resampled");
        assert_eq!(u16::from_le_bytes([wav[34], wav[35]]), 16, "16-bit");
        // The duration is the decoded samples': 8,000 frames a second, 2 bytes a frame.
        assert_eq!(clip.seconds(), secs);
        assert_eq!(wav.len() as f64, 44.0 + secs * 16_000.0);
    }
}

#[test]
fn asr_corrupt_audio_is_sb204_naming_the_file_and_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.jsonl");
    let good = std::fs::read_to_string(fixture("openslr/librispeech_asr/train.jsonl")).unwrap();
    let bad = serde_json::json!({"audio": {"bytes": "ZkxhQwAAACI=", "path": "x.flac"}, "text": "T"});
    std::fs::write(&path, format!("{}\n{bad}\n", good.lines().next().unwrap())).unwrap();
    let mut cfg = local("openslr/librispeech_asr/train.jsonl", "openslr/librispeech_asr", None);
    cfg.source = HfSource::File(path.clone());
    cfg.dataset_ids = vec![path.to_string_lossy().into_owned(), "openslr/librispeech_asr".into()];
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let err = generate_hf(&cfg, &in_order(2), tok().as_ref(), &env).unwrap_err();
    assert_eq!(err.code(), ErrorCode::DatasetFile);
    let line = err.to_string();
    assert!(line.contains("train.jsonl") && line.contains("line 2") && line.contains("FLAC"), "{line}");
}

#[test]
fn mlperf_renders_the_chat_template_over_system_and_question_and_filters_as_vllm() {
    let t = smollm2();
    let id = "mgoin/mlperf-inference-llama3.1-data";
    let w = build_with(&local("mgoin/mlperf-inference-llama3.1-data/train.jsonl", id, None), 5, t.as_ref());
    // Row 2's answer "Hi." is under 4 tokens: is_valid_sequence drops it.
    assert_eq!(w.len(), 1);
    let r = &w.requests[0];
    let q = "Explain in two sentences why the sky looks blue during the day.";
    let system = "You are a helpful assistant who answers briefly.";
    let want = format!(
        "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(r.prompt.text(), Some(want.as_str()), "the rendered text, sent by completions backends");
    assert_eq!(r.prompt_tokens as usize, t.encode(&want, true).unwrap().len());
    assert!(r.messages.is_none());
    let answer = "Sunlight is scattered by the molecules of the air, and blue light is scattered much more than red light. So blue reaches our eyes from every direction of the sky.";
    assert_eq!(r.expected_output_tokens as usize, t.encode(answer, false).unwrap().len());
    // A fixed output length is still filtered (vLLM checks the fixed length too): 2 < 4.
    let w =
        build_with(&local("mgoin/mlperf-inference-llama3.1-data/train.jsonl", id, Some(50)), 5, t.as_ref());
    assert_eq!(w.len(), 2, "a fixed length of 50 keeps the short answer's row");
    // openai-chat: the two messages un-rendered; the server renders its template once.
    let mut cfg = local("mgoin/mlperf-inference-llama3.1-data/train.jsonl", id, None);
    cfg.chat.chat_messages = true;
    let w = build_with(&cfg, 5, t.as_ref());
    let m: serde_json::Value = serde_json::from_str(&w.requests[0].messages.as_ref().unwrap().json).unwrap();
    assert_eq!(m[0], serde_json::json!({"role": "system", "content": system}));
    assert_eq!(m[1], serde_json::json!({"role": "user", "content": q}));
    // A tokenizer without a template: SB206 (vLLM's apply_chat_template raises).
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let err = generate_hf(&cfg, &in_order(2), tok().as_ref(), &env).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ChatTemplateMissing, "{err}");
}

#[test]
fn mmvu_sends_the_question_with_its_choices_and_a_local_video_url() {
    let w = build(&local("yale-nlp/MMVU/validation.json", "yale-nlp/MMVU", None), 5);
    let got = rows(&w);
    assert_eq!(
        got[0].0,
        "Which way does the ball roll after it leaves the ramp? A.Left B.Right C.It stops D.Upward"
    );
    assert!(got.iter().all(|r| r.2 == 128));
    let part: serde_json::Value =
        serde_json::from_str(&w.requests[1].multimodal.as_ref().unwrap()[0]).unwrap();
    assert_eq!(part["type"], "video_url");
    let url = part["video_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("file:///") && url.ends_with("/yale-nlp/MMVU/videos/Chemistry/1.mp4"), "{url}");
}
