//! Issue 27 item 1: the whole workload of a few dataset configurations, digested, pinned to the
//! values today's eager generation gave before lazy generation existed (main at 56f06a6). The
//! digest covers every field of every request (its `Debug` form: prompt text or token ids,
//! lengths, `max_tokens`, multimodal parts, messages, ...) and, for a trace, its arrival
//! offsets. Lazy generation (`RandomSource`, `TraceSource`) must give byte-identical requests:
//! these constants are the proof, and they are checked both on the eager functions and on every
//! request built one at a time from the lazy sources.

use servebench_core::{RequestSpec, TextTokenizer, Workload};
use servebench_data::dataset::prefix_repetition::{generate_prefix_repetition, PrefixRepetitionConfig};
use servebench_data::dataset::random_mm::{generate_random_mm, parse_bucket_config, RandomMmConfig};
use servebench_data::dataset::sonnet::{generate_sonnet, SonnetConfig};
use servebench_data::dataset::Sampling;
use servebench_data::random::{generate_random, prepare_random, RandomDatasetConfig, TextMethod};
use servebench_data::trace::{build_trace_workload, prepare_trace, TraceConfig, TraceLabels};
use servebench_data::{load_tokenizer, HfTokenizer};
use std::sync::Arc;

/// FNV-1a, 64 bits: enough to notice any changed byte of a workload.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn spec(&mut self, r: &RequestSpec) {
        self.bytes(format!("{r:?}\n").as_bytes());
    }
}

fn digest(specs: impl IntoIterator<Item = RequestSpec>, offsets_us: &[u64]) -> String {
    let mut h = Fnv::new();
    let mut n = 0usize;
    for r in specs {
        h.spec(&r);
        n += 1;
    }
    for o in offsets_us {
        h.bytes(&o.to_le_bytes());
    }
    format!("{n}:{:016x}", h.0)
}

fn workload_digest(w: &Workload, offsets_us: &[u64]) -> String {
    digest(w.requests.iter().cloned(), offsets_us)
}

fn smollm2() -> Arc<dyn TextTokenizer> {
    let path = servebench_testkit::fixtures::smollm2_tokenizer();
    Arc::new(HfTokenizer::from_file(&path, "smollm2").unwrap())
}

fn cl100k() -> Arc<dyn TextTokenizer> {
    load_tokenizer("cl100k_base").unwrap()
}

/// The random configurations pinned: stable words with a prefix and spreads, token ids, and
/// the general (decode → re-encode) path.
fn random_cases() -> Vec<(&'static str, RandomDatasetConfig, Arc<dyn TextTokenizer>, &'static str)> {
    let words = RandomDatasetConfig {
        num_prompts: 200,
        input_len: 300,
        output_len: 64,
        prefix_len: 20,
        range_ratio_input: 0.3,
        range_ratio_output: 0.5,
        seed: 7,
        ..RandomDatasetConfig::default()
    };
    let ids = RandomDatasetConfig {
        num_prompts: 100,
        input_len: 500,
        prefix_len: 10,
        range_ratio_input: 0.2,
        prompt_token_ids: true,
        seed: 3,
        ..RandomDatasetConfig::default()
    };
    let general = RandomDatasetConfig {
        num_prompts: 12,
        input_len: 40,
        output_len: 8,
        prefix_len: 5,
        range_ratio_input: 0.25,
        seed: 11,
        method: TextMethod::General,
        ..RandomDatasetConfig::default()
    };
    vec![
        ("stable words, smollm2", words, smollm2(), RANDOM_WORDS),
        ("token ids, smollm2", ids, smollm2(), RANDOM_IDS),
        ("general path, cl100k", general, cl100k(), RANDOM_GENERAL),
    ]
}

const RANDOM_WORDS: &str = "200:4f9db9fc40f62639";
const RANDOM_IDS: &str = "100:cb342b5cb0b775fd";
const RANDOM_GENERAL: &str = "12:a7cf0787a6742a17";
const TRACE: &str = "37:7ca9830da807ac4d";
const SONNET: &str = "20:dcd73dca3bc3f15d";
const PREFIX_REPETITION: &str = "28:8f81b80554034181";
const RANDOM_MM: &str = "6:c84f66b127de02fe";

/// Built one request at a time, in a scrambled order, then put back in order: lazy requests
/// depend on their position only.
fn lazy_digest(requests: &servebench_core::Requests, offsets_us: &[u64]) -> String {
    let n = requests.len();
    let mut built: Vec<(usize, RequestSpec)> =
        (0..n).rev().map(|p| (p, RequestSpec::clone(&requests.spec(p).unwrap()))).collect();
    built.sort_by_key(|(p, _)| *p);
    for (p, spec) in &built {
        let m = requests.meta(*p).unwrap();
        assert_eq!(
            (m.index, m.prompt_tokens, m.expected_output_tokens),
            (spec.index, spec.prompt_tokens, spec.expected_output_tokens)
        );
    }
    digest(built.into_iter().map(|(_, s)| s), offsets_us)
}

