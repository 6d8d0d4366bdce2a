//! Token-accounting flags (flattened into `RunArgs`; definitions in `docs/metrics.md`,
//! "Token accounting").

use clap::Args;

/// Token accounting.
#[derive(Debug, Clone, Default, Args)]
pub struct TokenArgs {
    /// Count every completed request's generated text with the client tokenizer and report it
    /// next to server usage and event counts (without it, only responses lacking usage are
    /// counted). Keeps each request's text until it ends; costs client CPU during the run.
    #[arg(long, help_heading = "Output")]
    pub retokenize_output: bool,
}
