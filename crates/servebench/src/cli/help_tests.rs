//! Every argument of every (sub)command has help text: `servebench --help` is the newcomer's
//! manual, and a flag without a line there is a flag nobody can discover.

use super::Cli;
use clap::CommandFactory;

/// `command path: --flag` for every argument (of the command and all its subcommands) that has
/// no help text.
fn arguments_without_help(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if matches!(id, "help" | "version") {
            continue;
        }
        let has_help = arg.get_help().is_some_and(|h| !h.to_string().trim().is_empty())
            || arg.get_long_help().is_some_and(|h| !h.to_string().trim().is_empty());
        if !has_help {
            let name = arg.get_long().map_or_else(|| id.to_owned(), |l| format!("--{l}"));
            missing.push(format!("{path}: {name}"));
        }
    }
    for sub in cmd.get_subcommands() {
        arguments_without_help(sub, &format!("{path} {}", sub.get_name()), missing);
    }
}

#[test]
fn every_argument_has_help_text() {
    let mut missing = Vec::new();
    arguments_without_help(&Cli::command(), "servebench", &mut missing);
    assert!(missing.is_empty(), "{} arguments without help text:\n{}", missing.len(), missing.join("\n"));
}
