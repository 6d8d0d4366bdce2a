//! The `servebench` binary's tests, in one test binary (one link, one environment policy):
//! each module was a test binary of its own. They run the binary as a user would
//! (`support::bin`, the test kit's command with its environment policy) or, for the matrix and
//! the parity list, call the library in-process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod agentic_e2e;
mod agentic_early_stop_e2e;
mod agentic_idle_gap_e2e;
mod backends_e2e;
mod calibrate;
mod ceiling_e2e;
mod cli_parity;
mod client_controls_e2e;
mod config_file_e2e;
mod dataset_flags_e2e;
mod datasets_cli;
mod e2e_sim;
mod e2e_workloads;
mod early_stop_e2e;
mod experiments;
mod hf_parser_bodies;
mod k8s_manifests;
mod kernel_timestamps_e2e;
mod llamacpp_console_e2e;
mod llamacpp_queue_e2e;
mod modes_e2e;
mod native_backend_cli;
mod network_e2e;
mod otel_e2e;
mod phases_validity_e2e;
mod prefix_cache_e2e;
mod prefix_cache_llamacpp;
mod prefix_cache_multi_turn_e2e;
mod prefix_cache_per_slot_e2e;
mod regression;
mod report_chromium_e2e;
mod server_metrics_e2e;
mod shard_early_stop_e2e;
mod shard_merge;
mod sim_matrix;
mod token_accounting_e2e;
mod tui_tmux;
mod typed_flags;
mod vllm034_chat_template;
mod vllm_flags_e2e;
mod vllm_rs_parity;
