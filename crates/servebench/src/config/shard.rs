//! The scale-out flags (`crate::cli::shard`) validated: which shard this process is, and the
//! runner's shard configuration.

use crate::cli::shard::ShardArgs;
use servebench_core::shard::ShardSpec;
use servebench_core::{BenchError, Result};
use servebench_runner::ShardConfig;

/// Environment variable Kubernetes sets in every pod of an Indexed Job (0-based).
pub const JOB_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The validated scale-out settings of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardSettings {
    pub shard: Option<ShardSpec>,
    pub start_at_unix_us: Option<u64>,
}

impl ShardArgs {
    /// Validates the flags; `job_index` is `$JOB_COMPLETION_INDEX` (passed in for tests).
    /// Sharding is on when `--num-shards` (or `SERVEBENCH_NUM_SHARDS`) is given; the index then
    /// comes from `--shard-index`, else `job_index`.
    pub fn settings(&self, job_index: Option<&str>) -> Result<ShardSettings> {
        let start_at_unix_us = self.start_at.map(|s| s.0);
        let Some(count) = self.num_shards else {
            if self.shard_index.is_some() {
                return Err(BenchError::config(
                    "--shard-index",
                    "given without --num-shards",
                    "pass --num-shards N too (or set SERVEBENCH_NUM_SHARDS)",
                ));
            }
            return Ok(ShardSettings { shard: None, start_at_unix_us });
        };
        let index = match (self.shard_index, job_index) {
            (Some(i), _) => i,
            (None, Some(text)) => text.trim().parse::<u32>().map_err(|_| {
                BenchError::config(
                    JOB_INDEX_ENV,
                    format!("'{text}' is not a shard index"),
                    "pass --shard-index I explicitly",
                )
            })?,
            (None, None) if count == 1 => 0,
            (None, None) => return Err(BenchError::config(
                "--shard-index",
                format!("missing with --num-shards {count}"),
                "pass --shard-index I (0-based), or run as a Kubernetes Indexed Job (JOB_COMPLETION_INDEX)",
            )),
        };
        Ok(ShardSettings { shard: Some(ShardSpec::new(index, count)?), start_at_unix_us })
    }
}

impl ShardSettings {
    /// The runner's shard configuration, with what the merged result needs to know.
    /// Refuses a total `--max-concurrency` smaller than the number of shards, and a sharded run
    /// without a records file (nothing to merge).
    pub fn runner_config(
        &self,
        backend: &str,
        label: Option<String>,
        max_concurrency: Option<usize>,
        has_records_file: bool,
    ) -> Result<Option<ShardConfig>> {
        let Some(spec) = self.shard else { return Ok(None) };
        if let Some(c) = max_concurrency.filter(|&c| spec.concurrency_share(c).is_none()) {
            return Err(BenchError::config(
                "--max-concurrency",
                format!("{c} is the total over {} shards: some shard would get no slot", spec.count),
                "pass a --max-concurrency of at least --num-shards",
            ));
        }
        if !has_records_file {
            return Err(BenchError::config(
                "--num-shards",
                "a sharded run writes no records file to merge",
                "pass --save-result (with --result-dir on a shared volume) or --records PATH",
            ));
        }
        Ok(Some(ShardConfig { spec, backend: backend.into(), label, max_concurrency_total: max_concurrency }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(n: Option<u32>, i: Option<u32>, start: Option<&str>) -> ShardArgs {
        ShardArgs {
            num_shards: n,
            shard_index: i,
            start_at: start.map(|s| crate::cli::values::start_at(s).unwrap()),
        }
    }

    #[test]
    fn index_comes_from_the_flag_then_the_indexed_job() {
        let s = args(Some(4), Some(2), None).settings(Some("3")).unwrap();
        assert_eq!(s.shard, Some(ShardSpec { index: 2, count: 4 }));
        let s = args(Some(4), None, Some("1790000000")).settings(Some("3")).unwrap();
        assert_eq!(s.shard, Some(ShardSpec { index: 3, count: 4 }));
        assert_eq!(s.start_at_unix_us, Some(1_790_000_000_000_000));
        assert_eq!(
            args(Some(1), None, None).settings(None).unwrap().shard,
            Some(ShardSpec { index: 0, count: 1 })
        );
        // A plain run inside an Indexed Job is not sharded.
        assert_eq!(args(None, None, None).settings(Some("3")).unwrap().shard, None);
        assert!(args(Some(4), None, None).settings(None).is_err());
        assert!(args(Some(4), None, None).settings(Some("x")).is_err());
        assert!(args(Some(4), Some(4), None).settings(None).is_err());
        assert!(args(None, Some(0), None).settings(None).is_err());
        assert!(crate::cli::values::start_at("soon").is_err());
    }

    #[test]
    fn runner_config_checks_concurrency_and_records() {
        let s = args(Some(4), Some(0), None).settings(None).unwrap();
        assert!(s.runner_config("openai", None, Some(3), true).is_err());
        assert!(s.runner_config("openai", None, Some(8), false).is_err());
        let c = s.runner_config("openai", None, Some(8), true).unwrap().unwrap();
        assert_eq!(c.max_concurrency_total, Some(8));
        let plain = args(None, None, None).settings(None).unwrap();
        assert_eq!(plain.runner_config("openai", None, Some(1), false).unwrap(), None);
    }
}
