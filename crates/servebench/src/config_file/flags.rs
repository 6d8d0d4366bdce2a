//! The run's flags as a config file sees them: the clap command, a flag by long name, and the
//! kinds of flag (switch, repeatable) that decide how a value is written.

use clap::ArgAction;

/// Keys a file may not hold: the file options themselves.
pub const NOT_IN_A_FILE: &[&str] = &["config", "preset", "config-from-result", "help", "version"];

/// The run's clap command (the top-level command: run flags are its arguments).
pub fn run_command() -> clap::Command {
    <crate::cli::Cli as clap::CommandFactory>::command()
}

/// The run argument with long name `key`.
pub fn find_arg<'a>(cmd: &'a clap::Command, key: &str) -> Option<&'a clap::Arg> {
    cmd.get_arguments().find(|a| a.get_long() == Some(key))
}

/// Whether `arg` is a switch (`--flag`, no value).
pub fn is_switch(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count)
}

/// Whether `arg` may be given several times (its values add up).
pub fn is_repeatable(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append) || arg.get_num_args().is_some_and(|n| n.max_values() > 1)
}
