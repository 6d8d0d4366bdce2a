//! The binary's whole life after `main`: parse the command line (typed values, the coded
//! refusals), pin the CPU if asked, run the subcommand, and turn its outcome into an exit code
//! from the error table. `main.rs` only installs the allocator and calls [`main_exit_code`].

pub mod calibrate;
pub mod calibrate_truth;
pub mod compare;
pub mod config;
pub mod experiment;
pub mod merge;
pub mod report;
pub mod run;
pub mod sim;
pub mod sim_tls;

use servebench_core::{BenchError, ErrorCode};

use crate::cli;

/// Runs the command line `args` (as `std::env::args` gives it) and returns the exit code.
pub fn main_exit_code(args: impl Iterator<Item = String>) -> u8 {
    crate::os::disable_transparent_huge_pages();
    crate::os::purge_freed_memory_immediately();
    let args = match cli::front::rewrite(cli::normalize_underscores(args)) {
        Ok(r) => {
            if !r.unused.is_empty() {
                errln!(
                    "note: --compare compares two result files and runs no benchmark (as vllm-rs); not used: {}",
                    r.unused.join(" ")
                );
            }
            r.args
        }
        Err(e) => {
            errln!("{}", e.user_line());
            return e.exit_code();
        }
    };
    let expanded = match crate::config_file::expand(args) {
        Ok(e) => e,
        Err(e) => {
            errln!("{}", e.user_line());
            return e.exit_code();
        }
    };
    for note in &expanded.notes {
        errln!("{note}");
    }
    let args = expanded.args.clone();
    if let Some(flag) = cli::find_unsupported(args.get(1..).unwrap_or_default()) {
        let e = BenchError::FlagNotSupported { flag: flag.to_string(), hint: String::new() };
        errln!("{}", e.user_line());
        return e.exit_code();
    }
    let matches = match <cli::Cli as clap::CommandFactory>::command().try_get_matches_from(&args) {
        Ok(m) => m,
        Err(e) => return flag_value_error(e),
    };
    // Which flags were given (not defaulted): flags that would be ignored are named.
    let explicit = crate::config::unused::ExplicitFlags::of(&matches);
    let cli = match <cli::Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let pin = match &cli.command {
        Some(cli::Command::Sim(sim)) => sim.pin_cpu,
        None => cli.run.pin_cpu,
        Some(_) => None,
    };
    if let Some(cpu) = pin {
        if let Err(e) = crate::os::pin_to_cpu("--pin-cpu", cpu) {
            errln!("{}", e.user_line());
            return e.exit_code();
        }
    }
    let result = match cli.command {
        Some(cli::Command::Explain { code }) => explain(code.as_deref()),
        Some(cli::Command::Sim(sim)) => crate::cmd::sim::serve(&sim),
        Some(cli::Command::Calibrate(args)) => crate::cmd::calibrate::calibrate(&args),
        Some(cli::Command::Report(args)) => crate::cmd::report::report(&args),
        Some(cli::Command::Merge(args)) => crate::cmd::merge::merge(&args),
        Some(cli::Command::Compare(args)) => crate::cmd::compare::run(&args),
        Some(cli::Command::Config(c)) => crate::cmd::config::run(&c, &matches, &expanded),
        None => {
            let config =
                crate::config_file::from_result::recorded(&crate::config_file::argv::run_command(), &matches);
            crate::cmd::run::run(&cli.run, &explicit, config)
        }
    };
    result.unwrap_or_else(|e| {
        match e.downcast_ref::<BenchError>() {
            Some(b) => errln!("{}", b.user_line()),
            None => errln!("error: {e:#}"),
        }
        // The error table's exit code; 1 for an error without a code.
        e.downcast_ref::<BenchError>().map_or(1, BenchError::exit_code)
    })
}

/// A flag value our parsers refused (`cli/values.rs`) is their coded error: its one line and
/// the table's exit code. `--help` and `--version` are clap's own output; every other parse
/// error (unknown flag, a value of the wrong type, a missing value) is SB100 with clap's
/// message and tip.
fn flag_value_error(e: clap::Error) -> u8 {
    use clap::error::ErrorKind;
    use std::error::Error as _;
    if let Some(coded) = e.source().and_then(|s| s.downcast_ref::<BenchError>()) {
        errln!("{}", coded.user_line());
        return coded.exit_code();
    }
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit()
    }
    let coded = command_line_error(&e.render().to_string());
    errln!("{}", coded.user_line());
    coded.exit_code()
}

/// SB100 from clap's rendered error: its first line is the problem, its `tip:` lines the fix.
fn command_line_error(rendered: &str) -> BenchError {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty()).peekable();
    let first = lines.next().unwrap_or("the command line does not parse");
    let mut problem = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    // "the following required arguments were not provided:" lists them on the next lines.
    if problem.ends_with(':') {
        let listed: Vec<&str> =
            std::iter::from_fn(|| lines.next_if(|l| !l.starts_with("Usage:") && !l.starts_with("tip:")))
                .collect();
        problem = format!("{problem} {}", listed.join(", "));
    }
    let tips: Vec<&str> = lines.filter_map(|l| l.strip_prefix("tip: ")).collect();
    let fix = if tips.is_empty() {
        "see `servebench --help` for the flags and their values".to_owned()
    } else {
        tips.join("; ")
    };
    BenchError::CommandLine { problem, fix }
}

/// `servebench explain [CODE]`: every code with its title and the exit codes, or one code's
/// causes and fixes.
fn explain(code: Option<&str>) -> anyhow::Result<u8> {
    match code {
        None => {
            for c in ErrorCode::ALL {
                outln!("{}  {}", c.as_str(), c.title());
            }
            outln!("\n{}", servebench_core::error::exit_codes_text());
            outln!("\nRun `servebench explain CODE` for causes and fixes.");
            Ok(0)
        }
        Some(text) => match ErrorCode::parse(text) {
            Some(c) => {
                outln!("{} — {}\n\n{}", c.as_str(), c.title(), c.explain());
                Ok(0)
            }
            None => {
                errln!(
                    "error: '{text}' is not a servebench error code; run `servebench explain` to list them"
                );
                Ok(2)
            }
        },
    }
}
