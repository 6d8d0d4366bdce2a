//! The scheduler time slice of the client's threads. On Linux 6.12+ (EEVDF), a `SCHED_OTHER`
//! thread may ask for a custom slice (`sched_setattr`'s runtime; 0.1–100 ms, no privilege
//! needed): a shorter one gives its wake-ups an earlier deadline, so a client thread woken by a
//! socket preempts batch work on its core sooner and reads the bytes sooner after they arrived
//! (docs/metrics.md, "Receive timestamps"; docs/performance.md has the before/after). Threads
//! started afterwards inherit it, so it is asked for on the main thread before the client's
//! runtime is built — after an embedded simulator's, which keeps the default.

use servebench_runner::config::TimeSlice;

/// The slice asked for: the shortest the kernel grants (it clamps to 0.1 ms).
pub const SHORT_SLICE_US: u64 = 100;

/// Asks for [`SHORT_SLICE_US`] for the calling thread (and the threads it starts later) and
/// reads it back; what the thread runs with, and why when it is the kernel's default.
pub fn request_short_time_slice() -> TimeSlice {
    #[cfg(target_os = "linux")]
    {
        linux::request(SHORT_SLICE_US * 1000)
    }
    #[cfg(not(target_os = "linux"))]
    {
        TimeSlice::Unavailable { why: "custom time slices are a Linux feature".into() }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::TimeSlice;

    fn attr_size() -> u32 {
        std::mem::size_of::<libc::sched_attr>() as u32
    }

    /// The calling thread's scheduling attributes.
    #[allow(unsafe_code)]
    pub(super) fn get() -> std::io::Result<libc::sched_attr> {
        // SAFETY: an all-zero `sched_attr` is a valid value of this plain C struct.
        let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
        // SAFETY: the kernel writes at most `attr_size()` bytes into `attr`, which is that
        // large; pid 0 is the calling thread; flags must be 0.
        let rc = unsafe {
            libc::syscall(libc::SYS_sched_getattr, 0, &mut attr as *mut libc::sched_attr, attr_size(), 0u32)
        };
        if rc == 0 {
            Ok(attr)
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    #[allow(unsafe_code)]
    pub(super) fn set(attr: &libc::sched_attr) -> std::io::Result<()> {
        // SAFETY: `attr` is a valid `sched_attr` whose `size` field says how large it is; the
        // kernel only reads it; pid 0 is the calling thread; flags must be 0.
        let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, attr as *const libc::sched_attr, 0u32) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// Sets `slice_ns` as the thread's runtime, its policy and nice value kept (not under
    /// another policy or with reset-on-fork set); the read-backs say whether the kernel took it
    /// (before 6.12 it ignores the runtime of a `SCHED_OTHER` thread and reads back 0) and
    /// whether a thread started afterwards has it.
    pub(super) fn request(slice_ns: u64) -> TimeSlice {
        let default = |why: String| TimeSlice::Unavailable { why };
        let mut attr = match get() {
            Ok(a) => a,
            Err(e) => return default(format!("sched_getattr failed: {e}")),
        };
        if ![libc::SCHED_OTHER, libc::SCHED_BATCH].contains(&(attr.sched_policy as i32)) {
            return default(format!(
                "the process runs under scheduling policy {}, left as it is",
                attr.sched_policy
            ));
        }
        // With reset-on-fork, threads started later (the client's) get the default slice back;
        // clearing the flag needs a privilege, so the slice is not asked for.
        if attr.sched_flags & libc::SCHED_FLAG_RESET_ON_FORK as u64 != 0 {
            return default(
                "the process has reset-on-fork set, so its new threads would not keep a slice".into(),
            );
        }
        attr.size = attr_size();
        attr.sched_flags = 0;
        attr.sched_runtime = slice_ns;
        if let Err(e) = set(&attr) {
            return default(format!("sched_setattr refused: {e}"));
        }
        match get() {
            Ok(a) if a.sched_runtime == slice_ns => {}
            Ok(_) => return default("this kernel has no custom time slices (Linux 6.12+)".into()),
            Err(e) => return default(format!("sched_getattr failed: {e}")),
        }
        // What counts is what the threads started afterwards run with: read it on one.
        let started = std::thread::Builder::new().spawn(|| get().map(|a| a.sched_runtime));
        let Ok(thread) = started else {
            return default("no thread could be started to check the slice".into());
        };
        match thread.join() {
            Ok(Ok(ns)) if ns == slice_ns => TimeSlice::Short { us: slice_ns / 1000 },
            Ok(Ok(_)) => default("threads started afterwards do not inherit the slice".into()),
            Ok(Err(e)) => default(format!("sched_getattr failed on a new thread: {e}")),
            Err(_) => default("the thread checking the slice stopped".into()),
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(clippy::expect_used, clippy::panic)]
    use super::*;

    /// On a thread of its own (the slice is per thread and inherited): what `request` reports
    /// is what the kernel reads back, and the policy and nice value are unchanged.
    #[test]
    fn the_reported_slice_is_the_one_the_kernel_reads_back() {
        std::thread::spawn(|| {
            let before = linux::get().expect("sched_getattr");
            let outcome = request_short_time_slice();
            let after = linux::get().expect("sched_getattr");
            assert_eq!((after.sched_policy, after.sched_nice), (before.sched_policy, before.sched_nice));
            match outcome {
                TimeSlice::Short { us } => {
                    assert_eq!(us, SHORT_SLICE_US);
                    assert_eq!(after.sched_runtime, SHORT_SLICE_US * 1000);
                    // A thread started afterwards runs with it too.
                    let child = std::thread::spawn(|| linux::get().expect("sched_getattr").sched_runtime);
                    assert_eq!(child.join().expect("child thread"), SHORT_SLICE_US * 1000);
                }
                TimeSlice::Unavailable { why } => {
                    assert!(!why.is_empty());
                    assert_ne!(after.sched_runtime, SHORT_SLICE_US * 1000, "{why}");
                }
                TimeSlice::NotRequested => panic!("a request never reports NotRequested"),
            }
        })
        .join()
        .expect("test thread");
    }

    /// On a thread of its own set to `policy` with `flags` (neither needs a privilege here),
    /// asks for the slice: it must not be granted, for a reason naming `why`; the policy stays.
    fn refused_under(policy: i32, flags: i32, why: &'static str) {
        std::thread::spawn(move || {
            let mut attr = linux::get().expect("sched_getattr");
            attr.size = std::mem::size_of::<libc::sched_attr>() as u32;
            attr.sched_policy = policy as u32;
            attr.sched_flags = flags as u64;
            attr.sched_runtime = 0;
            linux::set(&attr).expect("sched_setattr");
            match request_short_time_slice() {
                TimeSlice::Unavailable { why: said } => assert!(said.contains(why), "{said}"),
                other => panic!("expected Unavailable, got {other:?}"),
            }
            assert_eq!(linux::get().expect("sched_getattr").sched_policy, policy as u32);
        })
        .join()
        .expect("test thread");
    }

    /// A thread under another policy (SCHED_IDLE here) is left as it is, and the reason says so.
    #[test]
    fn another_scheduling_policy_is_left_alone_and_named() {
        refused_under(libc::SCHED_IDLE, 0, "policy 5");
    }

    /// With reset-on-fork set, the slice is not asked for: the client's threads, started later,
    /// would run with the default.
    #[test]
    fn reset_on_fork_is_named_and_no_slice_is_claimed() {
        refused_under(libc::SCHED_OTHER, libc::SCHED_FLAG_RESET_ON_FORK, "reset-on-fork");
    }
}
