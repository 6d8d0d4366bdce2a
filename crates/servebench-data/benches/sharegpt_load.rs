//! Loading, filtering and tokenizing a synthetic 100,000-conversation ShareGPT file (written
//! to a temporary directory at start; nothing big is committed) with the SmolLM2 tokenizer.
//! Measured: the whole file tokenized once (`--num-prompts 100000`, the worst case, printed),
//! and under criterion the usual `--num-prompts 1000`.
#![allow(clippy::unwrap_used)] // a benchmark aborts on a broken fixture

use criterion::{criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};
use servebench_data::dataset::sharegpt::{generate_sharegpt, ShareGptConfig};
use servebench_data::dataset::Sampling;
use servebench_data::{HfTokenizer, HubEnv};
use std::io::Write;
use std::path::Path;

const CONVERSATIONS: usize = 100_000;

const WORDS: &[&str] = &[
    "the",
    "model",
    "server",
    "request",
    "token",
    "latency",
    "explain",
    "how",
    "why",
    "what",
    "cache",
    "prefix",
    "batch",
    "queue",
    "stream",
    "memory",
    "kernel",
    "attention",
    "layer",
    "weights",
    "please",
    "could",
    "you",
    "write",
    "a",
    "short",
    "program",
    "in",
    "Rust",
    "that",
    "reads",
    "file",
    "and",
    "prints",
    "lines",
    "numbers",
    "between",
    "one",
    "hundred",
    "thousand",
    "because",
    "faster",
    "slower",
    "graph",
    "network",
    "performance",
    "benchmark",
    "results",
    "table",
    "summary",
    "question",
    "answer",
];

fn text(r: &mut impl Rng, words: usize) -> String {
    let mut s = String::with_capacity(words * 7);
    for i in 0..words {
        if i > 0 {
            s.push(if i % 17 == 0 { '\n' } else { ' ' });
        }
        s.push_str(WORDS[r.random_range(0..WORDS.len())]);
        if i % 11 == 10 {
            s.push(',');
        }
    }
    s.push('.');
    s
}

/// Writes the synthetic file: prompts of 2–400 words, replies of 2–500 words (some too short
/// or too long for vLLM's filter), a few one-message conversations.
fn write_file(path: &Path) {
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    out.write_all(b"[\n").unwrap();
    for i in 0..CONVERSATIONS {
        let n = r.random_range(2..400);
        let prompt = text(&mut r, n);
        let mut conv = vec![serde_json::json!({"from": "human", "value": prompt})];
        if i % 50 != 0 {
            let n = r.random_range(2..500);
            conv.push(serde_json::json!({"from": "gpt", "value": text(&mut r, n)}));
        }
        let entry = serde_json::json!({"id": format!("c{i}"), "conversations": conv});
        if i > 0 {
            out.write_all(b",\n").unwrap();
        }
        serde_json::to_writer(&mut out, &entry).unwrap();
    }
    out.write_all(b"\n]\n").unwrap();
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sharegpt_100k.json");
    write_file(&path);
    let size = std::fs::metadata(&path).unwrap().len();
    let tok_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/tokenizers/smollm2-135m/tokenizer.json");
    let tok = HfTokenizer::from_file(&tok_path, "smollm2").unwrap();
    let cfg = ShareGptConfig { path: Some(path.clone()), output_len: None };
    let env = HubEnv { offline: true, ..HubEnv::default() };
    // Worst case, once (one iteration takes minutes on a loaded 2-core machine): every
    // conversation tokenized.
    let all = Sampling { num_prompts: CONVERSATIONS, ..Sampling::default() };
    let start = std::time::Instant::now();
    let w = generate_sharegpt(&cfg, &all, &tok, &env).unwrap();
    eprintln!(
        "sharegpt_100k: {:.1} MB file, all {} conversations: {} requests, {} prompt tokens, {:.2} s",
        size as f64 / 1e6,
        CONVERSATIONS,
        w.len(),
        w.total_prompt_tokens(),
        start.elapsed().as_secs_f64()
    );
    // The usual case under criterion: read and parse the whole file, shuffle, tokenize until
    // 1,000 valid requests exist.
    let usual = Sampling { num_prompts: 1_000, ..Sampling::default() };
    let mut group = c.benchmark_group("sharegpt_load");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(30));
    group.bench_function("smollm2_100k_file_1000_prompts", |b| {
        b.iter(|| generate_sharegpt(&cfg, &usual, &tok, &env).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
