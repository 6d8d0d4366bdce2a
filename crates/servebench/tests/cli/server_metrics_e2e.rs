//! Server metrics of every engine and GPU energy, end to end through the binary against
//! simulators started here (docs/metrics.md, "Server metrics of every engine", "GPU telemetry
//! and energy"): each personality's `/metrics` names are read as their meanings, several
//! endpoints are kept apart, the simulated DCGM exporter's energy is reported with the right
//! arithmetic, and a host without `nvidia-smi` runs on and says so.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{bin, text};
use serde_json::Value;
use servebench_sim::power::GpuPowerConfig;
use servebench_sim::{Personality, SimConfig, SimHandle};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Output;

const MODEL: &str = "metrics-model";
const PROMPTS: u64 = 6;
const OUT: u64 = 8;

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

pub(crate) fn sim(rt: &tokio::runtime::Runtime, p: Personality, gpus: Option<GpuPowerConfig>) -> SimHandle {
    let tok = servebench_data::tokenizer::load_tokenizer("gpt2").unwrap();
    let mut cfg = SimConfig::new(MODEL, tok).with_fixed_timing_ms(5.0, 2.0).unwrap().with_personality(p);
    if let Some(g) = gpus {
        cfg = cfg.with_gpus(g);
    }
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    rt.block_on(servebench_sim::start(cfg, addr)).unwrap()
}

/// Runs the binary against `base_url` with `extra`, saving `r.json` in `dir`.
pub(crate) fn run(dir: &Path, base_url: &str, extra: &[&str]) -> Output {
    bin()
        .args(["--base-url", base_url, "--backend", "openai-chat", "--model", MODEL, "--tokenizer", "gpt2"])
        .args([
            "--dataset-name",
            "random",
            "--random-input-len",
            "16",
            "--random-output-len",
            "8",
            "--ignore-eos",
        ])
        .args(["--num-prompts", &PROMPTS.to_string(), "--max-concurrency", "2", "--disable-tqdm"])
        .args(["--ready-check-timeout-sec", "0", "--scrape-interval", "0.1"])
        .args(["--save-result", "--result-dir", dir.to_str().unwrap(), "--result-filename", "r.json"])
        .args(extra)
        .output()
        .expect("run servebench")
}

fn result(dir: &Path) -> Value {
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(&json).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");
    json
}

fn lines(dir: &Path) -> Vec<Value> {
    let t = std::fs::read_to_string(dir.join("r.json.server-metrics.jsonl")).unwrap();
    t.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn every_engines_metric_names_are_read_as_their_meanings_through_the_simulator() {
    let rt = runtime();
    // (personality, engine, meanings it must report with the run's exact counts)
    let cases: [(Personality, &str, &[&str], &[&str]); 6] = [
        (Personality::Vllm, "vllm", &["generation_tokens", "prompt_tokens"], &["ttft", "itl", "e2e"]),
        (Personality::Sglang, "sglang", &["generation_tokens", "prompt_tokens"], &["ttft", "itl", "e2e"]),
        (Personality::LlamaCpp, "llamacpp", &["generation_tokens", "prompt_tokens"], &[]),
        (Personality::Tgi, "tgi", &["generation_tokens", "prompt_tokens"], &["itl", "e2e"]),
        (Personality::TrtLlm, "trtllm", &["generation_tokens", "prompt_tokens"], &["ttft", "itl", "e2e"]),
        (Personality::Dynamo, "dynamo", &["generation_tokens", "prompt_tokens"], &["ttft", "itl", "e2e"]),
    ];
    for (p, engine, counters, histograms) in cases {
        let s = sim(&rt, p, None);
        let dir = tempfile::tempdir().unwrap();
        let o = run(dir.path(), &s.base_url(), &["--scrape-metrics"]);
        assert_eq!(o.status.code(), Some(0), "{engine}: {}", text(&o.stderr));
        let r = result(dir.path());
        let e = &r["server_metrics"]["endpoints"][0];
        assert_eq!(e["engines"], serde_json::json!([engine]), "{engine}: {e}");
        for m in ["queue", "running"] {
            assert_eq!(e["meanings"][m]["kind"], "gauge", "{engine} {m}: {e}");
        }
        let total_out = r["total_output_tokens"].as_f64().unwrap();
        assert_eq!(total_out, (PROMPTS * OUT) as f64);
        // The server's prompt tokens (chat template included), from the records.
        let records = std::fs::read_to_string(dir.path().join("r.json.records.jsonl")).unwrap();
        let server_in: f64 = records
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["server_prompt_tokens"].as_f64().unwrap())
            .sum();
        for m in counters {
            let want = if *m == "generation_tokens" { total_out } else { server_in };
            assert_eq!(e["meanings"][m]["delta"].as_f64(), Some(want), "{engine} {m}: {}", e["meanings"][m]);
        }
        for m in histograms {
            let h = &e["meanings"][m];
            assert_eq!(h["kind"], "histogram", "{engine} {m}");
            let want = if *m == "itl" { None } else { Some(PROMPTS as f64) };
            if let Some(want) = want {
                assert_eq!(h["count"].as_f64(), Some(want), "{engine} {m}: {h}");
            }
            assert!(h["p50"].as_f64().is_some_and(|v| v > 0.0), "{engine} {m}: {h}");
        }
        // The older fixed series come from the same names (the first endpoint).
        let samples = r["server_metrics"]["samples"].as_array().unwrap();
        assert!(samples.iter().all(|x| x["running"].is_number()), "{engine}");
        rt.block_on(s.shutdown());
    }
}

