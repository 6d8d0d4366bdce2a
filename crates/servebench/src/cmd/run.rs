//! `servebench [FLAGS]`: one benchmark run, from flags to console output and result files.

use crate::cli::RunArgs;
use crate::cmd::sim::EmbeddedSim;
use crate::config::{validate, Validated};
use crate::os::signal::{stop_on_signal, LaterSignals, INTERRUPTED_EXIT_CODE};
use crate::progress::ConsoleObserver;
use crate::tui::TuiObserver;
use anyhow::Context;
use servebench_report::Detail;
use servebench_runner::config::InterruptMode;
use servebench_runner::observe::server_side::{ServerSide, ServerSideOutput};
use servebench_runner::results::paths::output_paths;
use servebench_runner::results::save::{result_path, save_result};
use servebench_runner::results::{assemble, dry_run_block, Assembly, RunEnd, RunResults};
use servebench_runner::{run_benchmark, RunResult};
use servebench_runner::{Interrupts, OutputConfig, RunConfig, RunObserver};
use std::sync::Arc;

/// Checks that the run can open as many connections as it may need at once (SB175): an
/// error with a concurrency (`--max-concurrency`, or the largest concurrency stage), a coded
/// warning for an open loop without a cap.
fn check_open_files(run: &RunConfig, num_prompts: u64, embedded_sim: bool) -> anyhow::Result<()> {
    let Some(limit) = crate::os::raise_open_files_limit() else { return Ok(()) };
    let concurrency = run_concurrency(run);
    if let Some(e) = open_files_problem(concurrency, num_prompts, embedded_sim, limit) {
        match concurrency {
            Some(_) => return Err(e.into()),
            None => errln!("warning[{}]: {e}; requests beyond that fail to connect", e.code()),
        }
    }
    Ok(())
}

/// The most requests the run keeps in flight, and the flag that sets it: `--max-concurrency`,
/// or the largest `c=N` of concurrency stages (`None`: an open loop without a cap).
fn run_concurrency(run: &RunConfig) -> Option<(u64, &'static str)> {
    let stage = run.load.stages.iter().filter_map(|s| s.concurrency).max();
    match (run.max_concurrency, stage) {
        (Some(c), _) => Some((c as u64, "--max-concurrency")),
        (None, Some(c)) => Some((c as u64, "--stages c=N")),
        (None, None) => None,
    }
}

/// Files a run needs besides its connections: its own files, the listener of an embedded
/// simulator, the tokenizer, and slack.
const RESERVED_FILES: u64 = 64;

/// SB175 when `concurrency` connections (at most `num_prompts` without a cap), doubled when
/// the simulator's side of each is in this process too, do not fit in `limit` open files.
fn open_files_problem(
    concurrency: Option<(u64, &str)>,
    num_prompts: u64,
    embedded_sim: bool,
    limit: u64,
) -> Option<servebench_core::BenchError> {
    let conns = concurrency.map_or(num_prompts, |c| c.0);
    let need = conns.saturating_mul(if embedded_sim { 2 } else { 1 }).saturating_add(RESERVED_FILES);
    let what = match (concurrency, embedded_sim) {
        (Some((c, flag)), false) => format!("{c} concurrent requests ({flag})"),
        (Some((c, flag)), true) => {
            format!("{c} concurrent requests ({flag}) with the simulator in this process (--sim)")
        }
        (None, false) => format!("without --max-concurrency, up to {conns} requests in flight"),
        (None, true) => format!("without --max-concurrency, up to {conns} requests in flight with --sim"),
    };
    (need > limit).then(|| servebench_core::BenchError::OpenFilesLimit { what, need, limit })
}