#[test]
fn lazy_random_requests_match_the_pinned_digests() {
    for (name, cfg, tok, want) in random_cases() {
        let prepared = prepare_random(&cfg, tok.as_ref()).unwrap();
        assert_eq!(prepared.requests.is_lazy(), cfg.method != TextMethod::General, "{name}");
        assert_eq!(lazy_digest(&prepared.requests, &[]), want, "{name}");
    }
}

#[test]
fn lazy_trace_requests_match_the_pinned_digest() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = trace_cfg(trace_file(dir.path()));
    let t = prepare_trace(&cfg, smollm2().as_ref()).unwrap();
    assert_eq!(t.filtered_out, 3);
    let requests = servebench_core::Requests::lazy(t.source.clone());
    assert_eq!(lazy_digest(&requests, &t.offsets_us), TRACE);
}

#[test]
fn random_workload_digests_are_pinned() {
    let got: Vec<(&str, String, &str)> = random_cases()
        .into_iter()
        .map(|(name, cfg, tok, want)| {
            (name, workload_digest(&generate_random(&cfg, tok.as_ref()).unwrap(), &[]), want)
        })
        .collect();
    for (name, got, want) in &got {
        assert_eq!(got, want, "{name}");
    }
}

/// A Mooncake-style trace of 40 rows: shared hash-id prefixes, rows with too few hash ids, two
/// rows over `--max-model-len` (dropped), uneven timestamps.
fn trace_file(dir: &std::path::Path) -> std::path::PathBuf {
    let mut text = String::new();
    for i in 0..40u64 {
        let input = if i % 13 == 5 { 900 } else { 20 + (i * 7) % 50 };
        let hashes: Vec<u64> = (0..(i % 4)).map(|k| if k == 0 { 1 } else { i * 10 + k }).collect();
        let hashes = hashes.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
        text.push_str(&format!(
            "{{\"timestamp\": {}, \"input_length\": {input}, \"output_length\": {}, \"hash_ids\": [{hashes}]}}\n",
            i * 37 + (i % 3) * 5,
            // Rows of 0 output tokens (sent as `max_tokens` 1) are refused now: 1 gives the
            // same requests, so the digest pinned before still holds.
            ((i % 5) * 3).max(1),
        ));
    }
    let path = dir.join("trace.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

fn trace_cfg(path: std::path::PathBuf) -> TraceConfig {
    TraceConfig {
        path,
        labels: TraceLabels::default(),
        chunk_size: 16,
        sec_multiplier: 0.5,
        num_prompts: 1000,
        seed: 5,
        max_model_len: Some(600),
        self_timed: true,
        replay_end_ms: None,
    }
}

#[test]
fn trace_workload_digest_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = trace_cfg(trace_file(dir.path()));
    let t = build_trace_workload(&cfg, smollm2().as_ref()).unwrap();
    assert_eq!(workload_digest(&t.workload, &t.offsets_us), TRACE);
}

/// A trace saved with a byte-order mark failed on line 1 ("is not JSON"): the mark is not part
/// of the first row, and the workload is the one without it.
#[test]
fn a_trace_with_a_byte_order_mark_is_the_trace_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let plain = trace_file(dir.path());
    let marked = dir.path().join("marked.jsonl");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(&plain).unwrap());
    std::fs::write(&marked, bytes).unwrap();
    let t = smollm2();
    let a = build_trace_workload(&trace_cfg(plain), t.as_ref()).unwrap();
    let b = build_trace_workload(&trace_cfg(marked), t.as_ref()).unwrap();
    assert_eq!(workload_digest(&b.workload, &b.offsets_us), workload_digest(&a.workload, &a.offsets_us));
}

fn sampling(n: usize) -> Sampling {
    Sampling { num_prompts: n, seed: 4, shuffle: true, oversample: true }
}

#[test]
fn sonnet_prefix_repetition_and_random_mm_digests_are_pinned() {
    let t = cl100k();
    let sonnet = generate_sonnet(&SonnetConfig::default(), &sampling(20), t.as_ref()).unwrap();
    let sonnet = workload_digest(&sonnet, &[]);
    let pr = PrefixRepetitionConfig { prefix_len: 40, suffix_len: 24, num_prefixes: 4, output_len: 9 };
    let pr = generate_prefix_repetition(&pr, &sampling(30), t.as_ref()).unwrap();
    let pr = workload_digest(&pr, &[]);
    let mm = RandomMmConfig {
        text: RandomDatasetConfig {
            num_prompts: 6,
            input_len: 20,
            output_len: 4,
            seed: 2,
            ..Default::default()
        },
        base_items: 2,
        items_range_ratio: 0.5,
        limit_image: 255,
        limit_video: 1,
        buckets: parse_bucket_config("{(16, 24, 1): 0.5, (32, 16, 1): 0.5}").unwrap(),
    };
    let mm = generate_random_mm(&mm, t.as_ref()).unwrap();
    let mm = workload_digest(&mm, &[]);
    assert_eq!(
        [sonnet.as_str(), &pr, &mm],
        [SONNET, PREFIX_REPETITION, RANDOM_MM],
        "sonnet, prefix_repetition, random-mm"
    );
}
