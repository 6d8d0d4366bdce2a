//! `servebench [FLAGS]`: one benchmark run, from flags to console output and result files.

use crate::cli::RunArgs;
use crate::cmd::sim::EmbeddedSim;
use crate::config::{validate, Validated};
use crate::os::signal::{stop_on_signal, LaterSignals, INTERRUPTED_EXIT_CODE};
use crate::progress::ConsoleObserver;
use anyhow::Context;
use servebench_report::Detail;
use servebench_runner::config::InterruptMode;
use servebench_runner::observe::server_side::{ServerSide, ServerSideOutput};
use servebench_runner::results::paths::output_paths;
use servebench_runner::results::save::{result_path, save_result};
use servebench_runner::results::{assemble, dry_run_block, Assembly, RunEnd, RunResults};
use servebench_runner::{run_benchmark, RunResult};
use servebench_runner::{Interrupts, OutputConfig, RunConfig};
use std::sync::Arc;

/// Checks that the run can open as many connections as it may need at once.
fn check_open_files(run: &RunConfig, num_prompts: u64) -> anyhow::Result<()> {
    let Some(limit) = crate::os::raise_open_files_limit() else { return Ok(()) };
    // Connections in flight, plus files, the listener of an embedded simulator, and slack.
    const RESERVED: u64 = 64;
    match run.max_concurrency {
        Some(c) if c as u64 + RESERVED > limit => Err(servebench_core::BenchError::config(
            "--max-concurrency",
            format!(
                "{c} concurrent requests need about {} open files, but the limit is {limit}",
                c as u64 + RESERVED
            ),
            "raise the limit (ulimit -n) or lower --max-concurrency",
        )
        .into()),
        None if num_prompts + RESERVED > limit => {
            eprintln!(
                "warning: without --max-concurrency up to {num_prompts} requests may be in flight, but only \
                 {limit} files can be open (ulimit -n); requests beyond that fail to connect"
            );
            Ok(())
        }
        _ => Ok(()),
    }
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
        eprintln!("{warning}");
    }
    // No output may overwrite an input or another output (SB120), checked before any write.
    crate::config::path_collisions::check(args, &output, run.records_path.as_deref())?;
    // Every output directory exists and every output can be written before the first request.
    crate::config::output_dirs::prepare(args, &output, run.records_path.as_deref())?;
    let experiment = args.experiment.experiment(args.num_prompts)?;
    check_open_files(&run, args.num_prompts)?;
    // The embedded simulator lives until the end of this function.
    let _sim = if args.sim { Some(start_sim(args, &mut run)?) } else { None };
    match experiment {
        Some(exp) => crate::cmd::experiment::run(run, output, exp),
        None => single_run(args, run, output),
    }
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
        println!("Embedded simulator TLS: {}", t.describe());
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
    println!("Embedded simulator at {} serving '{model}' ({timing})", run.base_url);
    Ok(sim)
}