/// Runs a benchmark (or an experiment); returns the process exit code.
/// `explicit`: the flags given on the command line (not defaulted); `config`: the effective
/// config the result records (`config_file::from_result::recorded`).
pub fn run(
    args: &RunArgs,
    explicit: &crate::config::unused::ExplicitFlags,
    config: serde_json::Map<String, serde_json::Value>,
) -> anyhow::Result<u8> {
    // OPENAI_API_KEY (ANTHROPIC_API_KEY first for --backend anthropic).
    let api_key = servebench_client::api_key_from_env(args.backend.kind, |k| std::env::var(k).ok());
    let Validated { mut run, mut output } = validate(args, api_key)?;
    output.effective_config = Some(config);
    crate::config::network::with_process_env(&mut run);
    for warning in crate::config::unused::check(args, explicit)? {
        errln!("{warning}");
    }
    if let Some(w) =
        crate::config::workload::cancellation_rate_warning(args.workload.request_cancellation_rate)
    {
        errln!("{w}");
    }
    if let Some(w) = crate::config::early_stop::short_run_warning(&run) {
        errln!("{w}");
    }
    // No output may overwrite an input or another output (SB120), checked before any write.
    crate::config::path_collisions::check(args, &output, run.records_path.as_deref())?;
    crate::config::path_collisions::check_appended_records(&output, run.records_path.as_deref())?;
    // Every output directory exists and every output can be written before the first request.
    crate::config::output_dirs::prepare(args, &output, run.records_path.as_deref())?;
    let experiment = args.experiment.experiment(args.num_prompts)?;
    check_tui(args, experiment.is_some())?;
    check_open_files(&run, args.num_prompts, args.sim)?;
    // The embedded simulator lives until the end of this function.
    let _sim = if args.sim { Some(start_sim(args, &mut run)?) } else { None };
    // After the simulator's threads started (they keep the default), before the client's.
    run.time_slice = match args.network.no_short_time_slice {
        true => servebench_runner::config::TimeSlice::NotRequested,
        false => crate::os::sched::request_short_time_slice(),
    };
    match experiment {
        Some(exp) => crate::cmd::experiment::run(run, output, exp),
        None => single_run(args, run, output),
    }
}

/// `--tui` (unless `--no-tui` came later): one run, on an interactive terminal (SB155, SB156).
fn check_tui(args: &RunArgs, experiment: bool) -> Result<(), servebench_core::BenchError> {
    use std::io::IsTerminal;
    if !args.live.tui {
        return Ok(());
    }
    if experiment {
        let experiment = "the experiment (a sweep, a rate search or --num-runs)".to_owned();
        return Err(servebench_core::BenchError::TuiWithExperiment { experiment });
    }
    let which = match (std::io::stdin().is_terminal(), std::io::stdout().is_terminal()) {
        (true, true) => return Ok(()),
        (false, true) => "stdin is not one",
        (true, false) => "stdout is not one",
        (false, false) => "neither stdin nor stdout is one",
    };
    Err(servebench_core::BenchError::TuiNeedsTerminal { which: which.to_owned() })
}

/// Starts the embedded simulator (`--sim`) and points the run at it.
fn start_sim(args: &RunArgs, run: &mut RunConfig) -> anyhow::Result<EmbeddedSim> {
    // The simulator serves the model the run asks for (as a real server would), unless
    // --sim-model names another.
    let mut opts = args.sim_options.clone();
    if opts.sim_model.is_none() {
        opts.sim_model = args.served_model_name.clone().or_else(|| args.model.clone());
    }
    let sim = EmbeddedSim::start(&opts)?;
    run.base_url = sim.base_url();
    // The embedded simulator is on this host: never through a proxy from the environment.
    run.proxy.disabled = true;
    if let Some(t) = sim.tls() {
        // The client trusts the simulator's fresh CA unless told otherwise.
        if run.tls.cacert.is_none() && !run.insecure {
            run.tls.cacert = Some(t.ca_path.clone());
        }
        outln!("Embedded simulator TLS: {}", t.describe());
    }
    if run.tokenizer.is_none() {
        run.tokenizer = Some(args.sim_options.sim_tokenizer.clone());
    }
    let o = &opts;
    let timing = match (&o.sim_preset, o.sim_mode) {
        (Some(preset), _) => format!("engine model, preset {}", preset.name),
        (None, crate::cli::values::SimMode::Engine) => "engine model".to_owned(),
        (None, crate::cli::values::SimMode::Fixed) => {
            format!("fixed timing: TTFT {} ms, ITL {} ms", o.sim_ttft_ms, o.sim_itl_ms)
        }
    };
    let model = crate::cmd::sim::served_model(&opts);
    outln!("Embedded simulator at {} serving '{model}' ({timing})", run.base_url);
    Ok(sim)
}

