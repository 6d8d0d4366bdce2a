//! servebench-data: tokenizers (Hugging Face `tokenizer.json`, built-in tiktoken encodings, the
//! Hugging Face Hub cache) and workload generators (the `random` dataset).

pub mod random;
pub mod tokenizer;

pub use random::{adjust_to_length, generate_random, RandomDatasetConfig};
pub use tokenizer::{load_tokenizer, HfTokenizer, TiktokenTokenizer};
