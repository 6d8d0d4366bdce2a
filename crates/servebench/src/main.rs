//! `servebench`: a benchmark client and load generator for OpenAI-compatible LLM servers.
//! Everything but the allocator lives in the library (`servebench::cmd`).

use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(servebench::cmd::main_exit_code(std::env::args()))
}
