//! Every dataset built from the committed small files in `tests/data` (or the built-in text),
//! with the built-in `cl100k_base` encoding (no network, no special tokens).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use servebench_core::{ErrorCode, TextTokenizer, Workload};
use servebench_data::dataset::custom::{generate_custom, CustomConfig};
use servebench_data::dataset::hf::{generate_hf, HfConfig, HfSource};
use servebench_data::dataset::prefix_repetition::{generate_prefix_repetition, PrefixRepetitionConfig};
use servebench_data::dataset::random_mm::{generate_random_mm, parse_bucket_config, RandomMmConfig};
use servebench_data::dataset::random_rerank::{generate_random_rerank, RandomRerankConfig};
use servebench_data::dataset::sharegpt::{generate_sharegpt, ShareGptConfig};
use servebench_data::dataset::sonnet::{generate_sonnet, SonnetConfig, BASE_PROMPT, BUILTIN_SONNETS};
use servebench_data::dataset::speed_bench::{generate_speed_bench, SpeedBenchConfig};
use servebench_data::dataset::{DatasetStats, Sampling};
use servebench_data::random::RandomDatasetConfig;
use servebench_data::{load_tokenizer, HubEnv};
use std::path::PathBuf;
use std::sync::Arc;

fn tok() -> Arc<dyn TextTokenizer> {
    load_tokenizer("cl100k_base").unwrap()
}

fn data(name: &str) -> PathBuf {
    servebench_testkit::fixtures::dataset(name)
}

fn offline() -> HubEnv {
    HubEnv { offline: true, ..HubEnv::default() }
}

fn sampling(n: usize) -> Sampling {
    Sampling { num_prompts: n, seed: 0, shuffle: true, oversample: true }
}

fn prompts(w: &Workload) -> Vec<String> {
    w.requests.iter().map(|r| r.prompt.text().unwrap().to_string()).collect()
}

fn exact_counts(w: &Workload, t: &dyn TextTokenizer) {
    for r in &w.requests {
        let n = t.encode(r.prompt.text().unwrap(), true).unwrap().len();
        assert_eq!(r.prompt_tokens as usize, n, "{:?}", r.prompt);
    }
}

#[test]
fn sharegpt_filters_as_vllm_and_counts_exactly() {
    let t = tok();
    let cfg = ShareGptConfig { path: Some(data("sharegpt_small.json")), output_len: None };
    let s = Sampling { oversample: false, ..sampling(100) };
    let w = generate_sharegpt(&cfg, &s, t.as_ref(), &offline()).unwrap();
    let mut got = prompts(&w);
    got.sort();
    // Dropped: "Hi" (prompt < 4 tokens), one message only, "Ok." reply (< 4 tokens), the
    // 1100-word prompt (> 1024 tokens), an empty conversation.
    assert_eq!(
        got,
        vec![
            "Explain how a hash map works in a few sentences.".to_string(),
            "What is the capital of France, and why is it famous?".to_string(),
        ]
    );
    exact_counts(&w, t.as_ref());
    let hash_map = w.requests.iter().find(|r| r.prompt.text().unwrap().starts_with("Explain")).unwrap();
    let reply = "A hash map stores key value pairs in buckets chosen by a hash of the key.";
    assert_eq!(hash_map.expected_output_tokens as usize, t.encode(reply, true).unwrap().len());
}

