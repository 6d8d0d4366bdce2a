use super::*;
use crate::tokenizer::{HfTokenizer, TiktokenTokenizer};
use servebench_testkit::fixtures::smollm2_tokenizer;
use std::sync::OnceLock;

fn smollm2() -> &'static HfTokenizer {
    static T: OnceLock<HfTokenizer> = OnceLock::new();
    T.get_or_init(|| HfTokenizer::from_file(&smollm2_tokenizer(), "smollm2").unwrap())
}

fn cl100k() -> &'static TiktokenTokenizer {
    static T: OnceLock<TiktokenTokenizer> = OnceLock::new();
    T.get_or_init(|| TiktokenTokenizer::from_name("cl100k_base").unwrap())
}

fn cfg(n: usize, input: usize, prefix: usize, seed: u64) -> RandomDatasetConfig {
    RandomDatasetConfig {
        num_prompts: n,
        input_len: input,
        output_len: 16,
        prefix_len: prefix,
        seed,
        ..Default::default()
    }
}

fn assert_exact(w: &Workload, tok: &dyn TextTokenizer) {
    let special = tok.num_special_tokens();
    for r in &w.requests {
        let text = r.prompt.text().unwrap();
        assert_eq!(tok.count(text).unwrap() as u32 + special, r.prompt_tokens, "request {}", r.index);
    }
}

#[test]
fn bounds_follow_vllm() {
    assert_eq!(length_bounds(100, 0.0, 0), (100, 100));
    assert_eq!(length_bounds(100, 0.25, 0), (75, 125));
    assert_eq!(length_bounds(10, 0.33, 0), (6, 14));
    assert_eq!(length_bounds(1, 0.9, 1), (1, 2));
    assert_eq!(length_bounds(0, 0.5, 1), (1, 1));
}

#[test]
fn range_ratio_bounds_hold() {
    let mut c = cfg(300, 200, 0, 3);
    c.range_ratio_input = 0.5;
    c.range_ratio_output = 0.9;
    c.output_len = 10;
    c.prompt_token_ids = true;
    let w = generate_random(&c, smollm2()).unwrap();
    let ins: Vec<u32> = w.requests.iter().map(|r| r.prompt_tokens).collect();
    let outs: Vec<u32> = w.requests.iter().map(|r| r.expected_output_tokens).collect();
    assert!(ins.iter().all(|&l| (100..=300).contains(&l)));
    assert!(outs.iter().all(|&l| (1..=19).contains(&l)));
    assert!(ins.iter().min() < Some(&130) && ins.iter().max() > Some(&270), "spread over the range");
    assert!(outs.contains(&1) && outs.contains(&19), "both ends reachable");
}

#[test]
fn invalid_ratio_is_config_error() {
    let mut c = cfg(1, 10, 0, 0);
    c.range_ratio_input = 1.0;
    assert_eq!(generate_random(&c, cl100k()).unwrap_err().code(), servebench_core::ErrorCode::ConfigInvalid);
    c.range_ratio_input = f64::NAN;
    assert!(generate_random(&c, cl100k()).is_err());
}

#[test]
fn fast_path_is_exact_and_used() {
    for tok in [smollm2() as &dyn TextTokenizer, cl100k()] {
        let mut c = cfg(64, 300, 20, 11);
        c.range_ratio_input = 0.3;
        let out = generate_random_detailed(&c, tok).unwrap();
        assert!(matches!(out.path, GenerationPath::StableWords { .. }), "{:?}", out.path);
        assert_exact(&out.workload, tok);
    }
}

#[test]
fn prefix_is_shared() {
    let c = cfg(20, 100, 40, 5);
    let w = generate_random(&c, smollm2()).unwrap();
    let first = smollm2().encode(w.requests[0].prompt.text().unwrap(), false).unwrap();
    let prefix = &first[..40];
    for r in &w.requests {
        let ids = smollm2().encode(r.prompt.text().unwrap(), false).unwrap();
        assert_eq!(&ids[..40], prefix);
        assert_eq!(ids.len(), 140);
        assert_eq!(r.prompt_tokens, 140);
    }
    let texts: std::collections::HashSet<_> =
        w.requests.iter().map(|r| r.prompt.text().unwrap()[..50].to_string()).collect();
    assert_eq!(texts.len(), 1, "same text prefix");
    let bodies: std::collections::HashSet<_> =
        w.requests.iter().map(|r| r.prompt.text().unwrap().to_string()).collect();
    assert_eq!(bodies.len(), 20, "distinct bodies");
}

