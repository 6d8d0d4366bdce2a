//! Session-tree replay (`--dataset-name agentic`) end to end through the binary: each trace
//! format against the embedded simulator (`--sim`) and a served engine simulator (`--base-url`,
//! prefix caching on), open and closed loop. Every turn yields one record and the outcome
//! counts add up; the result's `session_trees` block, the console block and the records agree;
//! bad flag values and misplaced flags are coded errors before anything is sent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{bin, data, text, tokenizer};
use serde_json::Value;
use servebench_sim::{EngineConfig, SimConfig};
use std::collections::BTreeMap;
use std::path::Path;

const MODEL: &str = "sim-model";

/// Result JSON (schema-checked), records and stdout of a run with `target` (`--sim …` or
/// `--base-url …`) and `extra`.
fn run(target: &[&str], dir: &Path, extra: &[&str]) -> (Value, Vec<Value>, String) {
    let (result, records) = (dir.join("r.json"), dir.join("r.records.jsonl"));
    let out = bin()
        .args(target)
        .args(["--model", MODEL, "--backend", "openai-chat", "--disable-tqdm", "--dataset-name", "agentic"])
        .arg("--tokenizer")
        .arg(tokenizer())
        .args(["--save-result", "--result-dir", dir.to_str().unwrap(), "--result-filename", "r.json"])
        .arg("--records")
        .arg(&records)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "stdout:\n{}\nstderr:\n{}", text(&out.stdout), text(&out.stderr));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(result).unwrap()).unwrap();
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");
    let recs = std::fs::read_to_string(records)
        .unwrap()
        .lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("index").is_some())
        .collect();
    (json, recs, text(&out.stdout))
}

fn embedded_sim() -> Vec<String> {
    let tok = tokenizer().to_str().unwrap().to_owned();
    ["--sim", "--sim-ttft-ms", "3", "--sim-itl-ms", "1", "--sim-tokenizer", &tok].map(String::from).to_vec()
}

fn u(r: &Value, k: &str) -> u64 {
    r[k].as_u64().unwrap_or_else(|| panic!("{k} missing in {r}"))
}

/// Every turn has one record, the outcome counts add up in the result and in `session_trees`,
/// and the session figures equal what the records give.
fn check_accounting(json: &Value, recs: &[Value]) {
    let t = &json["session_trees"];
    let n = recs.len() as u64;
    let (c, f, x) = (u(json, "completed"), u(json, "failed"), u(json, "cancelled"));
    assert_eq!(c + f + x, n, "{json}");
    assert_eq!(u(&t["turns"], "total"), n);
    assert_eq!(
        (u(&t["turns"], "completed"), u(&t["turns"], "failed"), u(&t["turns"], "cancelled")),
        (c, f, x)
    );
    assert!(recs.iter().all(|r| r["agent_depth"].is_u64() && r["conversation"].is_u64()));
    // Session duration and TTFT by depth from the records (every turn completed here).
    let mut span: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut ttft: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for r in recs {
        let e = span.entry(u(r, "conversation")).or_insert((u64::MAX, 0));
        e.0 = e.0.min(u(r, "dispatched_us"));
        e.1 = e.1.max(u(r, "done_us"));
        ttft.entry(u(r, "agent_depth"))
            .or_default()
            .push((u(r, "first_token_us") - u(r, "dispatched_us")) as f64 / 1000.0);
    }
    assert_eq!(u(t, "sessions"), span.len() as u64);
    assert_eq!(u(t, "completed_sessions"), span.len() as u64);
    let durations: Vec<f64> = span.values().map(|(a, b)| (b - a) as f64 / 1000.0).collect();
    let mean = durations.iter().sum::<f64>() / durations.len() as f64;
    assert!((t["mean_session_duration_ms"].as_f64().unwrap() - mean).abs() < 1e-6, "{t}");
    let depths = t["ttft_by_depth"].as_array().unwrap();
    assert_eq!(depths.len(), ttft.len());
    for d in depths {
        let v = &ttft[&u(d, "depth")];
        assert_eq!(u(d, "turns"), v.len() as u64);
        let m = v.iter().sum::<f64>() / v.len() as f64;
        assert!((d["mean_ttft_ms"].as_f64().unwrap() - m).abs() < 1e-6, "{d}");
    }
    let tool = recs.iter().filter(|r| r["agent_tool"] == Value::Bool(true)).count() as u64;
    assert_eq!(u(t, "tool_turns"), tool);
}

