//! The runner's integration tests, in one test binary (one link): each module was a test
//! binary of its own. `common` is the run configuration they share; servers come from the
//! shared test kit (`servebench_testkit`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod agentic_tree;
mod control_plane;
mod engine_names;
mod fault_matrix;
mod fault_matrix_paths;
mod lazy_workload;
mod live_metrics;
mod load_shapes;
mod multi_turn;
mod prefix_matrix;
mod readiness;
mod retokenize_after_run;
mod spilled_records;
mod tokenize_dialects;
mod trace_replay;
mod verify_tokenize;
