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

/// `mi_option_purge_delay` in mimalloc.h's `enum mi_option_e` (the same in v2 and v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc's own purge delay (10 ms unless `MIMALLOC_PURGE_DELAY` says otherwise), read
/// before it is changed.
static DEFAULT_PURGE_DELAY_MS: std::sync::OnceLock<std::ffi::c_long> = std::sync::OnceLock::new();

/// mimalloc keeps freed pages for 10 ms and purges them only from the thread that freed them.
/// Loading the tokenizer and building the workload free tens of MB on threads that then go
/// idle, so without this the measured phase's RSS carries them. Purging at once costs no
/// measurable CPU at 1,000 streams (docs/performance.md).
#[allow(unsafe_code)]
fn purge_freed_memory_immediately() {
    // SAFETY: reads and sets a process-wide allocator option; no pointers are involved.
    unsafe {
        let _ = DEFAULT_PURGE_DELAY_MS.set(libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY));
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0)
    }
}

/// While a workload is built, mimalloc's purge delay is back to its default: tokenizing a
/// dataset frees and re-allocates pages all the time, and purging each at once made building a
/// 100,000-conversation ShareGPT workload twice as slow, most of it in page faults
/// (docs/performance.md).
#[allow(unsafe_code)]
fn keep_freed_pages() {
    let delay = DEFAULT_PURGE_DELAY_MS.get().copied().unwrap_or(10);
    // SAFETY: sets a process-wide allocator option; no pointers are involved.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, delay) }
}

/// After the build: the pages freed meanwhile on this thread and on the rayon workers (which
/// did the tokenizing and now go idle) are purged, then the delay is 0 again.
#[allow(unsafe_code)]
fn release_freed_pages() {
    // SAFETY: `mi_collect` takes no pointers; it frees the calling thread's unused pages and
    // purges the arenas' pages scheduled for purging (which it skips once the delay is 0, so
    // this comes first).
    rayon::broadcast(|_| unsafe { libmimalloc_sys::mi_collect(true) });
    unsafe { libmimalloc_sys::mi_collect(true) }
    // SAFETY: as above.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
}

/// mimalloc advises its arenas `MADV_HUGEPAGE`, so with THP in `madvise` mode (common) every
/// 2 MiB region the allocator touches becomes resident and is zeroed as a whole: at 1,000 streams
/// that added ~45 MB of peak RSS and page-fault CPU during the measured phase. The client gains
/// nothing from huge pages; disable them for the process (inherited by children, e.g. the sim).
#[allow(unsafe_code)]
fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only; failure (old kernel) just leaves THP as it was.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() -> ExitCode {
    disable_transparent_huge_pages();
    purge_freed_memory_immediately();
    servebench_runner::health::set_freed_memory_hooks(servebench_runner::health::FreedMemoryHooks {
        keep: keep_freed_pages,
        release: release_freed_pages,
    });
    let args = cli::normalize_underscores(std::env::args());
    if let Some(flag) = cli::find_unsupported(args.get(1..).unwrap_or_default()) {
        let e = BenchError::FlagNotSupported { flag: flag.to_string(), hint: String::new() };
        eprintln!("{}", e.user_line());
        return ExitCode::from(e.exit_code());
    }
    let matches = <cli::Cli as clap::CommandFactory>::command().get_matches_from(args);
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
        if let Err(e) = servebench::affinity::pin_to_cpu("--pin-cpu", cpu) {
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