#[test]
fn sharegpt_fixed_output_keeps_short_replies_and_oversamples() {
    let t = tok();
    let cfg = ShareGptConfig { path: Some(data("sharegpt_small.json")), output_len: Some(7) };
    let w = generate_sharegpt(&cfg, &sampling(10), t.as_ref(), &offline()).unwrap();
    assert_eq!(w.len(), 10, "oversampled with replacement up to --num-prompts");
    assert!(w.requests.iter().all(|r| r.expected_output_tokens == 7));
    let distinct: std::collections::BTreeSet<_> = prompts(&w).into_iter().collect();
    // With the output fixed, the "Ok." reply no longer disqualifies its prompt.
    assert_eq!(distinct.len(), 3, "{distinct:?}");
    assert_eq!(w.requests.iter().map(|r| r.index).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
}

#[test]
fn sharegpt_is_seeded_and_shuffle_can_be_disabled() {
    let t = tok();
    let cfg = ShareGptConfig { path: Some(data("sharegpt_small.json")), output_len: Some(5) };
    let a = generate_sharegpt(&cfg, &sampling(3), t.as_ref(), &offline()).unwrap();
    let b = generate_sharegpt(&cfg, &sampling(3), t.as_ref(), &offline()).unwrap();
    assert_eq!(a, b);
    let ordered = Sampling { shuffle: false, ..sampling(3) };
    let w = generate_sharegpt(&cfg, &ordered, t.as_ref(), &offline()).unwrap();
    assert_eq!(
        prompts(&w),
        vec![
            "Explain how a hash map works in a few sentences.",
            "Write a haiku about the sea and the wind.",
            "What is the capital of France, and why is it famous?",
        ],
        "file order with --disable-shuffle"
    );
}

#[test]
fn sharegpt_without_path_offline_is_a_coded_error() {
    let dir = tempfile::tempdir().unwrap();
    let env = HubEnv { cache_dir: Some(dir.path().to_path_buf()), offline: true, ..HubEnv::default() };
    let cfg = ShareGptConfig { path: None, output_len: None };
    let err = generate_sharegpt(&cfg, &sampling(1), tok().as_ref(), &env).unwrap_err();
    assert_eq!(err.code(), ErrorCode::DatasetDownload);
}

#[test]
fn custom_uses_per_line_or_fixed_output() {
    let t = tok();
    let per_line =
        CustomConfig { path: data("custom_small.jsonl"), output_len: None, template: Default::default() };
    let w = generate_custom(&per_line, &Sampling { shuffle: false, ..sampling(3) }, t.as_ref()).unwrap();
    assert_eq!(w.requests.iter().map(|r| r.expected_output_tokens).collect::<Vec<_>>(), vec![40, 12, 20]);
    assert_eq!(w.requests[1].prompt.text(), Some("List three prime numbers greater than one hundred."));
    exact_counts(&w, t.as_ref());
    let fixed = CustomConfig { output_len: Some(256), ..per_line };
    let w = generate_custom(&fixed, &Sampling { oversample: false, ..sampling(50) }, t.as_ref()).unwrap();
    assert_eq!(w.len(), 3, "--no-oversample keeps the file's count");
    assert!(w.requests.iter().all(|r| r.expected_output_tokens == 256));
}

#[test]
fn sonnet_builtin_prompts_share_the_prefix_and_fit_the_input_len() {
    let t = tok();
    let cfg = SonnetConfig::default();
    let w = generate_sonnet(&cfg, &sampling(20), t.as_ref()).unwrap();
    assert_eq!(w.len(), 20);
    let first_line = BUILTIN_SONNETS.lines().next().unwrap();
    for r in &w.requests {
        let p = r.prompt.text().unwrap();
        assert!(p.starts_with(&format!("{BASE_PROMPT}{first_line}\n")), "{p}");
        assert!(r.prompt_tokens <= 550 && r.prompt_tokens > 400, "{}", r.prompt_tokens);
        assert_eq!(r.expected_output_tokens, 150);
    }
    exact_counts(&w, t.as_ref());
    assert_eq!(w, generate_sonnet(&cfg, &sampling(20), t.as_ref()).unwrap(), "seeded");
    assert_ne!(w, generate_sonnet(&cfg, &Sampling { seed: 1, ..sampling(20) }, t.as_ref()).unwrap());
}

/// SmolLM2's template opens every conversation without a system turn with this one.
const SMOL_SYSTEM: &str =
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n";

/// vLLM renders every sonnet prompt with the chat template for a backend other than
/// `openai-chat`, and counts the rendered text; a tokenizer without a template is SB206.
#[test]
fn sonnet_prompts_are_rendered_with_the_chat_template_for_completions_backends() {
    let smol = load_tokenizer(&servebench_testkit::fixtures::smollm2_tokenizer_arg()).unwrap();
    let render = servebench_data::dataset::chat_render::PromptTemplate { render: true, ..Default::default() };
    let cfg = SonnetConfig { template: render, ..SonnetConfig::default() };
    let w = generate_sonnet(&cfg, &sampling(5), smol.as_ref()).unwrap();
    for r in &w.requests {
        let p = r.prompt.text().unwrap();
        assert!(p.starts_with(&format!("{SMOL_SYSTEM}<|im_start|>user\n{BASE_PROMPT}")), "{p}");
        assert!(p.ends_with("<|im_end|>\n<|im_start|>assistant\n"), "ChatML around the drawn prompt: {p}");
        assert_eq!(
            r.prompt_tokens as usize,
            smol.encode(p, true).unwrap().len(),
            "the rendered text is counted"
        );
        assert!(r.prompt_tokens <= 550);
    }
    let e = generate_sonnet(&cfg, &sampling(2), tok().as_ref()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::ChatTemplateMissing, "{e}");
}

/// Issue 23 item 10: `--sonnet-input-len 300` with `openai-chat` gave prompts the server counted
/// at 320 tokens on average: the client counted the bare prompt, the server the prompt in its
/// chat template. As vLLM, the length now counts the rendered prompt (the server's count) while
/// the bare prompt is sent as the user turn.
#[test]
fn sonnet_input_len_counts_the_chat_template_for_openai_chat_as_vllm() {
    let smol = load_tokenizer(&servebench_testkit::fixtures::smollm2_tokenizer_arg()).unwrap();
    let chat = servebench_data::dataset::chat_render::PromptTemplate {
        render: true,
        kwargs: None,
        chat_messages: true,
    };
    let cfg = SonnetConfig { input_len: 300, template: chat, ..SonnetConfig::default() };
    let w = generate_sonnet(&cfg, &sampling(20), smol.as_ref()).unwrap();
    let mut total = 0u64;
    for r in &w.requests {
        let rendered = r.prompt.text().unwrap();
        assert!(rendered.starts_with(SMOL_SYSTEM), "{rendered}");
        assert_eq!(r.prompt_tokens as usize, smol.encode(rendered, true).unwrap().len());
        assert!(r.prompt_tokens <= 300, "{}", r.prompt_tokens);
        total += u64::from(r.prompt_tokens);
    }
    // The line budget is spent against the rendered length: the mean lands just under 300.
    let mean = total as f64 / 20.0;
    assert!(mean > 250.0 && mean <= 300.0, "{mean}");
}

/// `--skip-chat-template` with the sonnet dataset used to fail with SB206 all the same on a
/// tokenizer without a template (the embedded simulator's cl100k_base): it now counts and sends
/// the bare prompt.
#[test]
fn sonnet_with_skip_chat_template_needs_no_template() {
    let bare = servebench_data::dataset::chat_render::PromptTemplate::default();
    let cfg = SonnetConfig { input_len: 300, template: bare, ..SonnetConfig::default() };
    let t = tok();
    let w = generate_sonnet(&cfg, &sampling(10), t.as_ref()).unwrap();
    for r in &w.requests {
        let p = r.prompt.text().unwrap();
        assert!(p.starts_with(BASE_PROMPT), "{p}");
        assert!(r.prompt_tokens <= 300);
    }
    exact_counts(&w, t.as_ref());
}

#[test]
fn sonnet_reads_a_text_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("verse.txt");
    std::fs::write(&p, "Roses are red and the violets are blue\nSugar is sweet and so are you\n").unwrap();
    let cfg = SonnetConfig {
        path: Some(p),
        input_len: 60,
        output_len: 5,
        prefix_len: 0,
        ..SonnetConfig::default()
    };
    let w = generate_sonnet(&cfg, &sampling(4), tok().as_ref()).unwrap();
    assert!(w
        .requests
        .iter()
        .all(|r| r.prompt.text().unwrap().contains("Roses") || r.prompt.text().unwrap().contains("Sugar")));
    assert!(w.requests.iter().all(|r| r.prompt_tokens <= 60));
}

