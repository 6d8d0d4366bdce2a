//! The `servebench` command line: flag declarations (`cli/`), their validation into a run
//! configuration (`config/`), and the commands behind them (`cmd/`, whose `mod.rs` dispatches).
//! `os/` holds the process-level tuning, signals and runtimes; `progress` the console
//! observers; `tui/` the live dashboard (`--tui`). `main.rs` only installs the allocator and calls [`cmd::main_exit_code`].

// The console macros (`outln!`, `out!`, `errln!`), declared first so that every module
// below can use them; the `print` lints keep the panicking std macros out of this crate.
#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::print_stderr))]
#[macro_use]
mod console;

pub mod cli;
pub mod cmd;
pub mod config;
pub mod config_file;
pub mod os;
pub mod progress;
pub mod tui;
