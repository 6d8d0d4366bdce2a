//! The `servebench` command line: flag definitions (`cli`), their validation into a run
//! configuration (`config`), and the commands behind them. `main.rs` only dispatches.

pub mod calibrate;
pub mod cli;
pub mod config;
pub mod report_cmd;
pub mod run;
pub mod sim_cmd;