#[test]
fn agentic_each_trace_format_replays_on_the_embedded_simulator_with_every_turn_accounted() {
    let sim = embedded_sim();
    let target: Vec<&str> = sim.iter().map(String::as_str).collect();
    for (file, format, turns, sessions) in [
        ("agentic/fork_join.jsonl", None, 8, 2),
        ("agentic/dag_spawn_fork.jsonl", Some("dag"), 0, 1),
        ("agentic/weka_session.json", Some("weka"), 0, 1),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = data(file);
        let mut extra = vec!["--dataset-path", path.as_str(), "--replay-speedup", "50"];
        extra.extend(["--inter-turn-delay-cap-seconds", "0.005"]);
        if let Some(f) = format {
            extra.extend(["--agentic-format", f]);
        }
        let (json, recs, stdout) = run(&target, dir.path(), &extra);
        eprintln!("{file}: {}", json["session_trees"]);
        if turns > 0 {
            assert_eq!(recs.len(), turns, "{file}");
        }
        assert_eq!(u(&json["session_trees"], "sessions"), sessions, "{file}");
        assert_eq!(u(&json, "completed") as usize, recs.len(), "{file}: {json}");
        check_accounting(&json, &recs);
        // Sub-agents: turns at depth 1 in every fixture.
        assert!(recs.iter().any(|r| r["agent_depth"] == 1), "{file}");
        assert!(stdout.contains("Session trees (agentic replay)"), "{stdout}");
        assert!(stdout.contains("TTFT at depth 1 (ms):"), "{stdout}");
        // Trees are not multi-turn lines: no conversation summary or per-turn-index blocks.
        assert!(!stdout.contains("Multi-Turn Conversations"), "{stdout}");
        assert!(json.get("conversations_completed").is_none(), "{json}");
    }
}

#[test]
fn agentic_sessions_sample_a_seeded_subset() {
    let sim = embedded_sim();
    let target: Vec<&str> = sim.iter().map(String::as_str).collect();
    let path = data("agentic/fork_join.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--dataset-path", path.as_str(), "--agentic-sessions", "1", "--replay-speedup", "50"];
    let (json, recs, _) = run(&target, dir.path(), &extra);
    assert_eq!(u(&json["session_trees"], "sessions"), 1);
    let one: Vec<u64> = recs.iter().map(|r| u(r, "conversation")).collect();
    assert!(one.iter().all(|&c| c == one[0]));
}

