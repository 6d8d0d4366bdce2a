//! Sweeps, rate searches and multi-run (docs/experiments.md) from the command line: the engine is
//! `servebench_runner::experiment`; this module gives it a runtime, Ctrl-C/SIGTERM and stdout,
//! and turns its outcome into the exit code.

use crate::os::signal::{measuring_started, stop_on_signal, LaterSignals, INTERRUPTED_EXIT_CODE};
use crate::progress::LineObserver;
use servebench_runner::experiment::{plan_points, ExperimentConfig, PreparedExperiment};
use servebench_runner::{CancellationToken, OutputConfig, RunConfig};
use std::sync::Arc;

/// Runs the experiment `exp`; returns the exit code.
pub fn run(mut cfg: RunConfig, output: OutputConfig, exp: ExperimentConfig) -> anyhow::Result<u8> {
    let specs = plan_points(&mut cfg, &exp)?;
    crate::os::runtime::client()?.block_on(async move {
        let stop = CancellationToken::new();
        // The first Ctrl-C/SIGTERM stops the current point (the experiment ends after it and is
        // saved); a second one exits at once.
        let later = LaterSignals {
            abandon: None,
            on_exit: "Interrupted again: exiting now; the point in progress and the experiment's \
                      result were not written (points already finished are in their files)"
                .into(),
        };
        stop_on_signal(
            stop.clone(),
            "Interrupted: stopping this point; the experiment ends after it".into(),
            later,
        );
        let Some(prepared) =
            PreparedExperiment::prepare(cfg, output, exp, specs, Arc::new(LineObserver)).await?
        else {
            return Ok(0);
        };
        measuring_started();
        let outcome = prepared.run(stop).await?;
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
