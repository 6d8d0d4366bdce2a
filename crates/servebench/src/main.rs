//! `servebench`: a benchmark client and load generator for OpenAI-compatible LLM servers.

use servebench::{calibrate, cli, report_cmd, run, sim_cmd};

use servebench_core::{BenchError, ErrorCode};
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The exit code of a failed command: the error table's, 1 for an error without a code.
fn exit_code_for(err: &anyhow::Error) -> u8 {
    err.downcast_ref::<BenchError>().map_or(1, BenchError::exit_code)
}

fn report_error(err: &anyhow::Error) {
    match err.downcast_ref::<BenchError>() {
        Some(e) => eprintln!("{}", e.user_line()),
        None => eprintln!("error: {err:#}"),
    }
}

fn main() -> ExitCode {
    servebench::os::disable_transparent_huge_pages();
    servebench::os::purge_freed_memory_immediately();
    let args = cli::normalize_underscores(std::env::args());
    if let Some(flag) = cli::find_unsupported(args.get(1..).unwrap_or_default()) {
        let e = BenchError::FlagNotSupported { flag: flag.to_string(), hint: String::new() };
        eprintln!("{}", e.user_line());
        return ExitCode::from(e.exit_code());
    }
    let matches = match <cli::Cli as clap::CommandFactory>::command().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => return flag_value_error(e),
    };
    // Which flags were given (not defaulted): flags that would be ignored are named.
    servebench::cli_unused::record_explicit(&matches);
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
        if let Err(e) = servebench::os::pin_to_cpu("--pin-cpu", cpu) {
            eprintln!("{}", e.user_line());
            return ExitCode::from(e.exit_code());
        }
    }
    let result = match cli.command {
        Some(cli::Command::Explain { code }) => explain(code.as_deref()),
        Some(cli::Command::Sim(sim)) => sim_cmd::serve(&sim),
        Some(cli::Command::Calibrate(args)) => calibrate::calibrate(&args),
        Some(cli::Command::Report(args)) => report_cmd::report(&args),
        Some(cli::Command::Merge(args)) => servebench::merge_cmd::merge(&args),
        Some(cli::Command::Compare(args)) => servebench::compare_cmd::compare_cmd(&args),
        None => run::run(&cli.run),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            report_error(&e);
            ExitCode::from(exit_code_for(&e))
        }
    }
}

/// A flag value our parsers refused (`cli_values.rs`) is the coded one-line error they wrote,
/// exit 2; every other clap error (unknown flag, `--help`, `--version`) is clap's own.
fn flag_value_error(e: clap::Error) -> ExitCode {
    use std::error::Error as _;
    match e.source().map(ToString::to_string).filter(|s| s.starts_with("error[SB")) {
        Some(line) => {
            eprintln!("{line}");
            ExitCode::from(2)
        }
        None => e.exit(),
    }
}

fn explain(code: Option<&str>) -> anyhow::Result<u8> {
    match code {
        None => {
            for c in ErrorCode::ALL {
                println!("{}  {}", c.as_str(), c.title());
            }
            println!("\n{}", servebench_core::error::exit_codes_text());
            println!("\nRun `servebench explain CODE` for causes and fixes.");
            Ok(0)
        }
        Some(text) => match ErrorCode::parse(text) {
            Some(c) => {
                println!("{} — {}\n\n{}", c.as_str(), c.title(), c.explain());
                Ok(0)
            }
            None => {
                eprintln!(
                    "error: '{text}' is not a servebench error code; run `servebench explain` to list them"
                );
                Ok(2)
            }
        },
    }
}
