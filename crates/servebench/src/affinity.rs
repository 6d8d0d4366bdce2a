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
    fn pinning_to_an_allowed_cpu_works_on_a_thread_of_its_own() {
        // A thread of its own, so the test harness's other threads keep their CPUs.
        let r = std::thread::spawn(|| {
            pin_to_cpu("--pin-cpu", 0)?;
            Ok::<usize, BenchError>(std::thread::available_parallelism().map_or(0, usize::from))
        })
        .join()
        .map_err(|_| "thread panicked");
        assert_eq!(r.ok().and_then(Result::ok), Some(1), "pinned to one CPU, one is available");
    }
}
