//! `servebench config init | show | presets` (docs/config.md).

use crate::cli::config_file::ConfigCommand;
use crate::config_file::{argv::run_command, init, presets, render, Expanded};
use std::io::Write as _;

/// Runs a `config` subcommand; `matches` are the whole command line's, `expanded` its files.
pub fn run(c: &ConfigCommand, matches: &clap::ArgMatches, expanded: &Expanded) -> anyhow::Result<u8> {
    match c {
        ConfigCommand::Init { preset, output } => {
            let preset = preset.as_deref().map(presets::find).transpose()?;
            let text = init::template(&run_command(), preset);
            match output {
                Some(path) => {
                    let mut f =
                        std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
                            let fix = match e.kind() {
                                std::io::ErrorKind::AlreadyExists => {
                                    "name a new file (config init never overwrites one), or remove that one first"
                                }
                                _ => "name a file in a directory that exists and that you can write to",
                            };
                            servebench_core::BenchError::config(
                                "--output",
                                format!("cannot create {} ({e}); nothing was written", path.display()),
                                fix,
                            )
                        })?;
                    f.write_all(text.as_bytes())?;
                    errln!("wrote {}", path.display());
                }
                None => out!("{text}"),
            }
            Ok(0)
        }
        ConfigCommand::Show(args) => {
            // Validated as a run would be (no API key needed to show it).
            crate::config::validate(args, None)?;
            args.experiment.experiment(args.num_prompts)?;
            let show = matches
                .subcommand_matches("config")
                .and_then(|m| m.subcommand_matches("show"))
                .ok_or_else(|| anyhow::anyhow!("internal: config show without its matches"))?;
            // The combinations a run refuses (SB121: `--sim` with a server address) and the
            // warnings it gives, as the run would.
            for warning in
                crate::config::unused::check(args, &crate::config::unused::ExplicitFlags::of(show))?
            {
                errln!("{warning}");
            }
            out!("{}", show_text(show, expanded));
            Ok(0)
        }
        ConfigCommand::Presets => {
            for p in presets::PRESETS {
                outln!("{:<26} {}", p.id(), p.summary());
            }
            Ok(0)
        }
    }
}

/// The effective config of `config show`'s matches, as a config file.
fn show_text(show: &clap::ArgMatches, expanded: &Expanded) -> String {
    let cmd = run_command();
    let show_cmd = cmd
        .find_subcommand("config")
        .and_then(|c| c.find_subcommand("show"))
        .cloned()
        .unwrap_or_else(run_command);
    format!(
        "# Effective config (servebench config show): flags set by --preset, --config or the\n\
         # command line, secrets redacted; every other flag is at its default.\n{}",
        render::effective_toml(&show_cmd, show, &expanded.origins)
    )
}