/// A text whose every line is longer than `--sonnet-input-len` leaves room for no drawn line:
/// the prompts were the bare instruction (13 tokens for an asked 300), sent without a word.
#[test]
fn a_text_whose_lines_never_fit_the_input_len_is_refused_not_sent_as_the_instruction() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("long.txt");
    let line = "the quick brown fox jumps over the lazy dog ".repeat(60);
    std::fs::write(&p, format!("{line}\n{line}\n")).unwrap();
    let cfg = SonnetConfig {
        path: Some(p),
        input_len: 300,
        output_len: 5,
        prefix_len: 0,
        ..SonnetConfig::default()
    };
    let e = generate_sonnet(&cfg, &sampling(3), tok().as_ref()).unwrap_err();
    assert_eq!(e.code().as_str(), "SB101", "{e}");
    assert!(
        e.to_string().contains("--sonnet-input-len")
            && e.to_string().contains("cannot hold the instruction, the prefix and one line"),
        "{e}"
    );
}

/// One short line among long ones: a request whose random draws all missed it was refused
/// ("no line of the text fits") depending on the seed. Such a request now takes the shortest
/// line, so every seed builds prompts of the instruction plus a line, within the input length.
#[test]
fn a_text_with_one_short_line_builds_every_prompt_whatever_the_seed() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mixed.txt");
    let long = "the quick brown fox jumps over the lazy dog ".repeat(60);
    let text = format!("{}Shall I compare thee to a summer's day?\n", format!("{long}\n").repeat(19));
    std::fs::write(&p, text).unwrap();
    let cfg = SonnetConfig {
        path: Some(p),
        input_len: 40,
        output_len: 5,
        prefix_len: 0,
        ..SonnetConfig::default()
    };
    for seed in 0..8 {
        let w = generate_sonnet(&cfg, &Sampling { seed, ..sampling(10) }, tok().as_ref()).unwrap();
        for r in &w.requests {
            assert!(r.prompt.text().unwrap().contains("summer's day"), "seed {seed}");
            assert!(r.prompt_tokens <= 40, "seed {seed}: {}", r.prompt_tokens);
        }
    }
}