async fn engine_sim() -> servebench_sim::SimHandle {
    let tok = servebench_data::load_tokenizer(tokenizer().to_str().unwrap()).unwrap();
    let mut engine = EngineConfig::h100_8b();
    engine.jitter = 0.0;
    engine.block_size = 16;
    let cfg = SimConfig::new(MODEL, tok).with_engine(engine);
    servebench_sim::start(cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agentic_open_and_closed_loop_against_a_served_engine_simulator() {
    let sim = engine_sim().await;
    let url = sim.base_url();
    let path = data("agentic/fork_join.jsonl");
    // Open loop at speed-up 5: session 1 (recorded 500 ms after session 0) is due 100 ms after it.
    let (dir, u2, p2) = (tempfile::tempdir().unwrap(), url.clone(), path.clone());
    let (json, recs, stdout) = tokio::task::spawn_blocking(move || {
        let r = run(&["--base-url", &u2], dir.path(), &["--dataset-path", &p2, "--replay-speedup", "5"]);
        drop(dir);
        r
    })
    .await
    .unwrap();
    println!("{stdout}");
    check_accounting(&json, &recs);
    let first = |recs: &[Value], s: u64| {
        recs.iter().filter(|r| r["conversation"] == s).map(|r| u(r, "intended_us")).min().unwrap()
    };
    assert_eq!(first(&recs, 1) - first(&recs, 0), 100_000);
    // A sub-agent's prompt extends its parent's: the server found the parent's prefix cached.
    let cached: u64 = recs
        .iter()
        .filter(|r| r["agent_depth"] == 1)
        .map(|r| r["cached_prompt_tokens"].as_u64().unwrap_or(0))
        .sum();
    assert!(cached > 0, "no cached prefix for any sub-agent turn");
    // Closed loop, one session at a time: session 1 starts after session 0's last turn ended.
    let dir = tempfile::tempdir().unwrap();
    let (json, recs, stdout) = tokio::task::spawn_blocking(move || {
        let extra = ["--dataset-path", &path, "--agentic-loop", "closed", "--agentic-concurrency", "1"];
        let r = run(&["--base-url", &url], dir.path(), &extra);
        drop(dir);
        r
    })
    .await
    .unwrap();
    println!("{stdout}");
    check_accounting(&json, &recs);
    let of = |s: u64| recs.iter().filter(move |r| r["conversation"] == s);
    let end0 = of(0).map(|r| u(r, "done_us")).max().unwrap();
    let start1 = of(1).map(|r| u(r, "dispatched_us")).min().unwrap();
    assert!(start1 >= end0, "closed loop of 1 overlapped sessions: {start1} < {end0}");
    sim.shutdown().await;
}

#[test]
fn bad_agentic_flags_are_coded_errors_before_anything_is_sent() {
    let path = data("agentic/fork_join.jsonl");
    let case = |extra: &[&str]| {
        let out = bin()
            .args(["--base-url", "http://127.0.0.1:9", "--model", MODEL, "--disable-tqdm", "--tokenizer"])
            .arg(tokenizer())
            .args(extra)
            .output()
            .unwrap();
        (out.status.code(), text(&out.stderr))
    };
    let tree = |more: &[&str]| {
        let mut v =
            vec!["--backend", "openai-chat", "--dataset-name", "agentic", "--dataset-path", path.as_str()];
        v.extend_from_slice(more);
        case(&v)
    };
    for bad in [
        ["--replay-speedup", "0"],
        ["--inter-turn-delay-cap-seconds", "-2"],
        ["--agentic-sessions", "0"],
        ["--agentic-loop", "sideways"],
        ["--agentic-format", "csv"],
        ["--agentic-concurrency", "0"],
    ] {
        let (code, err) = tree(&bad);
        assert!(code == Some(2) && err.contains("SB218"), "{bad:?}: {err}");
    }
    let (code, err) = tree(&["--agentic-loop", "closed"]);
    assert!(code == Some(2) && err.contains("SB218") && err.contains("--agentic-concurrency"), "{err}");
    let (code, err) = case(&["--replay-speedup", "2"]);
    assert!(code == Some(2) && err.contains("SB219"), "{err}");
    let (code, err) = tree(&["--request-rate", "4"]);
    assert!(code == Some(2) && err.contains("SB219") && err.contains("--request-rate"), "{err}");
    let (code, err) = case(&["--backend", "openai", "--dataset-name", "agentic", "--dataset-path", &path]);
    assert!(code == Some(1) && err.contains("SB217"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.jsonl");
    std::fs::write(&junk, "{\"prompt\": \"hi\"}\n").unwrap();
    // The trace is read after the server answered: against the embedded simulator, a dry run.
    let out = bin()
        .args(["--sim", "--dry-run", "--model", MODEL, "--disable-tqdm", "--backend", "openai-chat"])
        .arg("--tokenizer")
        .arg(tokenizer())
        .arg("--sim-tokenizer")
        .arg(tokenizer())
        .args(["--dataset-name", "agentic", "--dataset-path", junk.to_str().unwrap()])
        .output()
        .unwrap();
    let (code, err) = (out.status.code(), text(&out.stderr));
    assert!(code == Some(1) && err.contains("SB215") && err.contains("--agentic-format"), "{err}");
}

#[test]
fn session_tree_html_table_follows_metric_percentiles_in_the_run_and_in_servebench_report() {
    let sim = embedded_sim();
    let target: Vec<&str> = sim.iter().map(String::as_str).collect();
    let path = data("agentic/fork_join.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("run.html");
    let extra = [
        "--dataset-path",
        path.as_str(),
        "--replay-speedup",
        "50",
        "--metric-percentiles",
        "95,99.9",
        "--html-report",
        html.to_str().unwrap(),
    ];
    let (json, _, _) = run(&target, dir.path(), &extra);
    assert_eq!(json["percentiles"], serde_json::json!([95.0, 99.9]), "{}", json["percentiles"]);
    // The same table from the run and from its result file (`servebench report`).
    let again = dir.path().join("report.html");
    let out = bin().arg("report").arg(dir.path().join("r.json")).arg("-o").arg(&again).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    for page in [&html, &again] {
        let h = std::fs::read_to_string(page).unwrap();
        let table = &h[h.find("id=\"session-trees\"").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        for row in ["session duration p95 (ms)", "session duration p99.9 (ms)", "TTFT p95 at depth 1 (ms)"] {
            assert!(table.contains(row), "{}: {row} missing: {table}", page.display());
        }
        assert!(!table.contains(" p99 ("), "{}: a p99 row not asked for: {table}", page.display());
    }
}
