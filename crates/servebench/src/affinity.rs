//! `--pin-cpu N`: keeps a process on one CPU, so that a client and a simulator on one host
//! do not preempt each other (what `servebench calibrate` does by default with two or more
//! CPUs; docs/performance.md shows the difference).

use servebench_core::BenchError;

/// Restricts the calling thread — and so every thread it starts afterwards, the async runtime
/// included — to CPU `cpu`. Call it before the runtime is built.
#[allow(unsafe_code)]
pub fn pin_to_cpu(flag: &str, cpu: usize) -> Result<(), BenchError> {
    #[cfg(target_os = "linux")]
    {
        let max = usize::try_from(libc::CPU_SETSIZE).unwrap_or(1024);
        if cpu >= max {
            return Err(BenchError::config(
                flag,
                format!("CPU {cpu} is beyond the {max} CPUs Linux can address"),
                "pass a CPU number from `nproc` (0-based)",
            ));
        }
        // SAFETY: cpu_set_t is a plain bit array (all zeroes is the empty set); CPU_SET writes
        // a bit below CPU_SETSIZE (checked above); sched_setaffinity reads the set we pass,
        // with its true size, for the calling thread (pid 0).
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        if rc != 0 {
            return Err(BenchError::config(
                flag,
                format!("cannot run on CPU {cpu}: {}", std::io::Error::last_os_error()),
                "pass a CPU this process may use (`taskset -pc $$` lists them)",
            ));
        }
        Ok(())
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
