//! What every module shares: the binary under the test kit's environment policy.

use std::process::Command;

/// `servebench` with no API keys, proxies, TLS trust or shard variables from the caller's
/// environment, Hugging Face offline and the test cache (`servebench_testkit::cli`).
pub fn bin() -> Command {
    servebench_testkit::cli::command(env!("CARGO_BIN_EXE_servebench"))
}
