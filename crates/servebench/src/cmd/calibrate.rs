//! `servebench calibrate`: how far the client's measurements are from the truth on this host.
//!
//! Starts `servebench sim` in fixed mode as a separate process (so the simulator's CPU time is
//! not charged to the client) with its ground-truth log on, then runs the client — also as a
//! child process of this binary, with a warm connection pool — at a ladder of concurrencies.
//! The truth is what the simulator actually sent and when (its log, compared request by
//! request in `calibrate_truth.rs`), so the simulator's own timer lateness is not charged to
//! the client; the nominal model (TTFT = `ttft`, ITL = `itl`, E2EL = `ttft + (n − 1) · itl`)
//! is reported beside it. It prints measured − truth per level, with the client's CPU time,
//! CPU per SSE event and peak RSS, and optionally writes the same numbers as JSON.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use crate::cli::subcommands::CalibrateArgs;
use anyhow::{bail, Context};
use serde::Serialize;
use servebench_core::BenchError;
use servebench_report::document::ResultDocument;
use servebench_report::result_keys::{LatencyKey, LatencyMetric, Stat};

/// The truth of the fixed timing model.
#[derive(Debug, Clone, Serialize)]
pub struct Truth {
    /// TTFT in ms.
    pub ttft_ms: f64,
    /// ITL in ms.
    pub itl_ms: f64,
    /// E2EL in ms: `ttft + (n − 1) · itl`.
    pub e2el_ms: f64,
    /// Output tokens per request.
    pub output_len: u32,
}

/// Measured − truth at one concurrency level (ms unless named otherwise).
#[derive(Debug, Clone, Serialize)]
pub struct Level {
    /// Client concurrency (`--max-concurrency`, `--preconnect`).
    pub concurrency: u64,
    /// Requests sent.
    pub requests: u64,
    /// Requests completed.
    pub completed: u64,
    /// Measured − ground truth (the simulator's log), request by request.
    pub truth: crate::cmd::calibrate_truth::TruthErrors,
    /// Mean TTFT − nominal TTFT (charges the simulator's own lateness to the client too).
    pub ttft_mean_vs_nominal_ms: f64,
    /// p99 ITL − nominal ITL.
    pub itl_p99_vs_nominal_ms: f64,
    /// Client CPU time (user + system) of its runtime threads during the run, seconds.
    pub client_cpu_s: Option<f64>,
    /// Client CPU per SSE event (token events + usage chunk + `[DONE]`), µs.
    pub cpu_us_per_event: Option<f64>,
    /// Client peak RSS, MiB.
    pub peak_rss_mib: Option<f64>,
    /// Wall time of the level, seconds (including client start-up).
    pub wall_s: f64,
    /// The level's records (compared with the truth once the simulator wrote its log).
    #[serde(skip)]
    pub records: Vec<servebench_core::RequestRecord>,
    /// Wall-clock origin of the client's run clock (`run_origin_unix_us` of the result).
    #[serde(skip)]
    pub client_origin_unix_us: Option<u64>,
}

/// Everything `--json` writes.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// The truth.
    pub truth: Truth,
    /// One entry per level.
    pub levels: Vec<Level>,
    /// CPUs available to this process.
    pub cpus: usize,
    /// `/proc/loadavg` at start (other load on the host), when readable.
    pub loadavg_at_start: Option<String>,
    /// The client and the simulator each ran on a CPU of their own (`--pin-cpu`): the first
    /// two CPUs this process may use.
    pub pinned: bool,
}

/// A child process killed when dropped.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bad(flag: &str, what: impl Into<String>) -> anyhow::Error {
    BenchError::config(flag, what.into(), "see `servebench calibrate --help`").into()
}

/// Starts `servebench sim --port 0` and returns it with its base URL (parsed from the
/// `servebench sim: serving model '…' on http://…` line it prints to stderr).
fn start_sim(
    exe: &Path,
    args: &CalibrateArgs,
    truth_log: &Path,
    pin: Option<usize>,
) -> anyhow::Result<(ChildGuard, String)> {
    let child = Command::new(exe)
        .args(["sim", "--host", "127.0.0.1", "--port", "0", "--sim-model", "calibrate"])
        .args(pin.map(|cpu| format!("--pin-cpu={cpu}")))
        .arg("--ground-truth")
        .arg(truth_log)
        .args(["--sim-ttft-ms", &args.ttft_ms.to_string(), "--sim-itl-ms", &args.itl_ms.to_string()])
        .args(["--sim-tokenizer", &args.tokenizer])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| bad("--sim-exe", format!("{} cannot be run: {e}", exe.display())))?;
    let mut guard = ChildGuard(child);
    let stderr = guard.0.stderr.take().context("reading the simulator's stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !sent {
                if let Some(url) = parse_sim_url(&line) {
                    let _ = tx.send(Ok(url));
                    sent = true;
                    continue;
                }
                let _ = tx.send(Err(line));
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut errors = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Ok(url)) => return Ok((guard, url)),
            Ok(Err(line)) => errors.push(line),
            Err(RecvTimeoutError::Disconnected) => return Err(sim_exited(exe, &mut guard, &errors)),
            Err(RecvTimeoutError::Timeout) => {
                let what =
                    format!("{} did not say where it listens within 60 s{}", exe.display(), said(&errors));
                return Err(BenchError::config("--sim-exe", what, SIM_EXE_FIX).into());
            }
        }
    }
}

