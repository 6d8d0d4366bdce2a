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
        Ok(Some(ShardConfig {
            spec,
            backend: backend.into(),
            label,
            max_concurrency_total: max_concurrency,
            metrics: Default::default(),
            metadata: Vec::new(),
        }))
    }

    /// Refuses `--start-at` and sharding with an experiment (`experiment`: the flag asking for
    /// it). `--start-at` anchors one schedule: every point after the first was anchored to the
    /// same, long past, instant and sent as one burst (validity `invalid`). Each shard of a
    /// search bisected on its own figures, and an experiment writes no per-point records for
    /// `merge` to combine.
    pub fn check_experiment(&self, experiment: Option<&str>) -> Result<()> {
        let Some(exp) = experiment else { return Ok(()) };
        if self.start_at_unix_us.is_some() {
            return Err(BenchError::config(
                "--start-at",
                format!(
                    "cannot be combined with {exp}: it anchors one schedule, so every point after the first would start late, all at once"
                ),
                format!("drop --start-at (or SERVEBENCH_START_AT), or drop {exp} and start one run per point"),
            ));
        }
        if let Some(spec) = self.shard {
            return Err(BenchError::config(
                "--num-shards",
                format!(
                    "cannot be combined with {exp}: each shard would run the experiment on its own share (a search bisecting on a part of the load), and its points write no records to merge",
                ),
                format!(
                    "run the experiment in one process, or shard one run per point (--num-shards {} without {exp})",
                    spec.count
                ),
            ));
        }
        Ok(())
    }

    /// Refuses shards some of which would send no request: `requests` (the most the run
    /// sends, when `--num-prompts` bounds it) fewer than the shards. Such a shard wrote an empty
    /// result and exited 0.
    pub fn check_requests(&self, requests: Option<u64>) -> Result<()> {
        let (Some(spec), Some(n)) = (self.shard, requests) else { return Ok(()) };
        if n >= u64::from(spec.count) {
            return Ok(());
        }
        Err(BenchError::config(
            "--num-shards",
            format!(
                "{} shards share {n} requests (--num-prompts): shards {n} to {} would send none",
                spec.count,
                spec.count - 1
            ),
            "pass at most --num-prompts shards, or a --num-prompts of at least --num-shards",
        ))
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

    /// Pins `--start-at` and sharding with an experiment: every point after the first was
    /// anchored to the passed start and sent as one burst (and still picked as the best); each
    /// shard of a search bisected on its own, and no point wrote records to merge.
    #[test]
    fn start_at_and_shards_with_an_experiment_are_refused_naming_both_flags() {
        let start = args(None, None, Some("1790000000")).settings(None).unwrap();
        let e = start.check_experiment(Some("--sweep-request-rate")).unwrap_err();
        assert_eq!(e.code().as_str(), "SB101");
        let line = e.to_string();
        assert!(line.contains("--start-at") && line.contains("--sweep-request-rate"), "{line}");
        assert!(line.contains("drop --start-at"), "{line}");
        let sharded = args(Some(2), Some(0), None).settings(None).unwrap();
        let e = sharded.check_experiment(Some("--num-runs 3")).unwrap_err();
        assert_eq!(e.code().as_str(), "SB101");
        assert!(e.to_string().contains("--num-shards") && e.to_string().contains("--num-runs 3"), "{e}");
        assert!(start.check_experiment(None).is_ok() && sharded.check_experiment(None).is_ok());
        assert!(args(None, None, None).settings(None).unwrap().check_experiment(Some("--slo")).is_ok());
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

    /// Pins the empty shard: `--num-prompts 10 --num-shards 20 --shard-index 15` sent "0 of 10
    /// requests" and exited 0. Refused up front as a too small `--max-concurrency` is.
    #[test]
    fn shards_outnumbering_the_requests_are_refused_up_front() {
        let s = args(Some(20), Some(15), None).settings(None).unwrap();
        let e = s.check_requests(Some(10)).unwrap_err();
        assert_eq!(e.code().as_str(), "SB101");
        assert!(
            e.to_string()
                .contains("20 shards share 10 requests (--num-prompts): shards 10 to 19 would send none"),
            "{e}"
        );
        // Every shard has one: shard 0 is refused too (the run as a whole would be incomplete).
        assert!(args(Some(20), Some(0), None).settings(None).unwrap().check_requests(Some(19)).is_err());
        assert!(s.check_requests(Some(20)).is_ok());
        assert!(s.check_requests(None).is_ok(), "a --duration or --stages run sets its own count");
        assert!(args(None, None, None).settings(None).unwrap().check_requests(Some(1)).is_ok());
    }
}
