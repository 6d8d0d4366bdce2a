//! Flags of config files and presets (`--config`, `--preset`) and the `servebench config`
//! subcommands. Their implementation is in `config_file/` and `cmd/config.rs`.

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `--config` and `--preset` of a run (spliced in before parsing: `config_file::expand`).
#[derive(Debug, Clone, Default, Args)]
pub struct ConfigFileArgs {
    /// TOML file of run flags by long name (`max-concurrency = 8`); command-line flags override
    /// it (docs/config.md; `servebench config init` writes one).
    #[arg(long, value_name = "FILE", help_heading = "Config file")]
    pub config: Option<PathBuf>,
    /// Scenario preset, e.g. chat-interactive@1 (`servebench config presets` lists them); --config
    /// and command-line flags override its values.
    #[arg(long, value_name = "NAME", help_heading = "Config file")]
    pub preset: Option<String>,
    /// Rerun a saved result: its recorded effective config (the `config` key) is the base that
    /// --config and command-line flags override; redacted secrets must be given again.
    #[arg(long, value_name = "RESULT", help_heading = "Config file")]
    pub config_from_result: Option<PathBuf>,
}

/// `servebench config ...`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Write a config file of every run flag, commented out at its default, with its help.
    Init {
        /// Start from this scenario preset (its values set, everything else commented).
        #[arg(long, value_name = "NAME")]
        preset: Option<String>,
        /// Write to FILE instead of standard output (an existing file is not overwritten).
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Print the merged, validated config of a command line (its --preset, --config and flags)
    /// as a config file, secrets redacted.
    Show(Box<crate::cli::RunArgs>),
    /// List the scenario presets shipped in this binary.
    Presets,
}
