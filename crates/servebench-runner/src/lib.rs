//! Orchestration of one benchmark run: preparation (model, tokenizer, workload, readiness,
//! prompt-length verification), dispatch on the arrival schedule through the concurrency gate,
//! the records file, and the client's own health measurements; what the records become (`results`:
//! the run's description, result document and console text) and experiments over many runs
//! (`experiment`: sweeps, rate searches, multi-run).

pub mod config;
pub mod experiment;
pub mod load;
pub mod observe;
pub mod otel;
pub mod prepare;
pub mod records;
pub mod results;
pub mod run;

pub use config::{DatasetSpec, InterruptMode, LoadOptions, OutputConfig, RunConfig, ShardConfig};
pub use load::dispatch::{dispatch, DispatchPlan, DispatchStats, Release};
pub use load::stops::Interrupts;
pub use observe::endpoint::MetricsServer;
pub use observe::health::{HealthSamples, HiccupProbe, CLIENT_THREAD_PREFIX};
pub use observe::live::{LiveMetrics, LiveSnapshot};
pub use observe::observer::RunObserver;
pub use prepare::prompt_check::PromptCheck;
pub use prepare::{ModelIds, Verification};
pub use records::collector::{RecordStore, DEFAULT_MAX_RECORDS_IN_MEMORY};
pub use records::sink::{read_records, read_records_file, RecordSink, RecordsFile};
pub use run::{
    prepare_experiment, prepare_run, rebuild_workload, run_benchmark, run_prepared, Prepared, PreparedRun,
    RunOutput, RunResult, WorkloadStats,
};
/// The stop signal of runs, dispatchers and observers (raise it with `cancel`).
pub use tokio_util::sync::CancellationToken;
