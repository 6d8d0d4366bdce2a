//! Which dataset to build, and building it.

use super::custom::{generate_custom, CustomConfig};
use super::hf::{generate_hf, HfConfig};
use super::prefix_repetition::{generate_prefix_repetition, PrefixRepetitionConfig};
use super::random_mm::{generate_random_mm, RandomMmConfig};
use super::random_rerank::{generate_random_rerank, RandomRerankConfig};
use super::sharegpt::{generate_sharegpt, ShareGptConfig};
use super::sonnet::{generate_sonnet, SonnetConfig};
use super::speed_bench::{generate_speed_bench, SpeedBenchConfig};
use super::Sampling;
use crate::tokenizer::HubEnv;
use servebench_core::{Result, TextTokenizer, Workload};

/// A dataset other than `random`, with its options.
#[derive(Debug, Clone, PartialEq)]
pub enum DatasetKind {
    ShareGpt(ShareGptConfig),
    Sonnet(SonnetConfig),
    Custom(CustomConfig),
    PrefixRepetition(PrefixRepetitionConfig),
    RandomMm(RandomMmConfig),
    RandomRerank(RandomRerankConfig),
    SpeedBench(SpeedBenchConfig),
    Hf(HfConfig),
}

impl DatasetKind {
    /// The `--dataset-name` of this dataset.
    pub fn name(&self) -> &'static str {
        match self {
            DatasetKind::ShareGpt(_) => "sharegpt",
            DatasetKind::Sonnet(_) => "sonnet",
            DatasetKind::Custom(_) => "custom",
            DatasetKind::PrefixRepetition(_) => "prefix_repetition",
            DatasetKind::RandomMm(_) => "random-mm",
            DatasetKind::RandomRerank(_) => "random-rerank",
            DatasetKind::SpeedBench(_) => "speed-bench",
            DatasetKind::Hf(_) => "hf",
        }
    }
}

/// A dataset and how to sample it.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetRequest {
    pub kind: DatasetKind,
    pub sampling: Sampling,
}

/// Builds the workload (blocking: file I/O, possibly a download, tokenizing on rayon).
pub fn build_dataset(req: &DatasetRequest, tok: &dyn TextTokenizer, env: &HubEnv) -> Result<Workload> {
    let s = &req.sampling;
    match &req.kind {
        DatasetKind::ShareGpt(c) => generate_sharegpt(c, s, tok, env),
        DatasetKind::Sonnet(c) => generate_sonnet(c, s, tok),
        DatasetKind::Custom(c) => generate_custom(c, s, tok),
        DatasetKind::PrefixRepetition(c) => generate_prefix_repetition(c, s, tok),
        DatasetKind::RandomMm(c) => generate_random_mm(c, tok),
        DatasetKind::RandomRerank(c) => generate_random_rerank(c, tok),
        DatasetKind::SpeedBench(c) => generate_speed_bench(c, s, tok, env),
        DatasetKind::Hf(c) => generate_hf(c, s, tok, env),
    }
}