#[test]
fn deterministic_across_thread_counts_and_seed_sensitive() {
    let c = cfg(40, 120, 10, 42);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| generate_random(&c, smollm2()).unwrap())
    };
    let one = run(1);
    assert_eq!(one, run(4));
    assert_eq!(one, run(2));
    let other = generate_random(&RandomDatasetConfig { seed: 43, ..c.clone() }, smollm2()).unwrap();
    assert_ne!(one.requests[0].prompt, other.requests[0].prompt);
    let mut ids_cfg = c.clone();
    ids_cfg.prompt_token_ids = true;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let a = pool.install(|| generate_random(&ids_cfg, cl100k()).unwrap());
    assert_eq!(a, generate_random(&ids_cfg, cl100k()).unwrap());
}

#[test]
fn token_ids_exclude_specials() {
    let mut c = cfg(50, 500, 8, 9);
    c.prompt_token_ids = true;
    let w = generate_random(&c, smollm2()).unwrap();
    for r in &w.requests {
        let Prompt::TokenIds(ids) = &r.prompt else { panic!("expected ids") };
        assert_eq!(ids.len(), 508);
        assert_eq!(r.prompt_tokens, 508);
        assert!(ids.iter().all(|id| (17..49152).contains(id)), "no special ids");
    }
    let o200k = TiktokenTokenizer::from_name("o200k_base").unwrap();
    let specials = o200k.special_token_ids().to_vec();
    let w = generate_random(&c, &o200k).unwrap();
    for r in &w.requests {
        let Prompt::TokenIds(ids) = &r.prompt else { panic!("expected ids") };
        assert!(ids.iter().all(|id| !specials.contains(id) && *id < 200_019));
        assert!(o200k.decode(ids, false).is_ok());
    }
}

#[test]
fn general_path_is_exact() {
    for tok in [smollm2() as &dyn TextTokenizer, cl100k()] {
        let mut c = cfg(12, 150, 16, 21);
        c.range_ratio_input = 0.5;
        c.method = TextMethod::General;
        let out = generate_random_detailed(&c, tok).unwrap();
        assert!(matches!(out.path, GenerationPath::General { .. }));
        assert_exact(&out.workload, tok);
        let first = out.workload.requests[0].prompt.text().unwrap();
        let prefix_ids = tok.encode(first, false).unwrap()[..16].to_vec();
        let prefix_text = tok.decode(&prefix_ids, false).unwrap();
        for r in &out.workload.requests {
            assert!(r.prompt.text().unwrap().starts_with(&prefix_text));
        }
    }
}

