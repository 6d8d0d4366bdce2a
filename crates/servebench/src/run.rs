//! `servebench [FLAGS]`: one benchmark run, from flags to console output and result files.

use crate::cli::RunArgs;
use crate::config::{validate, OutputConfig, Validated};
use crate::progress::ConsoleObserver;
use crate::sim_cmd::EmbeddedSim;
use anyhow::Context;
use servebench_core::metrics::{compute, MetricsConfig};
use servebench_core::schedule::ArrivalSchedule;
use servebench_core::stats::percentile;
use servebench_report::info::vllm_date;
use servebench_report::{
    console_block, default_result_filename, result_json, write_result, ClientHealth, RunInfo,
};
use servebench_runner::config::InterruptMode;
use servebench_runner::CancellationToken;
use servebench_runner::{run_benchmark, RunOutput, RunResult, CLIENT_THREAD_PREFIX};
use std::path::PathBuf;
use std::sync::Arc;
use time::OffsetDateTime;

/// Exit code of a run stopped by Ctrl-C/SIGTERM (after its results were written).
pub const INTERRUPTED_EXIT_CODE: u8 = 130;

/// Whether a measured phase has started: before it (model detection, tokenizer, workload, the
/// readiness wait) nothing is in flight and nothing written, so Ctrl-C/SIGTERM exits at once.
static MEASURING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Called when the first measured phase starts (from then on Ctrl-C stops the run gracefully).
pub(crate) fn measuring_started() {
    MEASURING.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// The first Ctrl-C/SIGTERM before the measured phase (e.g. during the readiness wait) ends
/// the process at once with exit 130.
pub(crate) fn exit_if_not_measuring() {
    if !MEASURING.load(std::sync::atomic::Ordering::SeqCst) {
        eprintln!("\nInterrupted before the benchmark started: nothing was sent or written");
        std::process::exit(INTERRUPTED_EXIT_CODE.into());
    }
}

/// Checks that the run can open as many connections as it may need at once.
fn check_open_files(run: &servebench_runner::RunConfig, num_prompts: u64) -> anyhow::Result<()> {
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
            println!(
                "warning: without --max-concurrency up to {num_prompts} requests may be in flight, but only \
                 {limit} files can be open (ulimit -n); requests beyond that fail to connect"
            );
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Runs a benchmark; returns the process exit code.
pub fn run(args: &RunArgs) -> anyhow::Result<u8> {
    // OPENAI_API_KEY (ANTHROPIC_API_KEY first for --backend anthropic).
    let api_key = servebench_client::api_key_from_env(&args.backend, |k| std::env::var(k).ok());
    let Validated { mut run, output } = validate(args, api_key)?;
    crate::cli_network::with_process_env(&mut run);
    for warning in crate::cli_unused::check(args)? {
        println!("{warning}");
    }
    // No output may overwrite an input or another output (SB120), checked before any write.
    crate::path_collisions::check(args, &output, run.records_path.as_deref())?;
    let experiment = crate::experiment::plan::plan(&args.experiment)?;
    check_open_files(&run, args.num_prompts)?;
    // The embedded simulator lives until the end of this function.
    let _sim = if args.sim {
        let sim = EmbeddedSim::start(&args.sim_options)?;
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
        let o = &args.sim_options;
        let timing = match (&o.sim_preset, o.sim_mode) {
            (Some(preset), _) => format!("engine model, preset {preset}"),
            (None, crate::cli_values::SimMode::Engine) => "engine model".to_owned(),
            (None, crate::cli_values::SimMode::Fixed) => {
                format!("fixed timing: TTFT {} ms, ITL {} ms", o.sim_ttft_ms, o.sim_itl_ms)
            }
        };
        println!("Embedded simulator at {} ({timing})", run.base_url);
        Some(sim)
    } else {
        None
    };
    if let Some(exp) = experiment {
        return crate::experiment::run(args, run, output, exp);
    }
    let paths = output_paths(&output, &run);
    if run.records_path.is_none() {
        run.records_path = paths.as_ref().map(|p| p.records.clone());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(CLIENT_THREAD_PREFIX)
        .build()
        .context("starting the async runtime")?;
    let observer = Arc::new(ConsoleObserver::new(run.show_progress));
    let rate = run.rate;
    let seed = run.seed;
    let shard_spec = run.shard.as_ref().map(|s| s.spec);
    let max_concurrency = run.max_concurrency;
    let records_file = run.records_path.clone();
    let on_interrupt = run.on_interrupt;
    let group_info = crate::cli_workload::group_info(&run);
    let (result, server_side) = runtime.block_on(async move {
        let signal = CancellationToken::new();
        let stop = signal.clone();
        let in_flight = match on_interrupt {
            InterruptMode::Cancel => "in-flight requests are cancelled",
            InterruptMode::Drain => "in-flight requests are drained",
        };
        tokio::spawn(async move {
            if crate::sim_cmd::wait_for_stop_signal().await.is_ok() {
                exit_if_not_measuring();
                eprintln!("\nInterrupted: sending nothing new; {in_flight} (Ctrl-C again to exit now)");
                stop.cancel();
                if crate::sim_cmd::wait_for_stop_signal().await.is_ok() {
                    std::process::exit(INTERRUPTED_EXIT_CODE.into());
                }
            }
        });
        // --scrape-metrics / --profile: driven by the measured phase's start and end.
        let side = crate::experiment::extras::ServerSide::for_run(&run, &args.experiment)?;
        let observer = side.observer(observer);
        let run_task = tokio::spawn(run_benchmark(run, observer, signal));
        let result = run_task.await.context("the benchmark task failed")?.map_err(anyhow::Error::from);
        let extra = side.finish().await;
        result.map(|r| (r, extra))
    })?;
    let out = match result {
        RunResult::DryRun { model, tokenizer_id, workload } => {
            println!("Dry run: model {}, tokenizer {}", model.model_id, tokenizer_id);
            println!("{:<40}{:<10}", "Total prompts:", workload.requests);
            println!("{:<40}{:<10}", "Total input tokens:", workload.total_prompt_tokens);
            println!("{:<40}{:<10}", "Total expected output tokens:", workload.total_expected_output_tokens);
            let n = workload.requests.max(1) as f64;
            println!("{:<40}{:<10.2}", "Avg input tokens:", workload.total_prompt_tokens as f64 / n);
            println!(
                "{:<40}{:<10.2}",
                "Avg output tokens:",
                workload.total_expected_output_tokens as f64 / n
            );
            println!(
                "{:<40}{}..{}",
                "Input tokens (min..max):", workload.min_prompt_tokens, workload.max_prompt_tokens
            );
            if workload.filtered_out > 0 {
                println!("{:<40}{:<10}", "Dropped by --max-model-len:", workload.filtered_out);
            }
            print!("{}", workload.lengths.render());
            if args.plot_dataset_stats || args.vllm.plot_timeline {
                println!("note: --plot-dataset-stats and --plot-timeline plot a run's requests; a dry run writes nothing");
            }
            return Ok(0);
        }
        RunResult::Completed(out) => *out,
    };
    let metrics_cfg = MetricsConfig {
        percentiles: output.metric_percentiles.clone(),
        selected: output.percentile_metrics.clone(),
        goodput: output.goodput.clone(),
    };
    let metrics = compute(&out.records, &metrics_cfg);
    let schedule_events = rate
        .ramp_up
        .map(|_| ArrivalSchedule::generate(out.records.len(), &rate, seed).rps_change_events(&rate));
    let info = run_info(&output, args, &out, &rate, max_concurrency, schedule_events.unwrap_or_default());
    println!("{}", console_block(&info, &metrics));
    let probes = servebench_report::sections::probe::ProbeSummary::of(&out.probe_records);
    if let Some(p) = &probes {
        print!("{}", p.console_block());
    }
    // Per-turn, per-stage and trace-replay blocks (docs/workloads.md).
    print!(
        "{}",
        servebench_report::sections::groups::console_groups(&out.records, &metrics_cfg, &group_info)
    );
    let steady = crate::experiment::extras::steady_state_of(
        &out.records,
        &args.experiment,
        &output,
        rate.request_rate,
        max_concurrency,
    );
    crate::experiment::extras::print_blocks(steady.as_ref(), &server_side);
    for w in &out.warnings {
        println!("note: {w}");
    }
    let mut records_file = records_file;
    // Where the result goes (or would go): `--result-filename` or vLLM's default name.
    let result_path = output.result_dir.clone().unwrap_or_default().join(match &output.result_filename {
        Some(f) => f.clone(),
        None => crate::cli_shard::shard_file_name(&default_result_filename(&info), shard_spec),
    });
    if let Some(paths) = paths {
        // The records file is in place (its final name) before the result that names it.
        let final_records = records_path_for_doc(&result_path, output.append_result);
        if records_file.as_ref() == Some(&paths.records) && paths.records != final_records {
            std::fs::rename(&paths.records, &final_records)
                .map_err(|e| servebench_core::BenchError::io(final_records.display(), e))?;
            records_file = Some(final_records);
        }
        let mut json = result_json(&info, &metrics, &out.records, output.save_detailed);
        if let Some(r) = &records_file {
            json["records_file"] = serde_json::Value::String(records_file_key(&result_path, r));
        }
        json["interrupted"] = serde_json::Value::Bool(out.interrupted);
        servebench_report::sections::groups::extend_result(
            &mut json,
            &out.records,
            &metrics_cfg,
            &group_info,
        );
        crate::experiment::extras::add_to_result(
            &mut json,
            steady.as_ref(),
            server_side.server.as_ref(),
            server_side.profile.as_ref(),
        );
        if let Some(o) = json.as_object_mut() {
            if let Some(p) = &probes {
                p.add_to(o);
            }
            o.insert("server_tokenize".into(), out.verification.to_json());
        }
        write_result(&result_path, &json, output.append_result)?;
        println!("Result: {}", result_path.display());
    }
    if let Some(p) = &records_file {
        println!("Records: {} ({} lines)", p.display(), out.records.len());
    }
    if args.plot_dataset_stats {
        crate::report_cmd::write_dataset_stats(&result_path, args, &info, &out.records)?;
    }
    if let Some(thresholds) = output.timeline_itl_ms {
        crate::report_cmd::write_timeline(&result_path, args, &info, &out.records, thresholds)?;
    }
    // --html-report / --csv: written from the same records and metrics as the result.
    crate::report_cmd::write_run_reports(
        args.html_report.as_deref(),
        args.csv.as_deref(),
        &info,
        &metrics,
        &out,
        server_side.server.as_ref(),
    )?;
    if out.interrupted {
        println!(
            "Interrupted: results cover the {} requests sent before the interrupt; {} were never sent",
            metrics.sent, metrics.never_sent
        );
        return Ok(INTERRUPTED_EXIT_CODE);
    }
    if let Some(limit) = output.max_failure_rate {
        let total = metrics.sent.max(1);
        let rate = metrics.failed as f64 * 100.0 / total as f64;
        if rate > limit {
            return Err(servebench_core::BenchError::FailureRate {
                failed: metrics.failed,
                total,
                rate,
                limit,
            }
            .into());
        }
    }
    // Not one request succeeded: there are no numbers, and CI must see it (exit 1, SB602).
    if let Some(e) = servebench_runner::prepare::failure_codes::no_success(&out.records, "") {
        return Err(e.into());
    }
    Ok(0)
}

/// Where results go. The default file name contains the model, which may only be known after
/// the run (auto-detected), so the records file starts under a provisional name and is renamed
/// next to the result at the end.
struct OutputPaths {
    records: PathBuf,
}

fn output_paths(output: &OutputConfig, run: &servebench_runner::RunConfig) -> Option<OutputPaths> {
    if !(output.save_result || output.append_result) || run.dry_run {
        return None;
    }
    let dir = output.result_dir.clone().unwrap_or_default();
    let explicit_result = output.result_filename.as_ref().map(|f| dir.join(f));
    let records = match &explicit_result {
        Some(p) => records_path_for_doc(p, output.append_result),
        None => {
            let name = format!("servebench-{}-{}.records.jsonl", vllm_date(now_local()), std::process::id());
            dir.join(crate::cli_shard::shard_file_name(&name, run.shard.as_ref().map(|s| s.spec)))
        }
    };
    Some(OutputPaths { records })
}

fn records_path_for(result: &std::path::Path) -> PathBuf {
    let mut s = result.as_os_str().to_os_string();
    s.push(".records.jsonl");
    PathBuf::from(s)
}

/// The records file of the document about to be written to `result`: `<result>.records.jsonl`,
/// or with `--append-result` onto a file that already holds K documents,
/// `<result>.<K+1>.records.jsonl` — each appended document keeps its own records (and names
/// them in `records_file`), so `report`/`compare` never pair it with another run's.
pub(crate) fn records_path_for_doc(result: &std::path::Path, append: bool) -> PathBuf {
    let existing = if append {
        std::fs::read_to_string(result)
            .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(0)
    } else {
        0
    };
    if existing == 0 {
        return records_path_for(result);
    }
    let mut s = result.as_os_str().to_os_string();
    s.push(format!(".{}.records.jsonl", existing + 1));
    PathBuf::from(s)
}

/// `records_file` of a result: the records file's name when it sits beside the result, else its
/// path as given.
fn records_file_key(result: &std::path::Path, records: &std::path::Path) -> String {
    let same_dir = records.parent().unwrap_or(std::path::Path::new(""))
        == result.parent().unwrap_or(std::path::Path::new(""));
    match records.file_name() {
        Some(name) if same_dir => name.to_string_lossy().into_owned(),
        _ => records.display().to_string(),
    }
}

fn now_local() -> OffsetDateTime {
    OffsetDateTime::now_local().unwrap_or_else(|_| OffsetDateTime::now_utc())
}

pub(crate) fn run_info(
    output: &OutputConfig,
    args: &RunArgs,
    out: &RunOutput,
    rate: &servebench_core::schedule::RateConfig,
    max_concurrency: Option<usize>,
    rps_change_events: Vec<servebench_core::schedule::RpsChange>,
) -> RunInfo {
    let lateness: Vec<f64> = out.health.dispatch_lateness_us.iter().map(|&v| v as f64).collect();
    let hiccups: Vec<f64> = out.health.hiccup_us.iter().map(|&v| f64::from(v)).collect();
    let wall = out.health.wall_seconds.max(1e-9);
    let origin_wall =
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(out.clock.wall_anchor_unix_us()) * 1000)
            .map(|t| t.to_offset(now_local().offset()))
            .unwrap_or_else(|_| now_local());
    RunInfo {
        date: now_local(),
        origin_wall,
        backend: output.backend_name.clone(),
        endpoint_type: output.backend_name.clone(),
        label: output.label.clone(),
        model_id: out.model.model_id.clone(),
        tokenizer_id: Some(out.tokenizer_id.clone()),
        num_prompts: args.num_prompts,
        request_rate: rate.request_rate,
        burstiness: rate.burstiness,
        max_concurrency: max_concurrency.map(|c| c as u64),
        ramp_up: rate.ramp_up,
        rps_change_events,
        metadata: output.metadata.clone(),
        client_health: ClientHealth {
            dispatch_lateness_p50_us: (!lateness.is_empty()).then(|| percentile(&lateness, 50.0)),
            dispatch_lateness_p99_us: (!lateness.is_empty()).then(|| percentile(&lateness, 99.0)),
            hiccup_p99_us: (!hiccups.is_empty()).then(|| percentile(&hiccups, 99.0)),
            client_cpu_percent: Some(out.health.client_cpu_seconds / wall * 100.0),
            available_cores: Some(out.health.cpus as f64),
            peak_rss_bytes: out.health.peak_rss_bytes,
            client_cpu_seconds: Some(out.health.client_cpu_seconds),
            connections_opened: Some(out.health.connections_opened),
            stale_connections: Some(out.health.stale_connections),
            resent_requests: Some(out.health.resent_requests),
            pooling_disabled: Some(out.health.pooling_disabled),
        },
    }
}
