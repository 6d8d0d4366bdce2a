//! The `servebench` command line: flag declarations (`cli/`), their validation into a run
//! configuration (`config/`), and the commands behind them (`cmd/`, whose `mod.rs` dispatches).
//! `os/` holds the process-level tuning, signals and runtimes; `progress` the console
//! observers; `tui/` the live dashboard (`--tui`). `main.rs` only installs the allocator and calls [`cmd::main_exit_code`].

pub mod cli;
pub mod cmd;
pub mod config;
pub mod config_file;
pub mod os;
pub mod progress;
pub mod tui;
