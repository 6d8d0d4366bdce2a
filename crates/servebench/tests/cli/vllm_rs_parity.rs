//! Pins servebench against vLLM's Rust client, `vllm-rs bench serve` 0.34 (in the vLLM wheel,
//! run by `VLLM_USE_RUST_BENCH=1 vllm bench serve`): every flag, backend and dataset name of
//! `tests/data/vllm_rs_serve.tsv` is accepted; a vllm-rs command line runs unchanged against the
//! simulator, spelled `servebench bench serve …` and `servebench …`; `--compare A B` compares.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use clap::CommandFactory;
use servebench::cli::{find_unsupported, normalize_underscores, Cli};
use std::collections::BTreeSet;

use crate::support::{bin, tokenizer};

/// The embedded simulator (fixed timing: TTFT 2 ms, ITL `itl_ms`) and the test tokenizer.
fn sim(itl_ms: &str) -> Vec<String> {
    let tok = tokenizer().to_str().unwrap().to_owned();
    ["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", itl_ms, "--disable-tqdm", "--tokenizer", &tok]
        .iter()
        .map(|s| s.to_string())
        .chain(["--sim-tokenizer".to_owned(), tok.clone()])
        .collect()
}

/// `(name, third column)` of the rows of `kind`.
fn rows(kind: &str) -> Vec<(String, String)> {
    include_str!("../data/vllm_rs_serve.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut f = l.splitn(3, '\t');
            (f.next()? == kind).then(|| (f.next().unwrap().to_owned(), f.next().unwrap_or("").to_owned()))
        })
        .collect()
}

/// Our long flags and their aliases.
fn our_flags() -> BTreeSet<String> {
    Cli::command()
        .get_arguments()
        .flat_map(|a| {
            let aliases = a.get_all_aliases().unwrap_or_default();
            a.get_long().into_iter().chain(aliases).map(|l| format!("--{l}")).collect::<Vec<_>>()
        })
        .collect()
}

/// The flags handled before clap (`cli/front.rs`).
const REWRITTEN: &[&str] = &["--compare"];

#[test]
fn every_vllm_rs_flag_is_accepted() {
    let ours = our_flags();
    let flags = rows("flag");
    assert!(flags.len() > 100, "the list is read");
    let missing: Vec<&String> = flags
        .iter()
        .map(|(f, _)| f)
        .filter(|f| !ours.contains(*f) && !REWRITTEN.contains(&f.as_str()))
        .collect();
    assert!(missing.is_empty(), "vllm-rs flags servebench does not accept: {missing:?}");
    for (f, _) in &flags {
        assert_eq!(find_unsupported(std::slice::from_ref(f)), None, "{f} is refused with SB102");
    }
}

#[test]
fn every_vllm_rs_flag_given_its_vllm_rs_default_parses() {
    let mut failures = Vec::new();
    for (flag, default) in rows("flag") {
        if REWRITTEN.contains(&flag.as_str()) {
            continue;
        }
        let argv: Vec<String> = match default.as_str() {
            "None" => continue,
            "False" => vec![flag.clone()],
            d => vec![flag.clone(), d.to_owned()],
        };
        let full = std::iter::once("servebench".to_owned()).chain(argv.iter().cloned());
        if let Err(e) = <Cli as clap::Parser>::try_parse_from(normalize_underscores(full)) {
            failures.push(format!("{argv:?}: {e}"));
        }
    }
    assert!(failures.is_empty(), "vllm-rs defaults refused:\n{}", failures.join("\n"));
}

#[test]
fn every_vllm_rs_backend_and_dataset_name_parses() {
    for (kind, flag) in [("backend", "--backend"), ("dataset", "--dataset-name")] {
        for (name, _) in rows(kind) {
            let argv = ["servebench", flag, name.as_str()];
            assert!(<Cli as clap::Parser>::try_parse_from(argv).is_ok(), "{flag} {name} is refused");
        }
    }
}

/// A `vllm-rs bench serve` command line, as a script runs it, against the embedded simulator:
/// the same run as `servebench bench serve …` and as `servebench …`.
#[test]
fn a_vllm_rs_command_line_runs_unchanged_as_bench_serve_and_bare() {
    let dir = tempfile::tempdir().unwrap();
    let vllm_rs = [
        "--backend",
        "openai-chat",
        "--model",
        "m",
        "--dataset-name",
        "random",
        "--random-input-len",
        "32",
        "--random-output-len",
        "8",
        "--num-prompts",
        "6",
        "--max-concurrency",
        "2",
        "--request-rate",
        "inf",
        "--seed",
        "0",
        "--ignore-eos",
        "--save-result",
        "--result-dir",
    ];
    for (name, prefix) in [("bench_serve", &["bench", "serve"][..]), ("bare", &[][..])] {
        let out = bin()
            .args(prefix)
            .args(vllm_rs)
            .arg(dir.path())
            .args(["--result-filename", &format!("{name}.json")])
            .args(sim("1"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(format!("{name}.json"))).unwrap()).unwrap();
        assert_eq!(v["completed"], 6, "{name}");
        assert_eq!(v["total_output_tokens"], 48, "{name}");
    }
}

/// `--compare A B` (vllm-rs) compares two result files as `servebench compare A B` does, runs
/// no benchmark, and names the flags it leaves unused (never their values).
#[test]
fn compare_a_b_prints_the_comparison_of_servebench_compare() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, itl) in [("a", "5"), ("b", "10")] {
        let path = dir.path().join(format!("{name}.json"));
        let out = bin()
            .args([
                "--model",
                "m",
                "--num-prompts",
                "4",
                "--random-input-len",
                "16",
                "--random-output-len",
                "4",
            ])
            .args(["--save-result", "--result-filename"])
            .arg(&path)
            .args(sim(itl))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        files.push(path);
    }
    let via_flag = bin()
        .args(["bench", "serve", "--model", "m", "--header", "Authorization=secret-key", "--compare"])
        .args(&files)
        .output()
        .unwrap();
    let via_subcommand = bin().arg("compare").args(&files).output().unwrap();
    assert!(via_flag.status.success(), "{}", String::from_utf8_lossy(&via_flag.stderr));
    assert_eq!(via_flag.stdout, via_subcommand.stdout);
    assert!(!via_flag.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&via_flag.stderr);
    assert!(stderr.contains("not used: --model --header"), "{stderr}");
    assert!(!stderr.contains("secret-key"));
    let one = bin().args(["--compare"]).arg(&files[0]).output().unwrap();
    assert_eq!(one.status.code(), Some(2), "SB101: --compare takes two files");
    assert!(String::from_utf8_lossy(&one.stderr).contains("SB101"));
}
