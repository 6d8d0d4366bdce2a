//! Orchestration of one benchmark run: preparation (model, tokenizer, workload, readiness,
//! prompt-length verification), dispatch on the arrival schedule through the concurrency gate,
//! the records file, and the client's own health measurements.

pub mod config;
pub mod dispatch;
pub mod health;
pub mod prepare;
pub mod run;
pub mod server_workload;
pub mod sink;

pub use config::{DatasetSpec, InterruptMode, RunConfig};
pub use dispatch::{dispatch, stop_signal, DispatchPlan, DispatchStats, Release, StopHandle, StopSignal};
pub use health::{HiccupProbe, CLIENT_THREAD_PREFIX};
pub use prepare::{ModelIds, Verification};
pub use run::{run_benchmark, ClientHealth, RunObserver, RunOutput, RunResult, WorkloadStats};
pub use sink::{read_records, RecordSink};
