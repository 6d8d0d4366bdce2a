//! Flags of a sharded run (docs/scale-out.md): `--shard-index`, `--num-shards`, `--start-at`.

use clap::Args;

/// Scale-out flags (flattened into `RunArgs`).
#[derive(Debug, Clone, Default, Args)]
pub struct ShardArgs {
    /// Split the run into N shards (separate processes or pods): every shard builds the same
    /// seeded workload and schedule and sends every N-th arrival; `servebench merge` combines
    /// their records files. --max-concurrency is the total, split across shards.
    #[arg(long, value_name = "N", env = "SERVEBENCH_NUM_SHARDS", help_heading = "Scale-out")]
    pub num_shards: Option<u32>,
    /// This process's shard, 0..N-1 (default: $JOB_COMPLETION_INDEX of a Kubernetes Indexed Job).
    #[arg(long, value_name = "I", help_heading = "Scale-out")]
    pub shard_index: Option<u32>,
    /// Start the schedule at this wall-clock instant (RFC 3339, e.g. 2026-11-30T01:00:00Z, or
    /// Unix seconds): all shards wait for it, then anchor their clocks on it.
    #[arg(long, value_name = "TIME", env = "SERVEBENCH_START_AT", value_parser = crate::cli::values::start_at, help_heading = "Scale-out")]
    pub start_at: Option<crate::cli::values::StartAt>,
}