#[test]
fn prefix_repetition_shares_exact_prefixes() {
    let t = tok();
    let cfg = PrefixRepetitionConfig { prefix_len: 32, suffix_len: 16, num_prefixes: 3, output_len: 9 };
    let w = generate_prefix_repetition(&cfg, &sampling(10), t.as_ref()).unwrap();
    assert_eq!(w.len(), 9, "10 / 3 prefixes = 3 each, remainder dropped as vLLM does");
    let mut by_prefix = std::collections::BTreeMap::new();
    for r in &w.requests {
        let ids = t.encode(r.prompt.text().unwrap(), false).unwrap();
        assert_eq!(ids.len(), 48);
        assert_eq!(r.prompt_tokens, 48);
        assert_eq!(r.expected_output_tokens, 9);
        *by_prefix.entry(ids[..32].to_vec()).or_insert(0) += 1;
    }
    assert_eq!(by_prefix.values().copied().collect::<Vec<_>>(), vec![3, 3, 3]);
}

#[test]
fn random_mm_attaches_jpeg_images_of_the_bucket_sizes() {
    let t = tok();
    let cfg = RandomMmConfig {
        text: RandomDatasetConfig {
            num_prompts: 6,
            input_len: 20,
            output_len: 4,
            ..RandomDatasetConfig::default()
        },
        base_items: 2,
        items_range_ratio: 0.0,
        limit_image: 255,
        limit_video: 1,
        buckets: parse_bucket_config("{(16, 24, 1): 1.0, (720, 1280, 16): 0.0}").unwrap(),
    };
    let w = generate_random_mm(&cfg, t.as_ref()).unwrap();
    use base64::Engine;
    for r in &w.requests {
        let parts = r.multimodal.as_ref().unwrap();
        assert_eq!(parts.len(), 2);
        for p in parts.iter() {
            let v: serde_json::Value = serde_json::from_str(p).unwrap();
            assert_eq!(v["type"], "image_url");
            let url = v["image_url"]["url"].as_str().unwrap();
            let b64 = url.strip_prefix("data:image/jpeg;base64,").unwrap();
            let jpeg = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
            assert_eq!(&jpeg[..2], &[0xFF, 0xD8], "JPEG SOI marker");
            assert_eq!(jpeg_size(&jpeg), Some((24, 16)), "width x height of the bucket");
        }
        assert_eq!(r.prompt_tokens, 20, "text tokens only");
    }
    assert_eq!(w, generate_random_mm(&cfg, t.as_ref()).unwrap(), "seeded");
    // The limit caps the range the count is drawn from ([1, 3] with r = 0.5, capped at 2).
    let limited = RandomMmConfig { limit_image: 2, items_range_ratio: 0.5, ..cfg.clone() };
    let w = generate_random_mm(&limited, t.as_ref()).unwrap();
    assert!(w.requests.iter().all(|r| (1..=2).contains(&r.multimodal.as_ref().unwrap().len())));
    assert!(DatasetStats::of(&w).multimodal_items >= 6);
}

