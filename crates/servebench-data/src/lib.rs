//! servebench-data: tokenizers (Hugging Face `tokenizer.json`, built-in tiktoken encodings, the
//! Hugging Face Hub cache) and workload generators (the `random` dataset, and in `dataset` the
//! file-based and other synthetic datasets).

pub mod agentic;
pub mod dataset;
pub mod prefix_cache;
pub mod prefix_cache_turns;
pub mod random;
pub mod tokenizer;
pub mod trace;

pub use random::{
    adjust_to_length, generate_random, generate_random_detailed, prepare_random, GenerationPath,
    RandomDatasetConfig, RandomOutcome, RandomPrepared, RandomSource, TextMethod,
};
pub use tokenizer::{load_tokenizer, load_tokenizer_with, HfTokenizer, HubEnv, TiktokenTokenizer};
