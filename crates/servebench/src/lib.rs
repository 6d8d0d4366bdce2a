//! The `servebench` command line: flag definitions (`cli`), their validation into a run
//! configuration (`config`), and the commands behind them. `main.rs` only dispatches.

pub mod calibrate;
pub mod calibrate_truth;
pub mod cli;
pub mod cli_dataset;
pub mod cli_experiment;
pub mod cli_live;
pub mod cli_network;
pub mod cli_parsers;
pub mod cli_shard;
pub mod cli_tokens;
pub mod cli_values;
pub mod cli_vllm;
pub mod cli_workload;
pub mod commands;
pub mod compare_cmd;
pub mod config;
pub mod experiment_cmd;
pub mod merge_cmd;
pub mod os;
pub mod path_collisions;
pub mod progress;
pub mod report_cmd;
pub mod run;
pub mod sim_cmd;
pub mod sim_tls;
