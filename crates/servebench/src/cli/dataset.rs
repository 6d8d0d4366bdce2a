//! Flags of the datasets besides `random` (flattened into `RunArgs`), with vLLM's names and
//! defaults; validated into a `DatasetRequest` by `config::dataset`.

use clap::Args;
use servebench_data::dataset::random_mm::{self};

/// Dataset flags (besides the `random` ones in `RunArgs`).
#[derive(Debug, Clone, Args)]
pub struct DatasetArgs {
    /// Dataset file (sharegpt, sonnet, custom, speed-bench, hf) or Hub dataset id (hf).
    #[arg(long, help_heading = "Dataset")]
    pub dataset_path: Option<std::path::PathBuf>,
    /// Do not duplicate samples up to --num-prompts when the dataset has fewer.
    #[arg(long, help_heading = "Dataset")]
    pub no_oversample: bool,
    /// Do not load the dataset in streaming mode (vLLM's meaning): an hf dataset from the Hub
    /// is downloaded whole (every row of the split) and then shuffled, instead of only its
    /// first --num-prompts rows. Local files are always read whole.
    #[arg(long, help_heading = "Dataset")]
    pub no_stream: bool,
    /// spec_bench: output length of every request.
    #[arg(long, default_value_t = 256, help_heading = "Dataset")]
    pub spec_bench_output_len: u32,
    /// spec_bench: keep only the questions of this category (default: every category).
    #[arg(long, help_heading = "Dataset")]
    pub spec_bench_category: Option<String>,
    /// sharegpt: fixed output length instead of the reply's length.
    #[arg(long, help_heading = "Dataset")]
    pub sharegpt_output_len: Option<u32>,
    /// sonnet: prompt length in tokens (upper bound).
    #[arg(long, default_value_t = 550, help_heading = "Dataset")]
    pub sonnet_input_len: u32,
    /// sonnet: output length.
    #[arg(long, default_value_t = 150, help_heading = "Dataset")]
    pub sonnet_output_len: u32,
    /// sonnet: tokens of the prefix shared by every prompt.
    #[arg(long, default_value_t = 200, help_heading = "Dataset")]
    pub sonnet_prefix_len: u32,
    /// custom: output length; -1 = each line's `output_tokens`.
    #[arg(long, default_value_t = 256, help_heading = "Dataset")]
    pub custom_output_len: i64,
    /// custom: accepted (servebench never applies a chat template); hf: required by vLLM's
    /// InstructCoder, MT-Bench and Blazedit parsers, which send exactly vLLM's text with it.
    #[arg(long, help_heading = "Dataset")]
    pub skip_chat_template: bool,
    /// custom_image: load the images (local files, file:// and http(s):// URLs) here and send
    /// them as base64 data URLs; by default the server loads them (local paths are sent as
    /// file:// URLs). data: URLs are always sent as they are.
    #[arg(long, help_heading = "Dataset")]
    pub custom_ensure_client_side_data: bool,
    /// Build every request's whole chat `messages` (text part, then its images) before the run
    /// instead of per request: random-mm, custom_image, sharegpt, hf; --backend openai-chat or
    /// openai-embeddings-chat.
    #[arg(long, help_heading = "Dataset")]
    pub enable_multimodal_chat: bool,
    /// prefix_repetition: tokens of each shared prefix.
    #[arg(long, default_value_t = 256, help_heading = "Dataset")]
    pub prefix_repetition_prefix_len: u32,
    /// prefix_repetition: tokens of each request's own suffix.
    #[arg(long, default_value_t = 256, help_heading = "Dataset")]
    pub prefix_repetition_suffix_len: u32,
    /// prefix_repetition: number of distinct prefixes.
    #[arg(long, default_value_t = 10, help_heading = "Dataset")]
    pub prefix_repetition_num_prefixes: u32,
    /// prefix_repetition: output length in tokens.
    #[arg(long, default_value_t = 128, help_heading = "Dataset")]
    pub prefix_repetition_output_len: u32,
    /// random-mm: mean number of images per request.
    #[arg(long, default_value_t = 1, help_heading = "Dataset")]
    pub random_mm_base_items_per_request: u32,
    /// random-mm: spread of the item count, in [0, 1].
    #[arg(long, default_value_t = 0.0, help_heading = "Dataset")]
    pub random_mm_num_mm_items_range_ratio: f64,
    /// random-mm: most items per request by modality.
    #[arg(long, default_value = random_mm::DEFAULT_LIMITS, value_parser = crate::cli::values::mm_limits, help_heading = "Dataset")]
    pub random_mm_limit_mm_per_prompt: crate::cli::values::MmLimits,
    /// random-mm: {(height, width, frames): probability, ...}; frames > 1 (video) not supported yet.
    #[arg(long, default_value = random_mm::DEFAULT_BUCKETS, value_parser = crate::cli::values::mm_buckets, help_heading = "Dataset")]
    pub random_mm_bucket_config: crate::cli::values::MmBuckets,
    /// random-rerank: documents per request.
    #[arg(long, default_value_t = 1, help_heading = "Dataset")]
    pub random_batch_size: u32,
    /// random-rerank: no separate query; the first text of each batch is the query.
    #[arg(long, help_heading = "Dataset")]
    pub no_reranker: bool,
    /// speed-bench: qualitative, throughput_1k, _2k, _8k, _16k or _32k (vllm-rs:
    /// `--speed-bench-config`).
    #[arg(long, visible_alias = "speed-bench-config", default_value = "qualitative", value_parser = crate::cli::values::speed_bench_subset, help_heading = "Dataset")]
    pub speed_bench_dataset_subset: crate::cli::values::SpeedBenchSubset,
    /// speed-bench: keep only this category.
    #[arg(long, help_heading = "Dataset")]
    pub speed_bench_category: Option<String>,
    /// speed-bench: output length in tokens (max_tokens).
    #[arg(long, default_value_t = 4096, help_heading = "Dataset")]
    pub speed_bench_output_len: u32,
    /// speed-bench: truncate each prompt to its first N tokens (as vllm-rs; before the chat
    /// template, if one is rendered).
    #[arg(long, value_name = "N", help_heading = "Dataset")]
    pub speed_bench_max_input_len: Option<u32>,
    /// hf: dataset name when --dataset-path is a local file (used as its label).
    #[arg(long, help_heading = "Dataset")]
    pub hf_name: Option<String>,
    /// hf: Hub config (subset); default "default" or the first.
    #[arg(long, help_heading = "Dataset")]
    pub hf_subset: Option<String>,
    /// hf: Hub split; default train > test > validation > first.
    #[arg(long, help_heading = "Dataset")]
    pub hf_split: Option<String>,
    /// hf: fixed output length (default: the completion's length, else 128).
    #[arg(long, help_heading = "Dataset")]
    pub hf_output_len: Option<u32>,
    /// hf: the column holding the prompt (default: detected).
    #[arg(long, help_heading = "Dataset")]
    pub hf_text_column: Option<String>,
}