/// One run: measure, print, write the result and reports, then the exit code.
fn single_run(args: &RunArgs, mut run: RunConfig, output: OutputConfig) -> anyhow::Result<u8> {
    let paths = output_paths(&output, &run);
    if run.records_path.is_none() {
        run.records_path = paths.as_ref().map(|p| p.records.clone());
    }
    // --tui: the dashboard instead of the progress bar (check_tui made sure it can run).
    let tui = args.live.tui.then(|| Arc::new(TuiObserver::new()));
    let observer: Arc<dyn RunObserver> = match &tui {
        Some(t) => t.clone(),
        None => Arc::new(ConsoleObserver::new(run.show_progress)),
    };
    let shard_spec = run.shard.as_ref().map(|s| s.spec);
    let records_file = run.records_path.clone();
    let run_cfg = run.clone();
    let mut side_options = args.experiment.server_side_options();
    side_options.series_path =
        paths.as_ref().map(|p| servebench_runner::observe::series_file::series_path_for(&p.records));
    if run.load.prefix_cache.is_some() && side_options.scrape_interval.is_none() {
        // A controlled hit rate is confirmed against the server's prefix-cache counters.
        side_options.scrape_interval = Some(std::time::Duration::from_secs(1));
    }
    let measured = crate::os::runtime::client()?.block_on(measure(run, observer, tui.clone(), side_options));
    // The terminal is given back before anything is printed, whatever the run's end.
    if let Some(t) = &tui {
        t.close();
    }
    let (result, server_side) = measured?;
    let out = match result {
        RunResult::DryRun { model, tokenizer_id, workload } => {
            out!("{}", dry_run_block(&model.model_id, &tokenizer_id, &workload));
            if args.plot_dataset_stats || args.vllm.plot_timeline {
                outln!("note: --plot-dataset-stats and --plot-timeline plot a run's requests; a dry run writes nothing");
            }
            return Ok(0);
        }
        RunResult::Completed(out) => *out,
    };
    let assembly = Assembly {
        output: &output,
        run: &run_cfg,
        num_prompts: servebench_runner::results::result_num_prompts(
            &run_cfg,
            out.records.len(),
            args.num_prompts,
        ),
        percentiles: &output.metric_percentiles,
        steady: &args.experiment.steady_options(),
    };
    let results = assemble(out, server_side, &assembly);
    results.records_read_back()?;
    let detail = if args.verbose { Detail::Verbose } else { Detail::Default };
    out!("{}", results.console_text(detail));
    for line in results.console_warnings() {
        errln!("{line}");
    }
    let result_path = result_path(&output, &results, shard_spec);
    let result_written = paths.is_some();
    let records_file = match paths {
        Some(paths) => {
            let saved = save_result(&results, &output, &result_path, &paths.records, records_file)?;
            outln!("Result: {}", result_path.display());
            saved
        }
        None => records_file,
    };
    if let Some(p) = &records_file {
        outln!("Records: {} ({} lines)", p.display(), results.out.records.len());
    }
    say_what_was_abandoned(&results, records_file.as_deref(), result_written.then_some(&*result_path));
    write_reports(args, &output, &result_path, &results)?;
    // After every file is written: the OpenTelemetry export (--otlp), bounded, never fatal.
    export_otlp(&output, &run_cfg, &results)?;
    let end = results.end(output.max_failure_rate);
    if let Ok(RunEnd::Interrupted) = end {
        let m = &results.metrics;
        outln!(
            "Interrupted: results cover the {} requests sent before the interrupt; {} were never sent",
            m.sent,
            m.never_sent
        );
    }
    // The last line: can the figures be trusted (docs/metrics.md, "Run validity").
    outln!("{}", results.validity().console_line());
    match end? {
        RunEnd::Interrupted => Ok(INTERRUPTED_EXIT_CODE),
        RunEnd::Finished => Ok(0),
    }
}

