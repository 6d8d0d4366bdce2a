//! Ctrl-C/SIGTERM: before the first measured phase an interrupt exits at once (nothing was
//! sent or written); after it, commands stop gracefully and exit with
//! [`INTERRUPTED_EXIT_CODE`]. Every command waits for a stop signal through this module.

use anyhow::Context;
use servebench_runner::CancellationToken;

/// Exit code of a run stopped by Ctrl-C/SIGTERM (after its results were written).
pub const INTERRUPTED_EXIT_CODE: u8 = 130;

/// Whether a measured phase has started: before it (model detection, tokenizer, workload, the
/// readiness wait) nothing is in flight and nothing written, so Ctrl-C/SIGTERM exits at once.
static MEASURING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Called when the first measured phase starts (from then on Ctrl-C stops the run gracefully).
pub fn measuring_started() {
    MEASURING.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// The first Ctrl-C/SIGTERM before the measured phase (e.g. during the readiness wait) ends
/// the process at once with exit 130.
pub fn exit_if_not_measuring() {
    if !MEASURING.load(std::sync::atomic::Ordering::SeqCst) {
        super::terminal::restore();
        errln!("\nInterrupted before the benchmark started: nothing was sent or written");
        std::process::exit(INTERRUPTED_EXIT_CODE.into());
    }
}

/// Raises SIGINT in this process: the dashboard's q and Ctrl-C (read as keys in raw mode) take
/// exactly the path of a Ctrl-C typed at a cooked terminal.
pub fn interrupt_self() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use rustix::process::{getpid, kill_process, Signal};
        kill_process(getpid(), Signal::INT).map_err(std::io::Error::from)
    }
    #[cfg(not(unix))]
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "no signals on this platform"))
}

/// Resolves on Ctrl-C or (Unix) SIGTERM.
pub async fn wait_for_stop_signal() -> anyhow::Result<()> {
    StopSignals::listen()?.next().await
}

/// Ctrl-C and (Unix) SIGTERM listeners, installed once: a signal that arrives between two
/// waits is kept for the next wait, never lost.
struct StopSignals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    echoes: Echoes,
}

/// Signals this close after the last one taken are one stop, not another: `timeout -s INT`
/// (coreutils) signals its child and then its own process group, the child included, so a CI
/// job's one stop arrived twice within microseconds and read as "Ctrl-C again" (2 runs in 9
/// lost their result). A person pressing Ctrl-C twice is 10 times slower.
const ECHO_WINDOW: std::time::Duration = std::time::Duration::from_millis(100);

/// When the last signal was taken, to tell an echo of it ([`ECHO_WINDOW`]) from a new one.
#[derive(Debug, Default)]
struct Echoes {
    last_taken: Option<std::time::Instant>,
}

impl Echoes {
    /// Whether a signal arriving at `now` is a new stop (then taken), not an echo of the last.
    fn take(&mut self, now: std::time::Instant) -> bool {
        if self.last_taken.is_some_and(|t| now.saturating_duration_since(t) < ECHO_WINDOW) {
            return false;
        }
        self.last_taken = Some(now);
        true
    }
}

impl StopSignals {
    fn listen() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(StopSignals {
                int: signal(SignalKind::interrupt()).context("listening for Ctrl-C")?,
                term: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
                echoes: Echoes::default(),
            })
        }
        #[cfg(not(unix))]
        Ok(StopSignals { echoes: Echoes::default() })
    }

    /// The next Ctrl-C or SIGTERM that is not an echo of the last one taken ([`ECHO_WINDOW`]).
    async fn next(&mut self) -> anyhow::Result<()> {
        loop {
            #[cfg(unix)]
            tokio::select! {
                _ = self.int.recv() => {}
                _ = self.term.recv() => {}
            }
            #[cfg(not(unix))]
            tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
            if self.echoes.take(std::time::Instant::now()) {
                return Ok(());
            }
        }
    }
}

/// What the signals after the first say (`stop_on_signal`).
#[derive(Debug, Clone, Default)]
pub struct LaterSignals {
    /// A second signal raises this (instead of exiting) and prints `second`: the run cancels
    /// what is in flight and writes its records and result at once.
    pub abandon: Option<(CancellationToken, String)>,
    /// Printed when a signal exits at once: what was and was not written by then.
    pub on_exit: String,
}

impl LaterSignals {
    /// Per `--on-interrupt`: when draining, a second signal raises `signal.abandon` and says
    /// `second`; otherwise it exits at once. `on_exit` is said when a signal exits at once.
    pub fn per_mode(
        mode: servebench_runner::InterruptMode,
        signal: &servebench_runner::Interrupts,
        second: &str,
        on_exit: String,
    ) -> LaterSignals {
        let abandon = (mode == servebench_runner::InterruptMode::Drain)
            .then(|| (signal.abandon.clone(), second.to_owned()));
        LaterSignals { abandon, on_exit }
    }
}

/// On the current runtime: the first Ctrl-C/SIGTERM exits at once before the measured phase,
/// else prints `message` and cancels `stop`. With `later.abandon`, a second one cancels what is
/// in flight (the run still writes everything) and a third exits at once (130); without it,
/// the second exits at once. Exiting at once says on stderr what was not written.
pub fn stop_on_signal(stop: CancellationToken, message: String, later: LaterSignals) {
    let mut signals = match StopSignals::listen() {
        Ok(s) => s,
        Err(e) => {
            errln!("warning: {e:#}; Ctrl-C will end the process without writing results");
            return;
        }
    };
    tokio::spawn(async move {
        if signals.next().await.is_err() {
            return;
        }
        exit_if_not_measuring();
        super::terminal::say(&message);
        stop.cancel();
        if let Some((abandon, second)) = later.abandon {
            if signals.next().await.is_err() {
                return;
            }
            super::terminal::say(&second);
            abandon.cancel();
        }
        if signals.next().await.is_ok() {
            super::terminal::restore();
            errln!("\n{}", later.on_exit);
            std::process::exit(INTERRUPTED_EXIT_CODE.into());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Pins one stop signalled twice within microseconds (`timeout -s INT` signals the child,
    /// then its process group) being one stop: the second had read as "Ctrl-C again".
    #[test]
    fn a_signal_within_the_echo_window_of_the_last_is_the_same_stop() {
        let mut echoes = Echoes::default();
        let t0 = Instant::now();
        assert!(echoes.take(t0), "the first signal is a stop");
        assert!(!echoes.take(t0 + Duration::from_micros(30)), "timeout's second copy");
        assert!(!echoes.take(t0 + ECHO_WINDOW - Duration::from_millis(1)));
        assert!(echoes.take(t0 + ECHO_WINDOW), "a second Ctrl-C, pressed");
        assert!(!echoes.take(t0 + ECHO_WINDOW + Duration::from_millis(5)));
        assert!(echoes.take(t0 + ECHO_WINDOW * 3), "a third");
    }
}