/// A tokenizer that adds a BOS token: prompt_tokens counts it, the text does not.
#[derive(Debug)]
struct WithBos(&'static HfTokenizer);

impl TextTokenizer for WithBos {
    fn name(&self) -> &str {
        "with-bos"
    }
    fn encode(&self, text: &str, add_special: bool) -> Result<Vec<u32>> {
        let mut ids = if add_special { vec![0] } else { vec![] };
        ids.extend(self.0.encode(text, false)?);
        Ok(ids)
    }
    fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String> {
        self.0.decode(ids, skip_special)
    }
    fn vocab_size(&self) -> u32 {
        self.0.vocab_size()
    }
}

#[test]
fn bos_is_counted_in_prompt_tokens() {
    let tok = WithBos(smollm2());
    assert_eq!(tok.num_special_tokens(), 1);
    let w = generate_random(&cfg(10, 64, 4, 1), &tok).unwrap();
    for r in &w.requests {
        assert_eq!(r.prompt_tokens, 68);
        assert_eq!(tok.encode(r.prompt.text().unwrap(), true).unwrap().len(), 68, "what /tokenize reports");
        assert_eq!(tok.count(r.prompt.text().unwrap()).unwrap(), 67);
    }
    let w = generate_random(&cfg(3, 0, 0, 1), &tok).unwrap();
    assert_eq!(w.requests[0].prompt.text(), Some(""));
    assert_eq!(w.requests[0].prompt_tokens, 1);
}

#[test]
fn adjust_pads_by_cycling_or_truncates() {
    assert_eq!(adjust_to_length(&[1, 2, 3], 2), vec![1, 2]);
    assert_eq!(adjust_to_length(&[1, 2, 3], 3), vec![1, 2, 3]);
    assert_eq!(adjust_to_length(&[1, 2, 3], 7), vec![1, 2, 3, 1, 2, 3, 1]);
    assert_eq!(adjust_to_length(&[], 4), Vec::<u32>::new());
    assert_eq!(adjust_to_length(&[5], 0), Vec::<u32>::new());
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

        #[test]
        fn every_prompt_is_exact(seed in any::<u64>(), input in 0usize..700, prefix in 0usize..50, ratio in 0.0f64..0.9) {
            let mut c = cfg(16, input, prefix, seed);
            c.range_ratio_input = ratio;
            for tok in [smollm2() as &dyn TextTokenizer, cl100k()] {
                let w = generate_random(&c, tok).unwrap();
                prop_assert_eq!(w.len(), 16);
                for r in &w.requests {
                    let n = tok.count(r.prompt.text().unwrap()).unwrap();
                    prop_assert_eq!(n as u32, r.prompt_tokens);
                    let (lo, hi) = length_bounds(input, ratio, 0);
                    prop_assert!((lo + prefix..=hi + prefix).contains(&n));
                }
            }
        }
    }
}

/// A synthetic SentencePiece-style tokenizer: `▁word` tokens (WordLevel) behind a Metaspace
/// pre-tokenizer. `llama2_style`: a normalizer prepends `▁` to every text and turns spaces
/// into `▁` (so a text must not start with a space), as Llama 2's tokenizer.json does.
fn metaspace_tokenizer(words: usize, llama2_style: bool) -> HfTokenizer {
    let mut vocab = serde_json::Map::new();
    vocab.insert("<unk>".into(), 0.into());
    for i in 0..words {
        let mut w = String::from("\u{2581}w");
        let mut k = i;
        loop {
            w.push((b'a' + (k % 26) as u8) as char);
            k /= 26;
            if k == 0 {
                break;
            }
        }
        vocab.insert(w, (i + 1).into());
    }
    let normalizer = if llama2_style {
        serde_json::json!({"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u{2581}"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u{2581}"}]})
    } else {
        serde_json::Value::Null
    };
    let scheme = if llama2_style { "never" } else { "first" };
    let json = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [{"id": 0, "content": "<unk>", "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true}],
        "normalizer": normalizer,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": scheme, "split": true},
        "post_processor": null,
        "decoder": {"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "always", "split": true},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
    });
    HfTokenizer::from_bytes(json.to_string().as_bytes(), "metaspace").unwrap()
}

#[test]
fn sentencepiece_style_tokenizers_use_the_fast_path() {
    for llama2_style in [false, true] {
        let tok = metaspace_tokenizer(600, llama2_style);
        for prefix in [0, 7] {
            let out = generate_random_detailed(&cfg(20, 50, prefix, 4), &tok).unwrap();
            assert!(matches!(out.path, GenerationPath::StableWords { pool: 600 }), "{:?}", out.path);
            assert_exact(&out.workload, &tok);
            let starts_with_space = out.workload.requests[0].prompt.text().unwrap().starts_with(' ');
            assert_eq!(starts_with_space, !llama2_style);
        }
    }
}

#[test]
fn small_pool_falls_back_to_general_path() {
    let tok = metaspace_tokenizer(100, false);
    let out = generate_random_detailed(&cfg(10, 40, 5, 8), &tok).unwrap();
    match &out.path {
        GenerationPath::General { reason } => assert!(reason.contains("stable words"), "{reason}"),
        other => panic!("expected the general path, got {other:?}"),
    }
    assert_exact(&out.workload, &tok);
}
