//! Sweeps, rate searches and multi-run (docs/experiments.md) from the command line: the engine is
//! `servebench_runner::experiment`; this module gives it a runtime, Ctrl-C/SIGTERM and stdout,
//! and turns its outcome into the exit code.

use crate::os::signal::{measuring_started, stop_on_signal, LaterSignals, INTERRUPTED_EXIT_CODE};
use crate::progress::LineObserver;
use servebench_runner::experiment::{plan_points, ExperimentConfig, PreparedExperiment};
use servebench_runner::{Interrupts, OutputConfig, RunConfig};
use std::sync::Arc;

/// Runs the experiment `exp`; returns the exit code.
pub fn run(mut cfg: RunConfig, output: OutputConfig, exp: ExperimentConfig) -> anyhow::Result<u8> {
    let specs = plan_points(&mut cfg, &exp)?;
    let signal = Interrupts::default();
    let later = later_signals(&cfg, &signal);
    crate::os::runtime::client()?.block_on(async move {
        // The first Ctrl-C/SIGTERM stops the current point (the experiment ends after it and is
        // saved, with every point finished); what the next ones do: `later_signals`.
        stop_on_signal(
            signal.stop.clone(),
            "Interrupted: stopping this point; the experiment ends after it".into(),
            later,
        );
        let Some(prepared) =
            PreparedExperiment::prepare(cfg, output, exp, specs, Arc::new(LineObserver)).await?
        else {
            return Ok(0);
        };
        measuring_started();
        let outcome = prepared.run(signal).await?;
        if outcome.interrupted {
            return Ok(INTERRUPTED_EXIT_CODE);
        }
        // Stopped early (exit 4) explains a point without success too.
        match outcome.early_stop.or(outcome.no_success) {
            Some(e) => Err(e.into()),
            None => Ok(0),
        }
    })
}

/// The signals after the first, as in a single run: with `--on-interrupt drain` a second one
/// cancels the point's requests in flight and the experiment is still written with every point
/// (the cut one marked interrupted); the next exits at once, and then nothing of the experiment
/// is written (its points are saved only in its one document).
fn later_signals(run: &RunConfig, signal: &Interrupts) -> LaterSignals {
    let second = "Interrupted again: cancelling this point's requests in flight; the experiment is \
                  written now with its points so far (Ctrl-C once more to exit without it)";
    let on_exit = "Interrupted again: exiting now; the experiment's document (every point of it) was \
                   not written";
    LaterSignals::per_mode(run.on_interrupt, signal, second, on_exit.into())
}
