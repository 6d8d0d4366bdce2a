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
pub mod prepare;
pub mod probe_requests;
pub mod profiling;
pub mod retokenize;
pub mod run;
pub mod server_metrics;
pub mod server_workload;
pub mod session;
pub mod shard;
pub mod sink;
pub mod stages;

pub use collector::{RecordStore, DEFAULT_MAX_RECORDS_IN_MEMORY};
pub use config::{DatasetSpec, InterruptMode, RunConfig};
pub use dispatch::{dispatch, stop_signal, DispatchPlan, DispatchStats, Release, StopHandle, StopSignal};
pub use health::{HiccupProbe, CLIENT_THREAD_PREFIX};
pub use live::{LiveMetrics, LiveSnapshot};
pub use metrics_server::MetricsServer;
pub use prepare::{ModelIds, Verification};
pub use run::{
    prepare_run, run_benchmark, run_prepared, ClientHealth, Prepared, PreparedRun, RunObserver, RunOutput,
    RunResult, WorkloadStats,
};
pub use sink::{read_records, read_records_file, RecordSink, RecordsFile};
