//! Scale-out on loopback: 4 shard processes of one seeded workload against one simulator
//! process, started together with `--start-at`, merged with `servebench merge`, compared with a
//! single-process run of the same workload; and the refusals of mismatched shard sets.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::{bin, text, SimProcess};

fn tokenizer() -> String {
    servebench_testkit::fixtures::smollm2_tokenizer_arg()
}

/// A `servebench sim` process for the shards (fixed timing, the SmolLM2 tokenizer).
fn start_sim() -> SimProcess {
    SimProcess::start(&[
        "--sim-model",
        "shard-test",
        "--sim-ttft-ms",
        "20",
        "--sim-itl-ms",
        "2",
        "--sim-tokenizer",
        &tokenizer(),
    ])
}

/// The flags of the workload every run here uses: 80 requests at 100 req/s (Poisson, seeded).
fn workload_args(url: &str, seed: &str, prompts: &str) -> Vec<String> {
    [
        "--base-url",
        url,
        "--model",
        "shard-test",
        "--tokenizer",
        &tokenizer(),
        "--num-prompts",
        prompts,
        "--random-input-len",
        "32",
        "--random-output-len",
        "12",
        "--request-rate",
        "100",
        "--seed",
        seed,
        "--max-concurrency",
        "64",
        "--disable-tqdm",
        "--ready-check-timeout-sec",
        "30",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run_to(dir: &Path, name: &str, args: &[String], extra: &[String]) -> Command {
    let mut c = bin();
    c.args(args)
        .args(extra)
        .args(["--save-result", "--result-dir"])
        .arg(dir)
        .args(["--result-filename", name]);
    c
}

fn check(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed\nstdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Request records of a records file (shard header and summary lines skipped), by index.
fn records(path: &Path) -> Vec<Value> {
    let mut v: Vec<Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r.get("index").is_some())
        .collect();
    v.sort_by_key(|r| r["index"].as_u64());
    v
}

fn now_unix_s() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Runs `n` shards of the workload at once, with a shared `--start-at` `lead` ahead when given;
/// returns their records files.
fn run_shards(
    dir: &Path,
    url: &str,
    n: u32,
    seeds: &[&str],
    prompts: &str,
    lead: Option<Duration>,
) -> Vec<PathBuf> {
    let start_at = lead.map(|l| format!("{:.3}", now_unix_s() + l.as_secs_f64()));
    let children: Vec<(u32, Child)> = (0..n)
        .map(|i| {
            let args = workload_args(url, seeds[i as usize % seeds.len()], prompts);
            let mut extra: Vec<String> = ["--num-shards", &n.to_string(), "--shard-index", &i.to_string()]
                .iter()
                .map(|s| s.to_string())
                .collect();
            if let Some(t) = &start_at {
                extra.extend(["--start-at".to_string(), t.clone()]);
            }
            let child = run_to(dir, &format!("shard-{i}.json"), &args, &extra)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (i, child)
        })
        .collect();
    for (i, child) in children {
        let out = child.wait_with_output().unwrap();
        check(&out, &format!("shard {i}"));
        assert!(text(&out.stdout).contains(&format!("Shard {i} of {n}: ")), "{}", text(&out.stdout));
        if start_at.is_some() {
            let stdout = text(&out.stdout);
            assert!(
                stdout.contains("for --start-at") && !stdout.contains("--start-at passed"),
                "shard {i} did not wait:\n{stdout}"
            );
        }
    }
    (0..n).map(|i| dir.join(format!("shard-{i}.json.records.jsonl"))).collect()
}

fn merge(paths: &[PathBuf], extra: &[&str]) -> Output {
    bin().arg("merge").args(paths).args(extra).output().unwrap()
}

fn close(a: f64, b: f64, what: &str) {
    // Loose: the machine is shared and noisy. Same order of magnitude, with a small floor.
    assert!(a > 0.0 && b > 0.0, "{what}: {a} vs {b}");
    assert!(a <= 2.0 * b + 5.0 && b <= 2.0 * a + 5.0, "{what}: merged {a} vs single {b}");
}

#[test]
fn four_shards_merged_equal_one_process_of_the_same_workload() {
    let sim = start_sim();
    let dir = tempfile::tempdir().unwrap();
    let t0 = std::time::Instant::now();
    let single =
        run_to(dir.path(), "single.json", &workload_args(&sim.url, "3", "80"), &[]).output().unwrap();
    check(&single, "single-process run");
    // The shards must all be ready before the start instant: preparing (tokenizer, workload,
    // /tokenize check) is slow in a debug build on a loaded 2-core machine, and 4 processes
    // prepare at once, so the lead scales with how long the single run took.
    let lead = Duration::from_secs(15) + t0.elapsed().mul_f64(3.0);
    let shards = run_shards(dir.path(), &sim.url, 4, &["3"], "80", Some(lead));

    // Each shard's records file starts with its header and ends with its summary.
    for (i, p) in shards.iter().enumerate() {
        let text = std::fs::read_to_string(p).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let h = &first["servebench_shard"];
        assert_eq!(h["shard_index"], i as u64);
        assert_eq!(h["num_shards"], 4);
        assert_eq!(h["total_requests"], 80);
        assert_eq!(h["shard_requests"], 20);
        assert!(h["wall_anchor_unix_us"].as_u64().unwrap() > 0);
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["servebench_shard_end"]["records"], 20);
        assert!(records(p).iter().all(|r| r["index"].as_u64().unwrap() % 4 == i as u64));
        // Issue 23.13: each shard describes its own share of the rate and the concurrency cap
        // (it used to show the whole run's 100 req/s and 64 as its own).
        let r = json(&dir.path().join(format!("shard-{i}.json")));
        assert_eq!(
            (r["request_rate"].as_f64(), r["max_concurrency"].as_u64()),
            (Some(25.0), Some(16)),
            "shard {i}"
        );
        // Its num_prompts too: it said 80, the whole run's, beside 20 requests of its own.
        assert_eq!(r["num_prompts"], 20, "shard {i}");
    }

    let merged_dir = dir.path().join("merged");
    let out = merge(
        &shards,
        &[
            "--save-result",
            "--result-dir",
            merged_dir.to_str().unwrap(),
            "--result-filename",
            "merged.json",
            "--percentile-metrics",
            "ttft,tpot,itl,e2el",
        ],
    );
    check(&out, "merge");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("Serving Benchmark Result"), "{stdout}");
    assert!(stdout.contains("Shards: 4 of 4 merged"), "{stdout}");
    assert!(stdout.contains("Clock skew estimate"), "{stdout}");

    let m = json(&merged_dir.join("merged.json"));
    let s = json(&dir.path().join("single.json"));
    for key in ["completed", "failed", "total_input_tokens", "total_output_tokens", "num_prompts"] {
        assert_eq!(m[key], s[key], "{key}: merged {} vs single {}", m[key], s[key]);
    }
    assert_eq!(m["completed"], 80);
    assert_eq!(m["total_output_tokens"], 80 * 12);
    assert_eq!(m["shards"].as_array().unwrap().len(), 4);
    assert_eq!(m["num_shards"], "4");
    // Issue 23.13: the keys a single run has, over the merged records as one run.
    assert_eq!(m["interrupted"], false);
    let steady = m.as_object().and_then(|o| o.get("steady_state")).expect("steady_state key");
    assert!(
        steady["window"]["mode"] == "open_loop" || m["steady_state_reason"].is_string(),
        "{steady} / {}",
        m["steady_state_reason"]
    );
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&m).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "merged result violates docs/result.schema.json: {errors:?}");
    for key in ["mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms", "mean_itl_ms", "median_e2el_ms", "duration"]
    {
        close(m[key].as_f64().unwrap_or(0.0), s[key].as_f64().unwrap_or(0.0), key);
    }

    // The union is the single-process workload: same indices, same prompts, same intended
    // offsets (up to the µs the shards' anchors differ by on one host).
    let mr = records(&merged_dir.join("merged.json.records.jsonl"));
    let sr = records(&dir.path().join("single.json.records.jsonl"));
    assert_eq!(mr.len(), 80);
    assert_eq!(sr.len(), 80);
    for (a, b) in mr.iter().zip(&sr) {
        assert_eq!(a["index"], b["index"]);
        assert_eq!(a["prompt_tokens"], b["prompt_tokens"]);
        assert_eq!(a["expected_output_tokens"], b["expected_output_tokens"]);
        let (ia, ib) = (a["intended_us"].as_i64().unwrap(), b["intended_us"].as_i64().unwrap());
        assert!((ia - ib).abs() <= 2_000, "request {}: intended {ia} vs {ib}", a["index"]);
    }

    // `servebench report` reads sharded and merged records files (header lines included).
    let html = dir.path().join("report.html");
    let out = bin()
        .arg("report")
        .arg(&shards[0])
        .arg(merged_dir.join("merged.json.records.jsonl"))
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    check(&out, "report");
    assert!(html.exists());
    drop(sim);
    std::thread::sleep(Duration::from_millis(10));
}