/// `--otlp`: exports the run's spans and metrics on a small runtime of its own (the client's
/// has ended); success on stdout, a failure as warning SB165 on stderr.
fn export_otlp(output: &OutputConfig, run: &RunConfig, results: &RunResults) -> anyhow::Result<()> {
    if output.otlp.is_none() {
        return Ok(());
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    match rt.block_on(servebench_runner::otel::export_results(output, run, results, None)) {
        Some(Ok(line)) => outln!("{line}"),
        Some(Err(warning)) => errln!("{warning}"),
        None => {}
    }
    Ok(())
}

/// After a second Ctrl-C: on stderr, how many requests were abandoned in flight and that every
/// request is still in the records and the result.
fn say_what_was_abandoned(
    results: &RunResults,
    records: Option<&std::path::Path>,
    result: Option<&std::path::Path>,
) {
    use servebench_core::CancelReason;
    let recs = &results.out.records;
    let abandoned = recs.iter().filter(|r| r.cancelled_by == Some(CancelReason::SecondInterrupt)).count();
    if abandoned == 0 {
        return;
    }
    let shown = |p: Option<&std::path::Path>, what: &str| match p {
        Some(p) => format!("{what} {}", p.display()),
        None => format!("no {what} (not asked for)"),
    };
    errln!(
        "Second interrupt: {abandoned} requests in flight were abandoned and recorded as cancelled; written: {} \
         ({} records, every request of the run), {}",
        shown(records, "records file"),
        recs.len(),
        shown(result, "result"),
    );
}

/// The measured run with its server side (`--scrape-metrics`, `--profile`), on the runtime;
/// Ctrl-C/SIGTERM stops it gracefully once measuring.
async fn measure(
    run: RunConfig,
    observer: Arc<dyn RunObserver>,
    tui: Option<Arc<TuiObserver>>,
    side_options: servebench_runner::observe::server_side::ServerSideOptions,
) -> anyhow::Result<(RunResult, ServerSideOutput)> {
    let signal = Interrupts::default();
    let later = later_signals(&run, &signal);
    stop_on_signal(signal.stop.clone(), interrupt_message(run.on_interrupt), later);
    // --scrape-metrics / --profile: driven by the measured phase's start and end.
    let side = ServerSide::for_run(&run, &side_options)?;
    if let Some(note) = side.gpu_note() {
        outln!("{note}");
    }
    if let Some(t) = &tui {
        t.server_live(side_options.watches_server().then(|| side.latest()));
    }
    let observer = side.observer(observer);
    let run_task = tokio::spawn(run_benchmark(run, observer, signal));
    let result = run_task.await.context("the benchmark task failed")?.map_err(anyhow::Error::from);
    let extra = side.finish().await;
    result.map(|r| (r, extra))
}

/// What the signals after the first do and say: while draining, a second one cancels the
/// requests in flight (recorded as cancelled) and the run writes everything at once; the next
/// exits at once, saying what was not written.
fn later_signals(run: &RunConfig, signal: &Interrupts) -> LaterSignals {
    let second = "Interrupted again: cancelling the requests in flight (recorded as cancelled); the \
                  records and the result are written now (Ctrl-C once more to exit without them)";
    let records = match &run.records_path {
        Some(p) => format!(
            "the records file {} holds only the records written so far (`servebench report` warns \
             that it does not account for every request)",
            p.display()
        ),
        None => "no records file was asked for".to_owned(),
    };
    let on_exit = format!("Interrupted again: exiting now; no result was written; {records}");
    LaterSignals::per_mode(run.on_interrupt, signal, second, on_exit)
}

/// What the first Ctrl-C/SIGTERM says: it stops sending (in-flight requests per
/// `--on-interrupt`), and what a second one does (`later_signals`).
fn interrupt_message(on_interrupt: InterruptMode) -> String {
    let in_flight = match on_interrupt {
        InterruptMode::Cancel => {
            "in-flight requests are cancelled (Ctrl-C again to exit now, without results)"
        }
        InterruptMode::Drain => {
            "in-flight requests are drained (Ctrl-C again to cancel them and write the results now)"
        }
    };
    format!("Interrupted: sending nothing new; {in_flight}")
}

/// `--plot-dataset-stats`, `--plot-timeline`, `--html-report` and `--csv`: written from the
/// same records and metrics as the result.
fn write_reports(
    args: &RunArgs,
    output: &OutputConfig,
    result_path: &std::path::Path,
    results: &RunResults,
) -> anyhow::Result<()> {
    let (info, out) = (&results.info, &results.out);
    // The charts take the records decoded (a run holds them as bytes): decoded once, only when
    // one of them is asked for, and freed before the HTML report decodes its own.
    {
        let decoded = std::cell::OnceCell::new();
        let records = || decoded.get_or_init(|| out.records.to_vec());
        if args.plot_dataset_stats {
            crate::cmd::report::write_dataset_stats(result_path, args, info, records())?;
        }
        if let Some(thresholds) = output.timeline_itl_ms {
            crate::cmd::report::write_timeline(result_path, args, info, records(), thresholds)?;
        }
    }
    crate::cmd::report::write_run_reports(
        args.html_report.as_deref(),
        args.csv.as_deref(),
        info,
        &results.metrics,
        out,
        servebench_report::html::ServerSeries::of_run(
            results.server_side.server.as_ref(),
            results.server_side.gpu.as_ref().map(|g| g.rows.as_slice()).unwrap_or_default(),
            results.gpu_energy(),
        ),
        Some(results.validity()),
    )
}

#[cfg(test)]
mod open_files_tests {
    use super::*;

    #[test]
    fn open_files_need_counts_both_ends_of_an_embedded_simulator() {
        // 10,000 streams fit 20,000 files against a standalone simulator, not with --sim.
        assert!(open_files_problem(Some((10_000, "--max-concurrency")), 1, false, 20_000).is_none());
        let e = open_files_problem(Some((10_000, "--max-concurrency")), 1, true, 20_000)
            .expect("20,064 > 20,000");
        assert_eq!(e.code().as_str(), "SB175");
        let msg = e.to_string();
        assert!(msg.contains("20064") && msg.contains("20000") && msg.contains("ulimit -n"), "{msg}");
    }

    /// Pins the open-files check of concurrency stages: `--stages c=1000000:1` started (and
    /// ignored Ctrl-C), `c=18446744073709551615` grew to 24 GB; `--max-concurrency` of the
    /// same size was SB175. The largest stage is checked as the cap is.
    #[test]
    fn the_largest_concurrency_stage_is_checked_against_the_open_files_limit() {
        use clap::Parser;
        let argv = ["servebench", "--stages", "c=4:1,c=1000000:1,c=8:1"];
        let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
        let run = crate::config::validate(&cli.run, None).unwrap().run;
        assert_eq!(run_concurrency(&run), Some((1_000_000, "--stages c=N")));
        let e = open_files_problem(run_concurrency(&run), 5, true, 65_536).expect("2,000,064 > 65,536");
        assert_eq!(e.code().as_str(), "SB175");
        assert!(e.to_string().contains("1000000 concurrent requests (--stages c=N)"), "{e}");
        let argv = ["servebench", "--stages", "c=18446744073709551615:1"];
        let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
        let run = crate::config::validate(&cli.run, None).unwrap().run;
        assert!(open_files_problem(run_concurrency(&run), 5, false, u64::MAX - 1).is_some());
    }

    #[test]
    fn open_files_need_without_a_cap_is_the_number_of_prompts() {
        assert!(open_files_problem(None, 936, false, 1_000).is_none());
        let e = open_files_problem(None, 937, false, 1_000).expect("937 + 64 > 1000");
        assert!(e.to_string().contains("without --max-concurrency"), "{e}");
    }
}