#[test]
fn several_endpoints_are_summarised_apart_and_every_scrape_is_a_line_of_the_file() {
    let rt = runtime();
    let (a, b) = (sim(&rt, Personality::Vllm, None), sim(&rt, Personality::Sglang, None));
    let dir = tempfile::tempdir().unwrap();
    let other = format!("{}/metrics", b.base_url());
    let o = run(dir.path(), &a.base_url(), &["--scrape-metrics", "--server-metrics-url", &other]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = result(dir.path());
    let eps = r["server_metrics"]["endpoints"].as_array().unwrap();
    assert_eq!(eps.len(), 2);
    assert_eq!(
        (eps[0]["engines"][0].as_str(), eps[1]["engines"][0].as_str()),
        (Some("vllm"), Some("sglang"))
    );
    assert_eq!(eps[1]["url"], other);
    // The idle replica generated nothing; the loaded one all the run's tokens.
    assert_eq!(eps[1]["meanings"]["generation_tokens"]["delta"].as_f64(), Some(0.0));
    assert_eq!(eps[0]["meanings"]["generation_tokens"]["delta"].as_f64(), Some((PROMPTS * OUT) as f64));
    assert_eq!(r["server_metrics"]["series_file"], "r.json.server-metrics.jsonl");
    let lines = lines(dir.path());
    for e in eps {
        let n = lines.iter().filter(|l| l["endpoint"] == e["url"]).count() as u64;
        assert_eq!(Some(n), e["scrapes"].as_u64(), "{}", e["url"]);
    }
    // The endpoints are scraped concurrently: the file's first line may be either one's.
    let first_of_vllm = lines.iter().find(|l| l["endpoint"] == eps[0]["url"]).unwrap();
    let series = first_of_vllm["series"].as_array().unwrap();
    assert!(series.iter().any(|s| s["name"] == "vllm:generation_tokens_total" && s["type"] == "counter"));
    rt.block_on(a.shutdown());
    rt.block_on(b.shutdown());
}

/// An exporter that accepts and never answers: each poll gave up after the 10 s control
/// timeout, so the measured phase waited 10 s for its baseline and 10 s more for its last poll
/// (a 2.5 s run took 30 s). A poll now gives up after its own limit (the interval, at least
/// 2 s) and says so; the run's own scrapes of the base URL are unaffected.
#[test]
fn a_metrics_url_that_never_answers_fails_each_poll_at_the_poll_limit() {
    let rt = runtime();
    let a = sim(&rt, Personality::Vllm, None);
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hung = format!("http://{}/metrics", silent.local_addr().unwrap());
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((c, _)) = silent.accept() {
            held.push(c);
            if held.len() >= 4 {
                break;
            }
        }
        held
    });
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), &a.base_url(), &["--scrape-metrics", "--server-metrics-url", &hung]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = result(dir.path());
    let eps = r["server_metrics"]["endpoints"].as_array().unwrap();
    let silent_ep = eps.iter().find(|e| e["url"] == hung.as_str()).unwrap();
    assert_eq!(silent_ep["scrapes"].as_u64(), Some(0), "{silent_ep}");
    assert!(silent_ep["failed_scrapes"].as_u64().unwrap() >= 2, "{silent_ep}");
    let last = silent_ep["last_error"].as_str().unwrap();
    assert!(last.contains("no answer within 2.0 s"), "{last}");
    let loaded = eps.iter().find(|e| e["url"] != hung.as_str()).unwrap();
    assert_eq!(loaded["meanings"]["generation_tokens"]["delta"].as_f64(), Some((PROMPTS * OUT) as f64));
    drop(holder);
    rt.block_on(a.shutdown());
}