#[test]
fn shards_of_different_seeds_duplicates_and_missing_shards_are_refused() {
    let sim = start_sim();
    let dir = tempfile::tempdir().unwrap();
    // Shard 0 with seed 1, shard 1 with seed 2: two different workloads.
    let shards = run_shards(dir.path(), &sim.url, 2, &["1", "2"], "8", None);
    let out = merge(&shards, &[]);
    assert_eq!(out.status.code(), Some(1), "stdout:\n{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("error[SB701]"), "{err}");
    assert!(err.contains("workload fingerprint"), "{err}");

    let dup = merge(&[shards[0].clone(), shards[0].clone()], &[]);
    assert_eq!(dup.status.code(), Some(1));
    assert!(text(&dup.stderr).contains("error[SB702]"), "{}", text(&dup.stderr));

    let missing = merge(&shards[..1], &[]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("missing shard(s) 1"), "{}", text(&missing.stderr));
    let partial = merge(&shards[..1], &["--allow-missing-shards"]);
    check(&partial, "merge --allow-missing-shards");
    assert!(text(&partial.stderr).contains("merged 1 of 2 shards"), "{}", text(&partial.stderr));
    // The merged result may not replace a shard's result or records (SB120): it overwrote them.
    let before = std::fs::read(&shards[0]).unwrap();
    let d = dir.path().to_str().unwrap();
    let flags =
        ["--allow-missing-shards", "--save-result", "--result-dir", d, "--result-filename", "shard-0.json"];
    let over = merge(&shards[..1], &flags);
    assert_eq!(over.status.code(), Some(2), "{}", text(&over.stderr));
    assert!(text(&over.stderr).contains("error[SB120]"), "{}", text(&over.stderr));
    assert_eq!(std::fs::read(&shards[0]).unwrap(), before, "shard 0's records are untouched");

    // A records file of a run without --num-shards has no shard header.
    let plain = run_to(dir.path(), "plain.json", &workload_args(&sim.url, "1", "4"), &[]).output().unwrap();
    check(&plain, "plain run");
    let out = merge(&[dir.path().join("plain.json.records.jsonl")], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no shard header"), "{}", text(&out.stderr));

    let explain = bin().args(["explain", "SB701"]).output().unwrap();
    check(&explain, "explain");
    assert!(text(&explain.stdout).contains("fingerprint"));
}

/// A trace replayed on its own timestamps is a trace replay once merged too: the shard header
/// carries the time scale (the merged load-mode line said "burst, all 10 at t=0").
#[test]
fn merged_self_timed_trace_says_trace_replay_not_burst() {
    let sim = start_sim();
    let dir = tempfile::tempdir().unwrap();
    let trace = crate::support::root().join("crates/servebench-runner/tests/data/mooncake_small.jsonl");
    let args: Vec<String> = [
        "--base-url",
        &sim.url,
        "--model",
        "shard-test",
        "--tokenizer",
        &tokenizer(),
        "--dataset-name",
        "timed_trace",
        "--dataset-path",
        trace.to_str().unwrap(),
        "--timed-trace-sec-multiplier",
        "0.1",
        "--disable-tqdm",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let paths: Vec<PathBuf> = (0..2)
        .map(|i| {
            let extra = ["--num-shards", "2", "--shard-index", &i.to_string()].map(String::from);
            let out = run_to(dir.path(), &format!("t{i}.json"), &args, &extra).output().unwrap();
            check(&out, &format!("trace shard {i}"));
            dir.path().join(format!("t{i}.json.records.jsonl"))
        })
        .collect();
    let out = merge(&paths, &[]);
    check(&out, "merge");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("trace replay at the trace's timestamps × 0.1"), "{stdout}");
    assert!(!stdout.contains("burst, all"), "{stdout}");
}

/// Pins the shard left with nothing by a dataset file shorter than the shards (10 trace rows,
/// 12 shards): every shard is refused alike (SB101, exit 2, naming how many requests there
/// are), where the 11th and 12th ran nothing and exited 0. `--num-prompts` cannot catch it:
/// only the loaded file says how many requests there are.
#[test]
fn shards_outnumbering_a_datasets_rows_are_refused_every_one_alike() {
    let sim = start_sim();
    let dir = tempfile::tempdir().unwrap();
    let trace = crate::support::root().join("crates/servebench-runner/tests/data/mooncake_small.jsonl");
    for index in ["0", "11"] {
        let out = bin()
            .args(["--base-url", &sim.url, "--model", "shard-test", "--tokenizer", &tokenizer()])
            .args(["--dataset-name", "timed_trace", "--dataset-path", trace.to_str().unwrap()])
            .args(["--num-shards", "12", "--shard-index", index, "--disable-tqdm", "--save-result"])
            .arg("--result-dir")
            .arg(dir.path())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "shard {index}: {stderr}");
        assert!(stderr.contains("SB101"), "{stderr}");
        assert!(stderr.contains("12 shards share 10 requests"), "{stderr}");
        assert!(stderr.contains("shards 10 to 11 would send none"), "{stderr}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no result written");
}

/// Pins the merged result having the sections a run's result has: per-stage metrics (`stages`,
/// from the stages the shard headers record) and `http_phases`. Merge dropped both.
#[test]
fn merged_staged_run_reports_its_stages_and_http_phases() {
    let sim = start_sim();
    let dir = tempfile::tempdir().unwrap();
    let mut args = workload_args(&sim.url, "3", "400");
    let at = args.iter().position(|a| a == "--request-rate").unwrap();
    args.drain(at..at + 2);
    args.extend(["--stages", "40:0.5,80:0.5"].map(String::from));
    let mut shards = Vec::new();
    for i in 0..2 {
        let extra = ["--num-shards", "2", "--shard-index", &i.to_string()].map(String::from);
        let out = run_to(dir.path(), &format!("st-{i}.json"), &args, &extra).output().unwrap();
        check(&out, &format!("shard {i}"));
        // Each shard describes its own share of each stage's rate, as of its request_rate
        // (it named the whole run's 40 → 80).
        let stdout = text(&out.stdout);
        assert!(stdout.contains("open loop in 2 stages, 20 → 40 req/s"), "shard {i}:\n{stdout}");
        let own = json(&dir.path().join(format!("st-{i}.json")));
        let own_rates: Vec<f64> =
            own["stages"].as_array().unwrap().iter().map(|s| s["request_rate"].as_f64().unwrap()).collect();
        assert_eq!(own_rates, vec![20.0, 40.0], "shard {i}");
        shards.push(dir.path().join(format!("st-{i}.json.records.jsonl")));
    }
    let d = dir.path().to_str().unwrap();
    let out = merge(&shards, &["--save-result", "--result-dir", d, "--result-filename", "merged.json"]);
    check(&out, "merge");
    let merged = json(&dir.path().join("merged.json"));
    let stages = merged["stages"].as_array().unwrap_or_else(|| panic!("no stages: {merged}"));
    let rates: Vec<f64> = stages.iter().map(|s| s["request_rate"].as_f64().unwrap()).collect();
    assert_eq!(rates, vec![40.0, 80.0]);
    let per_stage: u64 = stages.iter().map(|s| s["completed"].as_u64().unwrap()).sum();
    assert_eq!(Some(per_stage), merged["completed"].as_u64(), "{merged}");
    assert!(merged["http_phases"].is_object(), "{}", merged["http_phases"]);
    assert!(
        merged.get("ttfts").is_none() && merged["latencies"].is_array(),
        "vLLM's arrays without --save-detailed"
    );
    // Pins `merge --save-detailed`: every per-request array, one entry per merged record (a
    // merge wrote `latencies` and `queue_times` only, whatever the shards had saved).
    let out = merge(
        &shards,
        &["--save-result", "--save-detailed", "--result-dir", d, "--result-filename", "m2.json"],
    );
    check(&out, "merge --save-detailed");
    let detailed = json(&dir.path().join("m2.json"));
    let n = records(&dir.path().join("m2.json.records.jsonl"))
        .iter()
        .filter(|r| r.get("index").is_some())
        .count();
    for key in ["ttfts", "itls", "errors", "input_lens", "output_lens", "start_times", "latencies"] {
        assert_eq!(detailed[key].as_array().map(Vec::len), Some(n), "{key}");
    }
}

/// Pins shards run with different load flags merging into one result: cancellation by design
/// (`--request-cancellation-rate/--request-cancellation-delay`) or `--lora-modules` on one shard
/// only was accepted, the merged result describing a load no shard ran. The workload fingerprint
/// now covers the load (caps, adapters, cancellation, early stop, body fields): SB701.
#[test]
fn shards_with_different_load_flags_are_refused_by_merge() {
    let tok = tokenizer();
    let sim = SimProcess::start(&[
        "--sim-model",
        "shard-test",
        "--sim-lora-modules",
        "a",
        "--sim-ttft-ms",
        "2",
        "--sim-itl-ms",
        "1",
        "--sim-tokenizer",
        &tok,
    ]);
    let dir = tempfile::tempdir().unwrap();
    let args = workload_args(&sim.url, "1", "8");
    let shard = |name: &str, i: u32, extra: &[&str]| {
        let mut e: Vec<String> =
            ["--num-shards", "2", "--shard-index", &i.to_string()].map(String::from).to_vec();
        e.extend(extra.iter().map(|s| s.to_string()));
        let out = run_to(dir.path(), name, &args, &e).output().unwrap();
        assert!(!text(&out.stderr).contains("error["), "{name}: {}", text(&out.stderr));
        dir.path().join(format!("{name}.records.jsonl"))
    };
    let plain = shard("p0.json", 0, &[]);
    let cancel = ["--request-cancellation-rate", "50", "--request-cancellation-delay", "0.001"];
    for (name, extra) in [("c1.json", &cancel[..]), ("l1.json", &["--lora-modules", "a"])] {
        let other = shard(name, 1, extra);
        let out = merge(&[plain.clone(), other], &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("error[SB701]") && err.contains("workload fingerprint"), "{err}");
    }
    // The same load flags on both shards merge.
    let both = [shard("c0.json", 0, &cancel), dir.path().join("c1.json.records.jsonl")];
    check(&merge(&both, &[]), "merge of shards with the same cancellation");
}

/// Pins the merged result reporting what the shards' run asked for: `--metadata`,
/// `--metric-percentiles`, `--percentile-metrics` and `--goodput` were lost (only `p99_*` of
/// ttft/tpot/itl, `request_goodput: null`, no metadata key), and `merge` had no way to restore
/// the metadata. They are recorded in each shard header; `merge`'s own flags still override.
#[test]
fn a_merged_result_keeps_the_runs_statistics_and_metadata() {
    let sim = start_sim();
    let dir = tempfile::tempdir().unwrap();
    let stats: Vec<String> =
        ["--metadata", "tp=1", "--metric-percentiles", "50,90", "--goodput", "e2el:100000"]
            .map(String::from)
            .into();
    let shards: Vec<PathBuf> = (0..2u32)
        .map(|i| {
            let mut extra: Vec<String> = ["--num-shards", "2", "--shard-index", &i.to_string()]
                .iter()
                .map(|s| s.to_string())
                .collect();
            extra.extend(stats.iter().cloned());
            let out = run_to(dir.path(), &format!("s-{i}.json"), &workload_args(&sim.url, "3", "8"), &extra)
                .output()
                .unwrap();
            check(&out, "shard");
            dir.path().join(format!("s-{i}.json.records.jsonl"))
        })
        .collect();
    let merged = dir.path().join("m");
    let out = merge(
        &shards,
        &["--save-result", "--result-dir", merged.to_str().unwrap(), "--result-filename", "m.json"],
    );
    check(&out, "merge");
    let m = json(&merged.join("m.json"));
    assert_eq!(m["tp"], "1", "the run's metadata");
    for key in ["p50_ttft_ms", "p90_ttft_ms", "p50_e2el_ms", "p90_itl_ms"] {
        assert!(m[key].is_number(), "{key}: {}", m[key]);
    }
    assert!(m.get("p99_ttft_ms").is_none(), "only the run's percentiles");
    assert!(m["request_goodput"].as_f64().is_some_and(|g| g > 0.0), "{}", m["request_goodput"]);
    // merge's own flags override what the shards recorded.
    let out = merge(
        &shards,
        &[
            "--save-result",
            "--result-dir",
            merged.to_str().unwrap(),
            "--result-filename",
            "m2.json",
            "--metric-percentiles",
            "99",
        ],
    );
    check(&out, "merge with flags");
    let m2 = json(&merged.join("m2.json"));
    assert!(m2["p99_ttft_ms"].is_number() && m2.get("p50_ttft_ms").is_none(), "{m2}");
}
