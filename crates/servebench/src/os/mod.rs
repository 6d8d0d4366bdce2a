//! Everything the binary asks of the operating system and the allocator, in one place: CPU
//! pinning (`--pin-cpu`), transparent huge pages, the open-files limit, signalling a child (and
//! itself), the terminal the dashboard takes over (`terminal`), and mimalloc's purge policy.
//! System calls go through `rustix`'s safe wrappers; only the allocator options are FFI
//! (mimalloc's own C API), each with its safety argument.

pub mod runtime;
pub mod sched;
pub mod signal;
pub mod terminal;

use servebench_core::BenchError;

/// Restricts the calling thread — and so every thread it starts afterwards, the async runtime
/// included — to CPU `cpu`. Call it before the runtime is built.
pub fn pin_to_cpu(flag: &str, cpu: usize) -> Result<(), BenchError> {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::{sched_setaffinity, CpuSet};
        if cpu >= CpuSet::MAX_CPU {
            return Err(BenchError::config(
                flag,
                format!("CPU {cpu} is beyond the {} CPUs Linux can address", CpuSet::MAX_CPU),
                "pass a CPU number from `nproc` (0-based)",
            ));
        }
        let mut set = CpuSet::new();
        set.set(cpu);
        sched_setaffinity(None, &set).map_err(|e| {
            BenchError::config(
                flag,
                format!("cannot run on CPU {cpu}: {e}"),
                "pass a CPU this process may use (`taskset -pc $$` lists them)",
            )
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        Err(BenchError::config(flag, "CPU pinning is implemented for Linux only", "drop --pin-cpu"))
    }
}

/// The CPUs this process may run on, from `Cpus_allowed_list` in `/proc/self/status`
/// (e.g. `0-3,8`); empty when unknown (not Linux).
pub fn allowed_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(parse_cpu_list).unwrap_or_default()
}

/// Parses a kernel CPU list (`0-3,8,10-11`); malformed parts are skipped.
fn parse_cpu_list(list: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
            out.extend(a..=b.min(a + 4096));
        }
    }
    out
}

/// Raises the open-files soft limit to the hard limit (also when the hard limit is unlimited);
/// returns the soft limit now in force, `None` when it is unlimited.
pub fn raise_open_files_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    let cur = lim.current?;
    if lim.maximum.is_some_and(|max| max <= cur) {
        return Some(cur);
    }
    let raised = Rlimit { current: lim.maximum, maximum: lim.maximum };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => lim.maximum,
        Err(_) => Some(cur),
    }
}

/// Sends SIGTERM to the child process `pid`.
pub fn terminate(pid: u32) -> std::io::Result<()> {
    use rustix::process::{kill_process, Pid, Signal};
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a process id"))?;
    kill_process(pid, Signal::TERM).map_err(std::io::Error::from)
}

/// mimalloc advises its arenas `MADV_HUGEPAGE`, so with THP in `madvise` mode (common) every
/// 2 MiB region the allocator touches becomes resident and is zeroed as a whole: at 1,000
/// streams that added ~45 MB of peak RSS and page-fault CPU during the measured phase. The
/// client gains nothing from huge pages; disable them for the process (inherited by children,
/// e.g. the sim). Failure (an old kernel) leaves THP as it was.
pub fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

/// `mi_option_purge_delay` in mimalloc.h's `enum mi_option_e` (the same in v2 and v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc's own purge delay (10 ms unless `MIMALLOC_PURGE_DELAY` says otherwise), read
/// before it is changed.
static DEFAULT_PURGE_DELAY_MS: std::sync::OnceLock<std::ffi::c_long> = std::sync::OnceLock::new();

/// mimalloc keeps freed pages for 10 ms and purges them only from the thread that freed them.
/// Loading the tokenizer and building the workload free tens of MB on threads that then go
/// idle, so without this the measured phase's RSS carries them. Purging at once costs no
/// measurable CPU at 1,000 streams (docs/performance.md). Also registers the hooks that
/// suspend it while a workload is built.
#[allow(unsafe_code)]
pub fn purge_freed_memory_immediately() {
    // SAFETY: reads and sets a process-wide allocator option; no pointers are involved.
    unsafe {
        let _ = DEFAULT_PURGE_DELAY_MS.set(libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY));
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0)
    }
    servebench_runner::observe::health::set_freed_memory_hooks(
        servebench_runner::observe::health::FreedMemoryHooks {
            keep: keep_freed_pages,
            release: release_freed_pages,
        },
    );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_cpu_is_a_config_error() {
        let e = pin_to_cpu("--pin-cpu", 1 << 20).unwrap_err();
        assert_eq!(e.code(), servebench_core::ErrorCode::ConfigInvalid);
        assert!(e.to_string().contains("--pin-cpu"), "{e}");
    }

    #[test]
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list("5"), vec![5]);
        assert_eq!(parse_cpu_list("x,2"), vec![2]);
        assert!(!allowed_cpus().is_empty(), "Linux test hosts report their CPUs");
    }

    #[test]
    fn the_open_files_limit_is_known_and_at_least_what_it_was() {
        let before = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        let now = raise_open_files_limit();
        assert!(now.is_some());
        assert!(now >= before, "{now:?} < {before:?}");
    }

    #[test]
    fn terminating_a_nonexistent_pid_is_an_error_not_a_panic() {
        assert!(terminate(0).is_err());
    }

    #[test]
    fn pinning_to_an_allowed_cpu_leaves_one_available() {
        // A thread of its own, so the test harness's other threads keep their CPUs; the first
        // CPU this process may use (CI containers need not include CPU 0).
        let r = std::thread::spawn(|| {
            let cpu = (0..1024).find(|&c| pin_to_cpu("--pin-cpu", c).is_ok())?;
            Some((cpu, std::thread::available_parallelism().map_or(0, usize::from)))
        })
        .join()
        .ok()
        .flatten();
        assert!(matches!(r, Some((_, 1))), "pinned to one CPU, one is available: {r:?}");
    }
}