/// `--enable-multimodal-chat`: the whole `messages` array is built with the workload — the text
/// part then the images — and the parts move into it.
#[test]
fn multimodal_chat_prebuilds_the_messages_of_every_request() {
    use servebench_core::ChatMessages;
    use servebench_data::dataset::{build_dataset, DatasetKind, DatasetRequest};
    let t = tok();
    let cfg = RandomMmConfig {
        text: RandomDatasetConfig {
            num_prompts: 4,
            input_len: 12,
            output_len: 3,
            ..RandomDatasetConfig::default()
        },
        base_items: 2,
        items_range_ratio: 0.0,
        limit_image: 255,
        limit_video: 1,
        buckets: parse_bucket_config("{(8, 8, 1): 1.0}").unwrap(),
    };
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let plain = DatasetRequest::new(DatasetKind::RandomMm(cfg), Sampling::default());
    let chat = DatasetRequest { multimodal_chat: true, ..plain.clone() };
    let (a, b) =
        (build_dataset(&plain, t.as_ref(), &env).unwrap(), build_dataset(&chat, t.as_ref(), &env).unwrap());
    assert_eq!(a.len(), b.len());
    for (p, c) in a.requests.iter().zip(&b.requests) {
        let parts = p.multimodal.as_ref().unwrap();
        let expected = ChatMessages::user_turn(p.prompt.text().unwrap(), parts).unwrap();
        assert_eq!(c.messages.as_ref(), Some(&expected));
        assert!(c.multimodal.is_none(), "the parts live in the messages only");
        assert_eq!(
            (c.prompt_tokens, c.prompt.text(), c.media_items()),
            (p.prompt_tokens, p.prompt.text(), 2)
        );
    }
    assert_eq!(DatasetStats::of(&b).multimodal_items, 8);
    // A text dataset (sharegpt) gets one text part per message.
    let sharegpt = DatasetRequest {
        kind: DatasetKind::ShareGpt(ShareGptConfig {
            path: Some(data("sharegpt_small.json")),
            output_len: Some(5),
        }),
        sampling: sampling(3),
        multimodal_chat: true,
    };
    let w = build_dataset(&sharegpt, t.as_ref(), &env).unwrap();
    let m: serde_json::Value = serde_json::from_str(&w.requests[0].messages.as_ref().unwrap().json).unwrap();
    assert_eq!(m[0]["content"].as_array().unwrap().len(), 1);
    assert_eq!(m[0]["content"][0]["text"].as_str(), w.requests[0].prompt.text());
    assert!(sharegpt.kind.takes_multimodal_chat());
    let custom = DatasetKind::Custom(CustomConfig {
        path: data("custom_small.jsonl"),
        output_len: None,
        template: Default::default(),
    });
    assert!(!custom.takes_multimodal_chat(), "vLLM's custom dataset has no multimodal chat form");
}

/// (width, height) from a baseline JPEG's SOF0 segment.
fn jpeg_size(j: &[u8]) -> Option<(u16, u16)> {
    let mut i = 2;
    while i + 9 < j.len() {
        if j[i] != 0xFF {
            return None;
        }
        let marker = j[i + 1];
        let len = u16::from_be_bytes([j[i + 2], j[i + 3]]) as usize;
        if (0xC0..=0xC2).contains(&marker) {
            let h = u16::from_be_bytes([j[i + 5], j[i + 6]]);
            let w = u16::from_be_bytes([j[i + 7], j[i + 8]]);
            return Some((w, h));
        }
        i += 2 + len;
    }
    None
}

#[test]
fn random_mm_refuses_video_buckets() {
    let cfg = RandomMmConfig {
        text: RandomDatasetConfig {
            num_prompts: 1,
            input_len: 8,
            output_len: 4,
            ..RandomDatasetConfig::default()
        },
        base_items: 1,
        items_range_ratio: 0.0,
        limit_image: 1,
        limit_video: 1,
        buckets: parse_bucket_config("{(256, 256, 1): 0.5, (720, 1280, 16): 0.5}").unwrap(),
    };
    let err = generate_random_mm(&cfg, tok().as_ref()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FlagNotSupported);
    assert!(err.to_string().contains("video"), "{err}");
}

