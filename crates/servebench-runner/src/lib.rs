//! Orchestration of one benchmark run: preparation (model, tokenizer, workload, readiness,
//! prompt-length verification), dispatch on the arrival schedule through the concurrency gate,
//! the records file, and the client's own health measurements.

pub mod batch;
pub mod collector;
pub mod config;
pub mod dispatch;
pub mod failure_codes;
pub mod health;
pub mod live;
pub mod load;
pub mod lora;
pub mod metrics_server;
pub mod network_notes;
pub mod observer;
pub mod prepare;
pub mod probe_requests;
pub mod profiling;
pub mod prompt_check;
pub mod ready;
pub mod retokenize;
pub mod run;
pub mod server_metrics;
pub mod server_tokenize;
pub mod server_workload;
pub mod session;
pub mod shard;
pub mod sink;
pub mod stages;
pub mod tokenize_dialect;

pub use collector::{RecordStore, DEFAULT_MAX_RECORDS_IN_MEMORY};
pub use config::{DatasetSpec, InterruptMode, LoadOptions, RunConfig, ShardConfig};
pub use dispatch::{dispatch, stop_signal, DispatchPlan, DispatchStats, Release, StopHandle, StopSignal};
pub use health::{HealthSamples, HiccupProbe, CLIENT_THREAD_PREFIX};
pub use live::{LiveMetrics, LiveSnapshot};
pub use metrics_server::MetricsServer;
pub use observer::RunObserver;
pub use prepare::{ModelIds, Verification};
pub use prompt_check::PromptCheck;
pub use run::{
    prepare_experiment, prepare_run, rebuild_workload, run_benchmark, run_prepared, Prepared, PreparedRun,
    RunOutput, RunResult, WorkloadStats,
};
pub use sink::{read_records, read_records_file, RecordSink, RecordsFile};
