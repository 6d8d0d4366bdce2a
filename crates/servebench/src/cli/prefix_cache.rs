//! Flags of a controlled prefix-cache hit rate, validated into the run's load options by
//! `config::prefix_cache` (docs/workloads.md, "Controlled prefix-cache hit rate").

use clap::Args;

/// `--prefix-cache-hit-rate`, vllm-rs's bimodal pair, `--prefix-cache-bust`.
#[derive(Debug, Clone, Args)]
pub struct PrefixCacheArgs {
    /// Share of prompt tokens the server's prefix cache should hit, in [0, 1]: every prompt
    /// starts with a shared prefix of whole KV blocks, primed before the run and confirmed after
    /// it (needs --prompt-token-ids).
    #[arg(long, value_name = "R", help_heading = "Prefix cache")]
    pub prefix_cache_hit_rate: Option<f64>,
    /// vllm-rs: share of prompts that are warm (share a cached prefix); the others are cold.
    /// With --random-cache-ratio; needs --prompt-token-ids.
    #[arg(long, default_value_t = 0.0, help_heading = "Prefix cache")]
    pub random_cache_hit_fraction: f64,
    /// vllm-rs: share of each warm prompt that is the shared cached prefix.
    #[arg(long, default_value_t = 0.0, help_heading = "Prefix cache")]
    pub random_cache_ratio: f64,
    /// No prompt can hit the prefix cache: the first KV block of every prompt is unique to the
    /// request and the run (needs --prompt-token-ids).
    #[arg(long, help_heading = "Prefix cache")]
    pub prefix_cache_bust: bool,
    /// The server's KV block size in tokens: shared prefixes are whole blocks of it.
    #[arg(long, default_value_t = 16, help_heading = "Prefix cache")]
    pub prefix_cache_block_size: u32,
}