#[test]
fn random_rerank_builds_query_and_documents() {
    let t = tok();
    let cfg = RandomRerankConfig {
        num_prompts: 4,
        input_len: 40,
        range_ratio: 0.0,
        batch_size: 3,
        no_reranker: false,
        seed: 0,
    };
    let w = generate_random_rerank(&cfg, t.as_ref()).unwrap();
    assert_eq!(w.len(), 4);
    let query_len = 40 / 2 - 1;
    let doc_len = 40 - query_len - 1;
    for r in &w.requests {
        let rr = r.rerank.as_ref().unwrap();
        assert_eq!(rr.documents.len(), 3);
        assert_eq!(t.count(&rr.query).unwrap(), query_len);
        assert!(rr.documents.iter().all(|d| t.count(d).unwrap() == doc_len));
        assert_eq!(r.prompt_tokens as usize, (query_len + 1) * 3 + 3 * doc_len);
        assert_eq!(r.expected_output_tokens, 0);
    }
    assert_eq!(w.requests[0].rerank.as_ref().unwrap().query, w.requests[3].rerank.as_ref().unwrap().query);
    let nr = RandomRerankConfig { no_reranker: true, ..cfg.clone() };
    let w = generate_random_rerank(&nr, t.as_ref()).unwrap();
    assert!(w.requests.iter().all(|r| r.rerank.as_ref().unwrap().documents.len() == 2));
    let bad = RandomRerankConfig { no_reranker: true, batch_size: 1, ..cfg };
    assert_eq!(generate_random_rerank(&bad, t.as_ref()).unwrap_err().code(), ErrorCode::ConfigInvalid);
}

#[test]
fn speed_bench_filters_rows() {
    let t = tok();
    let cfg = SpeedBenchConfig {
        path: Some(data("speed_bench_small.jsonl")),
        subset: "qualitative".into(),
        category: None,
        output_len: 4096,
        max_input_len: None,
        template: Default::default(),
    };
    let s = Sampling { oversample: false, ..sampling(10) };
    let w = generate_speed_bench(&cfg, &s, t.as_ref(), &offline()).unwrap();
    assert_eq!(w.len(), 2, "masked, multi-turn and empty rows are skipped");
    assert!(w.requests.iter().all(|r| r.expected_output_tokens == 4096));
    let math = SpeedBenchConfig { category: Some("math".into()), ..cfg };
    let w = generate_speed_bench(&math, &s, t.as_ref(), &offline()).unwrap();
    assert_eq!(prompts(&w), vec!["Compute the derivative of x squared plus three x, step by step."]);
    exact_counts(&w, t.as_ref());
}

/// vllm-rs's `--speed-bench-max-input-len N`: a prompt longer than N tokens is cut to its first
/// N tokens (decoded back to text); a shorter one is sent as it is.
#[test]
fn speed_bench_max_input_len_truncates_longer_prompts_to_their_first_n_tokens() {
    let t = tok();
    let base = SpeedBenchConfig {
        path: Some(data("speed_bench_small.jsonl")),
        subset: "qualitative".into(),
        category: Some("math".into()),
        output_len: 8,
        max_input_len: None,
        template: Default::default(),
    };
    let s = Sampling { oversample: false, ..sampling(10) };
    let full = prompts(&generate_speed_bench(&base, &s, t.as_ref(), &offline()).unwrap()).remove(0);
    let ids = t.encode(&full, false).unwrap();
    assert!(ids.len() > 6, "the fixture prompt is longer than the cap");
    let cut = SpeedBenchConfig { max_input_len: Some(6), ..base.clone() };
    let w = generate_speed_bench(&cut, &s, t.as_ref(), &offline()).unwrap();
    let expected = t.decode(&ids[..6], true).unwrap();
    assert_eq!(prompts(&w), vec![expected.clone()]);
    assert!(full.starts_with(&expected));
    exact_counts(&w, t.as_ref());
    let roomy = SpeedBenchConfig { max_input_len: Some(ids.len()), ..base };
    let w = generate_speed_bench(&roomy, &s, t.as_ref(), &offline()).unwrap();
    assert_eq!(prompts(&w), vec![full.clone()], "a prompt within the cap is untouched");
}

