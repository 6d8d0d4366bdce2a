//! Random dataset generation speed with the SmolLM2 tokenizer (exact lengths).
#![allow(clippy::unwrap_used)] // a benchmark aborts on a broken fixture

use criterion::{criterion_group, criterion_main, Criterion};
use servebench_data::random::RandomDatasetConfig;
use servebench_data::{generate_random, HfTokenizer};

fn bench(c: &mut Criterion) {
    let tok = HfTokenizer::from_file(&servebench_testkit::fixtures::smollm2_tokenizer(), "smollm2").unwrap();
    let mut group = c.benchmark_group("random_dataset");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(20));
    for (n, len) in [(1_000, 1_024), (10_000, 8_192)] {
        let cfg =
            RandomDatasetConfig { num_prompts: n, input_len: len, output_len: 128, ..Default::default() };
        group.bench_function(format!("smollm2_{n}x{len}"), |b| {
            b.iter(|| generate_random(&cfg, &tok).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
