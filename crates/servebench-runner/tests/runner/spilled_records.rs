//! Records beyond `--max-records-in-memory` are written to disk in sorted runs and walked back
//! (`CompactRecords::spilling_beyond`): a run whose records were mostly on disk gives the
//! records and metrics of the same records held in memory — those its records file holds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use servebench_client::backend::BackendKind;
use servebench_core::compact_records::MIN_SPILL_RUN;
use servebench_core::metrics::{compute, MetricsConfig};
use servebench_runner::{run_benchmark, CancellationToken, RunResult};
use servebench_sim::SimConfig;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spilled_records_give_the_result_of_held_ones() {
    let n = 2 * MIN_SPILL_RUN + 300;
    let sim_cfg = SimConfig::new("m", crate::common::cl100k()).with_fixed_timing_ms(1.0, 0.2).unwrap();
    let sim = servebench_sim::start(sim_cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.records.jsonl");
    let mut cfg = crate::common::config(sim.base_url(), "m", BackendKind::Completions, n);
    cfg.max_concurrency = Some(64);
    cfg.records_path = Some(path.clone());
    cfg.max_records_in_memory = 0;
    let stop = CancellationToken::new();
    let out = match run_benchmark(cfg, Arc::new(crate::common::Quiet), stop).await.unwrap() {
        RunResult::Completed(out) => out,
        RunResult::DryRun { .. } => panic!("not a dry run"),
    };
    let records = &out.records;
    assert_eq!(records.spilled().0, 2 * MIN_SPILL_RUN, "two runs on disk, the rest in memory");
    assert_eq!(records.len(), n);
    assert!(records.spill_read_failure().is_none() && records.spill_write_failure().is_none());

    let (mut from_file, truncated) = servebench_runner::records::sink::read_records(&path).unwrap();
    assert_eq!((from_file.len(), truncated), (n, 0));
    from_file.sort_by_key(|r| r.index);
    assert_eq!(records.to_vec(), from_file);
    let cfg = MetricsConfig::default();
    let walked = compute(records, &cfg);
    assert_eq!(walked.completed, n as u64);
    assert_eq!(format!("{walked:?}"), format!("{:?}", compute(&from_file, &cfg)));
}
