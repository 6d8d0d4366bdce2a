//! Loading, filtering and tokenizing a synthetic 100,000-conversation ShareGPT file (written
//! to a temporary directory at start; nothing big is committed) with the SmolLM2 tokenizer.
//! Measured: the whole file tokenized once (`--num-prompts 100000`, the worst case, printed),
//! and under criterion the usual `--num-prompts 1000`. The allocator is mimalloc, as in the
//! `servebench` binary.
#![allow(clippy::unwrap_used)] // a benchmark aborts on a broken fixture

use criterion::{criterion_group, criterion_main, Criterion};
use servebench_data::dataset::sharegpt::{generate_sharegpt, ShareGptConfig};
use servebench_data::dataset::Sampling;
use servebench_data::{HfTokenizer, HubEnv};

mod support {
    pub mod sharegpt_synthetic;
}
use support::sharegpt_synthetic::{smollm2_tokenizer_path, write_file, CONVERSATIONS};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sharegpt_100k.json");
    write_file(&path).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    let tok = HfTokenizer::from_file(&smollm2_tokenizer_path(), "smollm2").unwrap();
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
