//! Loading, filtering and tokenizing a synthetic 100,000-conversation ShareGPT file (written
//! to a temporary directory at start; nothing big is committed) with the SmolLM2 tokenizer,
//! under criterion: the usual `--num-prompts 1000` (the whole file is read and parsed, then
//! conversations are tokenized until 1,000 pass the filter), and the same with a fixed output
//! length (`--sharegpt-output-len 256`: replies are not tokenized). The whole-file case
//! (`--num-prompts 100000`, every conversation tokenized, ~30 s an iteration) is the
//! `sharegpt_load` example. The allocator is mimalloc, as in the `servebench` binary.
#![allow(clippy::unwrap_used)] // a benchmark aborts on a broken fixture

use criterion::{criterion_group, criterion_main, Criterion};
use servebench_data::dataset::sharegpt::{generate_sharegpt, ShareGptConfig};
use servebench_data::dataset::Sampling;
use servebench_data::{HfTokenizer, HubEnv};

use servebench_testkit::fixtures::smollm2_tokenizer;
use servebench_testkit::sharegpt_synthetic::write_file;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sharegpt_100k.json");
    write_file(&path).unwrap();
    let tok = HfTokenizer::from_file(&smollm2_tokenizer(), "smollm2").unwrap();
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let usual = Sampling { num_prompts: 1_000, ..Sampling::default() };
    let mut group = c.benchmark_group("sharegpt_load");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(20));
    for (id, output_len) in [
        ("smollm2_100k_file_1000_prompts", None),
        ("smollm2_100k_file_1000_prompts_output_len_256", Some(256)),
    ] {
        let cfg = ShareGptConfig { path: Some(path.clone()), output_len };
        group.bench_function(id, |b| b.iter(|| generate_sharegpt(&cfg, &usual, &tok, &env).unwrap()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