/// The simulator closed its stderr without saying where it listens: it exited (or is about
/// to). SB101 naming `--sim-exe`, its exit status and what it printed.
fn sim_exited(exe: &Path, guard: &mut ChildGuard, errors: &[String]) -> anyhow::Error {
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        match guard.0.try_wait() {
            Ok(Some(s)) => break s.to_string(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => break "still running, its stderr closed".to_owned(),
        }
    };
    BenchError::config(
        "--sim-exe",
        format!("the simulator {} did not start ({status}){}", exe.display(), said(errors)),
        SIM_EXE_FIX,
    )
    .into()
}

const SIM_EXE_FIX: &str =
    "pass a servebench binary (`servebench sim` must run), or drop --sim-exe to use this one";

/// `: "line | line"` of what the simulator printed, or that it printed nothing.
fn said(errors: &[String]) -> String {
    match errors {
        [] => ", and printed nothing".to_owned(),
        lines => format!(": {}", lines.join(" | ")),
    }
}

/// `--json PATH` must be writable where it is named before minutes of calibration, not after.
fn check_json_path(path: &Path) -> anyhow::Result<()> {
    if path.is_dir() {
        return Err(bad("--json", format!("{} is a directory", path.display())));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(bad("--json", format!("the directory {} does not exist", parent.display())));
    }
    Ok(())
}