/// The DCGM reading of `name` for GPU `gpu` in a file line.
fn reading(line: &Value, name: &str, gpu: &str) -> Option<f64> {
    line["series"].as_array()?.iter().find(|s| s["name"] == name && s["labels"]["gpu"] == gpu)?["value"]
        .as_f64()
}

#[test]
fn gpu_energy_of_the_simulated_dcgm_exporter_is_its_energy_counters_difference() {
    let rt = runtime();
    let power = GpuPowerConfig { gpus: 2, idle_w: 100.0, per_request_w: 50.0, max_w: 1000.0 };
    let s = sim(&rt, Personality::Vllm, Some(power));
    let dir = tempfile::tempdir().unwrap();
    let dcgm = format!("{}/dcgm/metrics", s.base_url());
    let interval = 0.1;
    let o = run(dir.path(), &s.base_url(), &["--gpu-metrics-url", &dcgm]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("Energy per output token (J/token):"), "{}", text(&o.stdout));
    let r = result(dir.path());
    let g = &r["gpu_energy"];
    assert_eq!(g["method"], "energy_counter", "{g}");
    let lines: Vec<Value> = lines(dir.path()).into_iter().filter(|l| l["source"] == "dcgm").collect();
    let mut total = 0.0;
    for (i, gpu) in g["gpus"].as_array().unwrap().iter().enumerate() {
        let id = i.to_string();
        // Energy: last − first counter reading (mJ) ÷ 1000, as written in the file.
        let first = reading(&lines[0], "energy_mj", &id).unwrap();
        let last = reading(lines.last().unwrap(), "energy_mj", &id).unwrap();
        let e = gpu["energy_j"].as_f64().unwrap();
        assert!((e - (last - first) / 1000.0).abs() <= 1e-9 * e, "{e} vs {first}..{last}");
        // The simulator's power lies between idle and idle + 50 W per running request (at most 2
        // running here); its integral over the window, give or take one scrape interval of
        // the highest power at either end (the client's clock against the simulator's).
        let w = gpu["window_s"].as_f64().unwrap();
        let (lo, hi) = (100.0, 100.0 + 50.0 * 2.0);
        assert!(e >= lo * (w - 2.0 * interval) && e <= hi * (w + 2.0 * interval), "{e} J over {w} s");
        total += e;
    }
    assert!((g["total_energy_j"].as_f64().unwrap() - total).abs() <= 1e-9 * total);
    let tokens = r["total_output_tokens"].as_f64().unwrap();
    assert_eq!(g["output_tokens"].as_f64(), Some(tokens));
    let jpt = g["joules_per_output_token"].as_f64().unwrap();
    assert!((jpt - total / tokens).abs() <= 1e-12 * jpt);
    assert!((g["output_tokens_per_joule"].as_f64().unwrap() * jpt - 1.0).abs() < 1e-12);
    assert_eq!(r["gpu_telemetry"]["source"], "dcgm");
    rt.block_on(s.shutdown());
}

/// Pins the server-side baseline of a `--start-at` run being taken at the start, not before the
/// wait: the first scrape came before a wait of any length, so the GPUs' idle energy (and every
/// counter's delta) over the wait counted as the run's. The energy window now opens at most
/// the baseline's lead (0.5 s) before the start instant.
#[test]
fn a_start_at_wait_is_not_in_the_gpu_energy_window() {
    let rt = runtime();
    let power = GpuPowerConfig { gpus: 1, idle_w: 100.0, per_request_w: 50.0, max_w: 1000.0 };
    let s = sim(&rt, Personality::Vllm, Some(power));
    let dir = tempfile::tempdir().unwrap();
    let dcgm = format!("{}/dcgm/metrics", s.base_url());
    let lead_s = 4.0;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let start_at = format!("{:.3}", now + lead_s);
    let o = run(dir.path(), &s.base_url(), &["--gpu-metrics-url", &dcgm, "--start-at", &start_at]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("for --start-at"), "{}", text(&o.stdout));
    let r = result(dir.path());
    let window = r["gpu_energy"]["gpus"][0]["window_s"].as_f64().unwrap();
    let duration = r["duration"].as_f64().unwrap();
    // Before the fix the window held the whole wait (≥ 4 s more than the run).
    assert!(window < duration + lead_s - 1.5, "window {window} s, run {duration} s");
    rt.block_on(s.shutdown());
}