#[test]
fn hf_local_jsonl_detects_question_and_answer() {
    let t = tok();
    let cfg = HfConfig {
        source: HfSource::File(data("hf_small.jsonl")),
        text_column: None,
        output_len: None,
        dataset_ids: vec![],
        chat: Default::default(),
        bfcl_categories: vec![],
        asr: Default::default(),
    };
    let s = Sampling { shuffle: false, oversample: false, ..sampling(10) };
    let w = generate_hf(&cfg, &s, t.as_ref(), &offline()).unwrap();
    assert_eq!(w.len(), 3, "'Yes?' is under 4 tokens and skipped");
    assert_eq!(
        w.requests[0].expected_output_tokens as usize,
        t.encode("It boils at one hundred degrees Celsius.", true).unwrap().len()
    );
    exact_counts(&w, t.as_ref());
    let fixed = HfConfig { output_len: Some(33), ..cfg.clone() };
    assert!(generate_hf(&fixed, &s, t.as_ref(), &offline())
        .unwrap()
        .requests
        .iter()
        .all(|r| r.expected_output_tokens == 33));
    let by_answer = HfConfig { text_column: Some("answer".into()), ..cfg };
    let w = generate_hf(&by_answer, &s, t.as_ref(), &offline()).unwrap();
    assert_eq!(w.requests[0].prompt.text(), Some("It boils at one hundred degrees Celsius."));
}

#[test]
fn hf_local_json_chat_messages() {
    let t = tok();
    let cfg = HfConfig {
        source: HfSource::File(data("hf_chat.json")),
        text_column: None,
        output_len: None,
        dataset_ids: vec![],
        chat: Default::default(),
        bfcl_categories: vec![],
        asr: Default::default(),
    };
    let s = Sampling { shuffle: false, oversample: false, ..sampling(10) };
    let w = generate_hf(&cfg, &s, t.as_ref(), &offline()).unwrap();
    assert_eq!(
        prompts(&w),
        vec![
            "Tell me a fun fact about octopuses and their hearts.",
            "Why is the sky blue during a clear day?"
        ]
    );
    assert_eq!(
        w.requests[0].expected_output_tokens as usize,
        t.encode("Octopuses have three hearts.", true).unwrap().len()
    );
}

#[test]
fn hf_local_parquet() {
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.parquet");
    let schema = Arc::new(
        parse_message_type(
            "message rows { REQUIRED BYTE_ARRAY instruction (UTF8); REQUIRED BYTE_ARRAY output (UTF8); }",
        )
        .unwrap(),
    );
    let mut writer = SerializedFileWriter::new(
        std::fs::File::create(&path).unwrap(),
        schema,
        Arc::new(WriterProperties::builder().build()),
    )
    .unwrap();
    let mut rg = writer.next_row_group().unwrap();
    let columns = [
        vec!["Describe a sunrise over the mountains in one line.", "Give two synonyms for the word happy."],
        vec!["Gold light spills over the peaks.", "Joyful and cheerful."],
    ];
    for col in columns {
        let mut c = rg.next_column().unwrap().unwrap();
        let vals: Vec<ByteArray> = col.iter().map(|s| ByteArray::from(*s)).collect();
        c.typed::<ByteArrayType>().write_batch(&vals, None, None).unwrap();
        c.close().unwrap();
    }
    rg.close().unwrap();
    writer.close().unwrap();
    let t = tok();
    let cfg = HfConfig {
        source: HfSource::File(path),
        text_column: None,
        output_len: None,
        dataset_ids: vec![],
        chat: Default::default(),
        bfcl_categories: vec![],
        asr: Default::default(),
    };
    let s = Sampling { shuffle: false, oversample: false, ..sampling(10) };
    let w = generate_hf(&cfg, &s, t.as_ref(), &offline()).unwrap();
    assert_eq!(
        prompts(&w),
        vec!["Describe a sunrise over the mountains in one line.", "Give two synonyms for the word happy."]
    );
    assert_eq!(
        w.requests[1].expected_output_tokens as usize,
        t.encode("Joyful and cheerful.", true).unwrap().len()
    );
}

#[test]
fn dry_run_statistics() {
    let t = tok();
    let cfg =
        CustomConfig { path: data("custom_small.jsonl"), output_len: None, template: Default::default() };
    let w = generate_custom(&cfg, &Sampling { oversample: false, ..sampling(3) }, t.as_ref()).unwrap();
    let s = DatasetStats::of(&w);
    assert_eq!(s.requests, 3);
    assert_eq!((s.output.min, s.output.p50, s.output.p99, s.output.max), (12, 20, 40, 40));
    assert!((s.output.mean - 24.0).abs() < 1e-9);
    let text = s.render();
    assert!(text.contains("Expected output") && text.contains("p99"), "{text}");
}