/// Stops the simulator with SIGTERM (it then writes its ground-truth log) and waits for it.
fn stop_sim(mut sim: ChildGuard) -> anyhow::Result<()> {
    let pid = sim.0.id();
    crate::os::terminate(pid).with_context(|| format!("could not signal the simulator (pid {pid})"))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = sim.0.try_wait().context("waiting for the simulator")? {
            if !status.success() {
                bail!("the simulator exited with {status}");
            }
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the simulator did not stop within 60 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `http://HOST:PORT` from the simulator's start-up line.
pub fn parse_sim_url(line: &str) -> Option<String> {
    let rest = line.strip_prefix("servebench sim: serving model ")?;
    let at = rest.find(" on http://")?;
    let url = rest[at + 4..].split_whitespace().next()?;
    Some(url.to_owned())
}

/// A number the calibration needs from the client's result.
fn need(v: Option<f64>, key: &str) -> anyhow::Result<f64> {
    v.with_context(|| format!("result JSON has no '{key}'"))
}

/// The `stat` of `metric` in `doc` (`mean_ttft_ms`, `p99_itl_ms`).
fn latency(doc: &ResultDocument, stat: Stat, metric: LatencyMetric) -> Option<f64> {
    doc.metrics.latency.get(&LatencyKey { stat, metric })
}

fn run_level(
    exe: &Path,
    args: &CalibrateArgs,
    url: &str,
    dir: &Path,
    c: u64,
    truth: &Truth,
    pin: Option<usize>,
) -> anyhow::Result<Level> {
    let requests = args.requests.unwrap_or_else(|| (2 * c).max(20));
    let file = format!("level-{c}.json");
    let t0 = Instant::now();
    let out = Command::new(exe)
        .args(["--base-url", url, "--model", "calibrate", "--tokenizer", &args.tokenizer])
        .args(["--dataset-name", "random", "--ignore-eos", "--disable-tqdm"])
        // The simulator is on this host: never through a proxy from the environment.
        .arg("--no-proxy")
        .args(["--random-input-len", &args.input_len.to_string()])
        .args(["--random-output-len", &args.output_len.to_string()])
        .args(["--num-prompts", &requests.to_string(), "--max-concurrency", &c.to_string()])
        .args(["--preconnect", &c.to_string(), "--request-id-prefix", &format!("cal-c{c}-")])
        .args(["--percentile-metrics", "ttft,itl,e2el", "--metric-percentiles", "99"])
        .args(pin.map(|cpu| format!("--pin-cpu={cpu}")))
        .args(["--save-result", "--result-dir"])
        .arg(dir)
        .args(["--result-filename", &file])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| bad("--client-exe", format!("{} cannot be run: {e}", exe.display())))?;
    let wall_s = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!("the client failed at concurrency {c} ({}){}", out.status, stderr_said(&out.stderr));
    }
    let path = dir.join(&file);
    if !path.is_file() {
        // Not a servebench client, or one that ignored --save-result: say which, with its words.
        bail!(
            "the client ({}) exited successfully at concurrency {c} but wrote no result file ({}){}",
            exe.display(),
            path.display(),
            stderr_said(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(&path).map_err(|e| BenchError::io(path.display(), e))?;
    let doc: ResultDocument = serde_json::from_str(&text).context("parsing the result JSON")?;
    let health = doc.client_health.clone().unwrap_or_default();
    let cpu = health.client_cpu_seconds;
    let records_path = dir.join(format!("{file}.records.jsonl"));
    let (records, _) = servebench_runner::read_records(&records_path)?;
    // SSE events: token events + the usage chunk + `[DONE]` per streamed request.
    let events: f64 = records.iter().map(|r| f64::from(r.token_event_count) + 2.0).sum();
    Ok(Level {
        concurrency: c,
        requests,
        completed: need(doc.metrics.completed, "completed")? as u64,
        truth: crate::cmd::calibrate_truth::TruthErrors::default(),
        ttft_mean_vs_nominal_ms: need(latency(&doc, Stat::Mean, LatencyMetric::Ttft), "mean_ttft_ms")?
            - truth.ttft_ms,
        itl_p99_vs_nominal_ms: need(
            latency(&doc, Stat::Percentile("99".into()), LatencyMetric::Itl),
            "p99_itl_ms",
        )? - truth.itl_ms,
        records,
        client_origin_unix_us: doc.run_origin_unix_us,
        client_cpu_s: cpu,
        cpu_us_per_event: cpu.filter(|_| events > 0.0).map(|s| s * 1e6 / events),
        peak_rss_mib: health.peak_rss_bytes.map(|b| b / 1_048_576.0),
        wall_s,
    })
}

/// What a failed client printed on stderr, as `: TEXT`; nothing when it printed nothing (the
/// message then ends at its exit status, not at a bare colon).
fn stderr_said(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    match text.trim() {
        "" => String::new(),
        t => format!(": {t}"),
    }
}

/// The console table.
pub fn table(cal: &Calibration) -> String {
    let t = &cal.truth;
    let mut out = format!(
        "servebench calibrate: measured − truth (ms); truth TTFT {} ms, ITL {} ms, E2EL {} ms ({} tokens); \
         {} CPUs{}, load at start: {}\n",
        t.ttft_ms,
        t.itl_ms,
        t.e2el_ms,
        t.output_len,
        cal.cpus,
        if cal.pinned { " (client and simulator pinned to one CPU each)" } else { "" },
        cal.loadavg_at_start.as_deref().unwrap_or("?")
    );
    out.push_str(&format!(
        "{:>6} {:>6} {:>10} {:>10} {:>9} {:>9} {:>10} | {:>7} | {:>9} {:>9} | {:>7} {:>9} {:>8}\n",
        "conc",
        "reqs",
        "TTFT mean",
        "TTFT p99",
        "ITL mean",
        "ITL p99",
        "E2EL mean",
        "intake",
        "nom TTFT",
        "nom p99I",
        "CPU s",
        "µs/event",
        "RSS MiB"
    ));
    let f = |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or_else(|| "-".into());
    for l in &cal.levels {
        let e = &l.truth;
        out.push_str(&format!(
            "{:>6} {:>6} {:>+10.3} {:>+10.3} {:>+9.3} {:>+9.3} {:>+10.3} | {:>7} | {:>+9.2} {:>+9.2} | {:>7} {:>9} {:>8}\n",
            l.concurrency,
            l.completed,
            e.ttft_mean_err_ms,
            e.ttft_p99_err_ms,
            e.itl_mean_err_ms,
            e.itl_p99_err_ms,
            e.e2el_mean_err_ms,
            f(e.intake_mean_ms, 3),
            l.ttft_mean_vs_nominal_ms,
            l.itl_p99_vs_nominal_ms,
            f(l.client_cpu_s, 2),
            f(l.cpu_us_per_event, 2),
            f(l.peak_rss_mib, 1),
        ));
    }
    out.push_str(
        "truth = the simulator's own send times, request by request; intake = mean time a sent \
         request waited before the simulator's handler took it (server-side queueing, included \
         in the TTFT error); nom = vs the nominal TTFT/ITL (also charges the simulator's lateness)\n",
    );
    out
}

/// `servebench calibrate`.
pub fn calibrate(args: &CalibrateArgs) -> anyhow::Result<u8> {
    if args.levels.is_empty() || args.levels.contains(&0) {
        return Err(bad("--levels", "must list positive concurrencies"));
    }
    if args.output_len == 0 || args.input_len == 0 {
        return Err(bad("--output-len/--input-len", "must be at least 1"));
    }
    if args.requests == Some(0) {
        return Err(bad("--requests", "must be at least 1"));
    }
    for (flag, ms) in [("--ttft-ms", args.ttft_ms), ("--itl-ms", args.itl_ms)] {
        if !ms.is_finite() || !(0.0..=86_400_000.0).contains(&ms) {
            return Err(bad(flag, format!("must be a number of milliseconds in [0, 86400000] (got {ms})")));
        }
    }
    let own = std::env::current_exe().context("locating the servebench binary")?;
    let sim_exe = args.sim_exe.clone().unwrap_or_else(|| own.clone());
    let exe = args.client_exe.clone().unwrap_or(own);
    if let Some(path) = &args.json {
        check_json_path(path)?;
    }
    for (flag, path) in [("--sim-exe", &sim_exe), ("--client-exe", &exe)] {
        if !path.is_file() {
            return Err(bad(flag, format!("{} is not a file", path.display())));
        }
    }
    // A bare name (`exit3.sh`) would be looked up on PATH when run: run the file checked here.
    let absolute = |p: PathBuf| std::path::absolute(&p).unwrap_or(p);
    let (sim_exe, exe) = (absolute(sim_exe), absolute(exe));
    let truth = Truth {
        ttft_ms: args.ttft_ms,
        itl_ms: args.itl_ms,
        e2el_ms: args.ttft_ms + f64::from(args.output_len - 1) * args.itl_ms,
        output_len: args.output_len,
    };
    let loadavg_at_start = std::fs::read_to_string("/proc/loadavg").ok().map(|s| s.trim().to_owned());
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let (tmp, dir) = match &args.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| BenchError::io(d.display(), e))?;
            (None, d.clone())
        }
        None => {
            let d = std::env::temp_dir().join(format!("servebench-calibrate-{}", std::process::id()));
            std::fs::create_dir_all(&d).map_err(|e| BenchError::io(d.display(), e))?;
            (Some(d.clone()), d)
        }
    };
    let truth_log = dir.join("ground-truth.jsonl");
    let allowed = crate::os::allowed_cpus();
    let (client_cpu, sim_cpu) = match allowed.as_slice() {
        [a, b, ..] if !args.no_pin => (Some(*a), Some(*b)),
        _ => (None, None),
    };
    let pinned = client_cpu.is_some();
    let (sim, url) = start_sim(&sim_exe, args, &truth_log, sim_cpu)?;
    errln!("calibrate: simulator at {url} (pid {}), levels {:?}", sim.0.id(), args.levels);
    let mut levels = Vec::new();
    let mut result = Ok(());
    for &c in &args.levels {
        match run_level(&exe, args, &url, &dir, c, &truth, client_cpu) {
            Ok(l) => {
                errln!("calibrate: concurrency {c} done in {:.1} s", l.wall_s);
                levels.push(l);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let truth_read = stop_sim(sim).and_then(|()| Ok(crate::cmd::calibrate_truth::read_truth(&truth_log)?));
    match truth_read {
        Ok(map) => {
            for l in &mut levels {
                l.truth = crate::cmd::calibrate_truth::compare(&l.records, l.client_origin_unix_us, &map);
            }
        }
        Err(e) => {
            if result.is_ok() {
                result = Err(e.context("reading the simulator's ground-truth log"));
            }
        }
    }
    if let Some(d) = tmp {
        let _ = std::fs::remove_dir_all(d);
    }
    let cal = Calibration { truth, levels, cpus, loadavg_at_start, pinned };
    out!("{}", table(&cal));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&cal).context("serializing the calibration")?;
        std::fs::write(path, text).map_err(|e| BenchError::io(path.display(), e))?;
    }
    result.map(|()| 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_sim_line() {
        let l = "servebench sim: serving model 'x y' on http://127.0.0.1:4321 (Ctrl-C to stop)";
        assert_eq!(parse_sim_url(l).as_deref(), Some("http://127.0.0.1:4321"));
        assert_eq!(parse_sim_url("something else"), None);
    }

    /// Pins a silent failing `--client-exe` message ending at its exit status ("… (exit
    /// status: 1): " ended in a bare colon).
    #[test]
    fn a_silent_client_failure_ends_at_its_status() {
        assert_eq!(stderr_said(b""), "");
        assert_eq!(stderr_said(b" \n"), "");
        assert_eq!(stderr_said(b"error[SB101]: bad\n"), ": error[SB101]: bad");
    }
}