/// A directory holding only an `nvidia-smi` script printing `csv` (or nothing: none on the PATH).
fn path_dir(dir: &Path, csv: Option<&str>) -> std::path::PathBuf {
    let bin_dir = dir.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    if let Some(csv) = csv {
        use std::os::unix::fs::PermissionsExt;
        let script = bin_dir.join("nvidia-smi");
        std::fs::write(&script, format!("#!/bin/sh\nprintf '{csv}'\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin_dir
}

#[test]
fn gpu_metrics_without_nvidia_smi_runs_on_with_a_null_energy_and_says_why() {
    let rt = runtime();
    let s = sim(&rt, Personality::Vllm, None);
    let dir = tempfile::tempdir().unwrap();
    let empty = path_dir(dir.path(), None);
    let o = bin_with_path(dir.path(), &s.base_url(), &empty, "8");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("GPU telemetry: nvidia-smi not found on the PATH"),
        "{}",
        text(&o.stdout)
    );
    let r = result(dir.path());
    assert!(r["gpu_energy"].is_null() && r.get("gpu_energy").is_some(), "{}", r["gpu_energy"]);
    assert!(r["gpu_telemetry"]["note"].as_str().unwrap().contains("not found"), "{}", r["gpu_telemetry"]);
    rt.block_on(s.shutdown());
}

/// `output_len` tokens per request (2 ms each on the simulator): a run long enough for polls
/// inside the load, whose readings are the means' (docs/metrics.md).
fn bin_with_path(dir: &Path, base_url: &str, path: &Path, output_len: &str) -> Output {
    let mut c = bin();
    c.env("PATH", path);
    c.args(["--base-url", base_url, "--backend", "openai-chat", "--model", MODEL, "--tokenizer", "gpt2"])
        .args([
            "--dataset-name",
            "random",
            "--random-input-len",
            "16",
            "--random-output-len",
            output_len,
            "--ignore-eos",
        ])
        .args([
            "--num-prompts",
            "4",
            "--max-concurrency",
            "2",
            "--disable-tqdm",
            "--ready-check-timeout-sec",
            "0",
        ])
        .args(["--scrape-interval", "0.1", "--gpu-metrics"])
        .args(["--save-result", "--result-dir", dir.to_str().unwrap(), "--result-filename", "r.json"])
        .output()
        .expect("run servebench")
}

#[test]
fn nvidia_smi_power_samples_give_the_trapezoid_energy_of_constant_power() {
    let rt = runtime();
    let s = sim(&rt, Personality::Vllm, None);
    let dir = tempfile::tempdir().unwrap();
    let fake = path_dir(dir.path(), Some("0, GPU-fake, 250.00, 40, 1024, 1410\\n"));
    let o = bin_with_path(dir.path(), &s.base_url(), &fake, "200");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = result(dir.path());
    let g = &r["gpu_energy"];
    assert_eq!(g["method"], "power_integral", "{g}");
    let gpu = &g["gpus"][0];
    // Constant 250 W: the trapezoids give 250 W × the window exactly.
    let (e, w) = (gpu["energy_j"].as_f64().unwrap(), gpu["window_s"].as_f64().unwrap());
    assert!(w > 0.0 && (e - 250.0 * w).abs() <= 1e-9 * e, "{e} J over {w} s");
    assert_eq!(gpu["avg_power_w"].as_f64().map(|p| (p * 1e6).round() / 1e6), Some(250.0));
    assert_eq!((gpu["uuid"].as_str(), gpu["mean_util_pct"].as_f64()), (Some("GPU-fake"), Some(40.0)));
    assert_eq!(r["gpu_telemetry"]["source"], "nvidia-smi");
    rt.block_on(s.shutdown());
}

#[test]
fn a_metrics_url_that_is_not_http_is_refused_with_sb150_before_anything_is_sent() {
    for (flag, url) in
        [("--server-metrics-url", "127.0.0.1:9400/metrics"), ("--gpu-metrics-url", "http://u:pw@h/m")]
    {
        let o = bin().args(["--sim", "--num-prompts", "1", flag, url]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(err.contains("error[SB150]") && err.contains(flag), "{err}");
        assert!(!err.contains("pw@"), "{err}");
    }
}