/// One run: measure, print, write the result and reports, then the exit code.
fn single_run(args: &RunArgs, mut run: RunConfig, output: OutputConfig) -> anyhow::Result<u8> {
    let paths = output_paths(&output, &run);
    if run.records_path.is_none() {
        run.records_path = paths.as_ref().map(|p| p.records.clone());
    }
    let observer = Arc::new(ConsoleObserver::new(run.show_progress));
    let shard_spec = run.shard.as_ref().map(|s| s.spec);
    let records_file = run.records_path.clone();
    let run_cfg = run.clone();
    let mut side_options = args.experiment.server_side_options();
    if run.load.prefix_cache.is_some() && side_options.scrape_interval.is_none() {
        // A controlled hit rate is confirmed against the server's prefix-cache counters.
        side_options.scrape_interval = Some(std::time::Duration::from_secs(1));
    }
    let (result, server_side) =
        crate::os::runtime::client()?.block_on(measure(run, observer, side_options))?;
    let out = match result {
        RunResult::DryRun { model, tokenizer_id, workload } => {
            print!("{}", dry_run_block(&model.model_id, &tokenizer_id, &workload));
            if args.plot_dataset_stats || args.vllm.plot_timeline {
                println!("note: --plot-dataset-stats and --plot-timeline plot a run's requests; a dry run writes nothing");
            }
            return Ok(0);
        }
        RunResult::Completed(out) => *out,
    };
    let assembly = Assembly {
        output: &output,
        run: &run_cfg,
        // Session trees send every turn of the trace, whatever --num-prompts says.
        num_prompts: if run_cfg.load.agentic.is_some() { out.records.len() as u64 } else { args.num_prompts },
        percentiles: &output.metric_percentiles,
        steady: &args.experiment.steady_options(),
    };
    let results = assemble(out, server_side, &assembly);
    let detail = if args.verbose { Detail::Verbose } else { Detail::Default };
    print!("{}", results.console_text(detail));
    for line in results.console_warnings() {
        eprintln!("{line}");
    }
    let result_path = result_path(&output, &results, shard_spec);
    let result_written = paths.is_some();
    let records_file = match paths {
        Some(paths) => {
            let saved = save_result(&results, &output, &result_path, &paths.records, records_file)?;
            println!("Result: {}", result_path.display());
            saved
        }
        None => records_file,
    };
    if let Some(p) = &records_file {
        println!("Records: {} ({} lines)", p.display(), results.out.records.len());
    }
    say_what_was_abandoned(&results, records_file.as_deref(), result_written.then_some(&*result_path));
    write_reports(args, &output, &result_path, &results)?;
    // After every file is written: the OpenTelemetry export (--otlp), bounded, never fatal.
    export_otlp(&output, &run_cfg, &results)?;
    let end = results.end(output.max_failure_rate);
    if let Ok(RunEnd::Interrupted) = end {
        let m = &results.metrics;
        println!(
            "Interrupted: results cover the {} requests sent before the interrupt; {} were never sent",
            m.sent, m.never_sent
        );
    }
    // The last line: can the figures be trusted (docs/metrics.md, "Run validity").
    println!("{}", results.validity().console_line());
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
        Some(Ok(line)) => println!("{line}"),
        Some(Err(warning)) => eprintln!("{warning}"),
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
    eprintln!(
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
    observer: Arc<ConsoleObserver>,
    side_options: servebench_runner::observe::server_side::ServerSideOptions,
) -> anyhow::Result<(RunResult, ServerSideOutput)> {
    let signal = Interrupts::default();
    let later = later_signals(&run, &signal);
    stop_on_signal(signal.stop.clone(), interrupt_message(run.on_interrupt), later);
    // --scrape-metrics / --profile: driven by the measured phase's start and end.
    let side = ServerSide::for_run(&run, &side_options)?;
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
    let abandon = (run.on_interrupt == InterruptMode::Drain).then(|| {
        let second = "Interrupted again: cancelling the requests in flight (recorded as cancelled); the \
                      records and the result are written now (Ctrl-C once more to exit without them)";
        (signal.abandon.clone(), second.to_owned())
    });
    let records = match &run.records_path {
        Some(p) => format!(
            "the records file {} holds only the records written so far (`servebench report` warns \
             that it does not account for every request)",
            p.display()
        ),
        None => "no records file was asked for".to_owned(),
    };
    LaterSignals {
        abandon,
        on_exit: format!("Interrupted again: exiting now; no result was written; {records}"),
    }
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
    if args.plot_dataset_stats {
        crate::cmd::report::write_dataset_stats(result_path, args, info, &out.records)?;
    }
    if let Some(thresholds) = output.timeline_itl_ms {
        crate::cmd::report::write_timeline(result_path, args, info, &out.records, thresholds)?;
    }
    crate::cmd::report::write_run_reports(
        args.html_report.as_deref(),
        args.csv.as_deref(),
        info,
        &results.metrics,
        out,
        results.server_side.server.as_ref(),
        Some(results.validity()),
    )
}
