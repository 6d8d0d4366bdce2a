//! Every dataset through the binary: `--dry-run` prints its statistics and sends nothing, and
//! dataset flag and file errors are coded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use crate::support::{bin, data, text, tokenizer};

/// A dry run against the embedded simulator (nothing is sent: no ready check, no requests).
fn dry_run(extra: &[&str]) -> Output {
    let tok = tokenizer();
    bin()
        .args(["--sim", "--dry-run", "--disable-tqdm", "--num-prompts", "12", "--tokenizer"])
        .arg(&tok)
        .args(["--sim-tokenizer"])
        .arg(&tok)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn dry_run_prints_statistics_for_every_dataset() {
    let sharegpt = data("sharegpt_small.json");
    let custom = data("custom_small.jsonl");
    let hf = data("hf_small.jsonl");
    let speed = data("speed_bench_small.jsonl");
    let cases: Vec<Vec<&str>> = vec![
        vec!["--dataset-name", "random", "--random-input-len", "32", "--random-output-len", "8"],
        vec!["--dataset-name", "sharegpt", "--dataset-path", &sharegpt],
        vec!["--dataset-name", "sonnet"],
        vec!["--dataset-name", "custom", "--dataset-path", &custom, "--custom-output-len", "-1"],
        vec![
            "--dataset-name",
            "prefix_repetition",
            "--prefix-repetition-prefix-len",
            "16",
            "--prefix-repetition-suffix-len",
            "8",
            "--prefix-repetition-num-prefixes",
            "3",
        ],
        vec![
            "--dataset-name",
            "random-mm",
            "--backend",
            "openai-chat",
            "--random-input-len",
            "16",
            "--random-mm-bucket-config",
            "{(8, 8, 1): 1.0}",
        ],
        vec![
            "--dataset-name",
            "random-rerank",
            "--backend",
            "vllm-rerank",
            "--random-input-len",
            "24",
            "--random-batch-size",
            "2",
        ],
        vec!["--dataset-name", "speed-bench", "--dataset-path", &speed],
        vec!["--dataset-name", "hf", "--dataset-path", &hf, "--hf-output-len", "20"],
    ];
    for args in cases {
        let out = dry_run(&args);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{args:?}: {}\n{stdout}", text(&out.stderr));
        assert!(stdout.contains("Dry run"), "{args:?}: {stdout}");
        assert!(stdout.contains("Requests:") && stdout.contains("12"), "{args:?}: {stdout}");
        for col in ["min", "mean", "p50", "p99", "max", "Prompt", "Expected output"] {
            assert!(stdout.contains(col), "{args:?}: no {col} in {stdout}");
        }
    }
    let out = dry_run(&[
        "--dataset-name",
        "hf",
        "--dataset-path",
        &data("hf_small.jsonl"),
        "--hf-output-len",
        "20",
    ]);
    let stdout = text(&out.stdout);
    let row = stdout.lines().find(|l| l.starts_with("Expected output")).unwrap();
    assert_eq!(row.split_whitespace().filter(|w| *w == "20" || *w == "20.0").count(), 5, "{row}");
}

#[test]
fn dataset_flag_errors_are_coded() {
    let out = dry_run(&["--dataset-name", "custom"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("SB101") && stderr.contains("--dataset-path"), "{stderr}");

    let out = dry_run(&["--dataset-name", "random-mm", "--backend", "openai"]);
    assert!(text(&out.stderr).contains("SB110"), "{}", text(&out.stderr));

    let out = dry_run(&[
        "--dataset-name",
        "random-mm",
        "--backend",
        "openai-chat",
        "--random-mm-bucket-config",
        "{(64, 64, 1): 0.5, (64, 64, 8): 0.5}",
    ]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("SB102") && stderr.contains("video"), "{stderr}");

    let out = dry_run(&[
        "--dataset-name",
        "random-mm",
        "--backend",
        "openai-chat",
        "--random-mm-bucket-config",
        "{(64, 64): 1}",
    ]);
    assert!(text(&out.stderr).contains("--random-mm-bucket-config"), "{}", text(&out.stderr));

    // An image too large to generate is refused before anything is built (a 100,000-pixel
    // side was generated in memory until the kernel killed the process).
    let out = dry_run(&[
        "--dataset-name",
        "random-mm",
        "--backend",
        "openai-chat",
        "--random-mm-bucket-config",
        "{(100000, 100000, 1): 1}",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("SB101") && stderr.contains("larger than 8192 pixels a side"), "{stderr}");

    let out = dry_run(&["--dataset-name", "nope"]);
    assert!(text(&out.stderr).contains("SB101") && text(&out.stderr).contains("sharegpt"));
}

#[test]
fn bad_dataset_file_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("broken.jsonl");
    std::fs::write(&p, "{\"prompt\": \"fine prompt here\"}\n{\"prompt\": \"trunc").unwrap();
    let out = dry_run(&["--dataset-name", "custom", "--dataset-path", p.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("SB204") && stderr.contains("broken.jsonl") && stderr.contains("line 2"),
        "{stderr}"
    );
}

#[test]
fn sharegpt_without_path_offline_says_to_pass_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .env("HF_HUB_CACHE", dir.path())
        .args(["--sim", "--dry-run", "--disable-tqdm", "--tokenizer"])
        .arg(tokenizer())
        .args(["--dataset-name", "sharegpt"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.contains("SB205") && stderr.contains("--dataset-path"), "{stderr}");
}

/// A dataset id vLLM reads with its own parser reaches that parser (every parser of vLLM 0.33
/// is built): an image parser with a text backend is SB110 naming the parser; a local file
/// named by --hf-name is read with the parser's columns, so a file of other columns is SB204
/// naming the parser.
#[test]
fn hf_dataset_ids_reach_vllms_parsers() {
    let hub = dry_run(&["--dataset-name", "hf", "--dataset-path", "lmarena-ai/VisionArena-Chat"]);
    let stderr = text(&hub.stderr);
    assert!(!hub.status.success());
    assert!(stderr.contains("SB110") && stderr.contains("VisionArenaDataset"), "{stderr}");
    let local = data("hf_small.jsonl");
    let named = dry_run(&[
        "--dataset-name",
        "hf",
        "--dataset-path",
        &local,
        "--hf-name",
        "yale-nlp/MMVU",
        "--backend",
        "openai-chat",
    ]);
    let stderr = text(&named.stderr);
    assert!(stderr.contains("SB204") && stderr.contains("MMVUDataset"), "{stderr}");
}

/// --hf-name picks vLLM's AIMO parser for a local file: the dry run builds the workload.
#[test]
fn hf_name_selects_the_aimo_parser_for_a_local_file() {
    let file = servebench_testkit::fixtures::repo_path(
        "fixtures/datasets/hf/AI-MO/aimo-validation-aime/aimo_validation_aime.jsonl",
    );
    let out = dry_run(&[
        "--dataset-name",
        "hf",
        "--dataset-path",
        file.to_str().unwrap(),
        "--hf-name",
        "AI-MO/aimo-validation-aime",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// MMVU's video questions run end to end against the simulator: each request carries its
/// `video_url` part (the simulator counts a fixed clip cost, fetching nothing) and completes.
#[test]
fn mmvu_video_requests_complete_against_the_simulator() {
    let file = servebench_testkit::fixtures::repo_path("fixtures/datasets/hf/yale-nlp/MMVU/validation.json");
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["--sim", "--sim-ttft-ms", "1", "--sim-itl-ms", "1", "--backend", "openai-chat"])
        .args(["--dataset-name", "hf", "--hf-name", "yale-nlp/MMVU", "--dataset-path"])
        .arg(&file)
        .args(["--num-prompts", "2", "--hf-output-len", "4", "--disable-tqdm", "--save-result"])
        .arg("--result-dir")
        .arg(dir.path())
        .args(["--result-filename", "r.json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!((doc["completed"].as_u64(), doc["failed"].as_u64()), (Some(2), Some(0)), "{doc}");
}

/// Pins one error for a dataset path that cannot be read, whatever the dataset: a directory
/// given to `timed_trace` was SB501 without a fix while every other file dataset says SB204 and
/// names --dataset-path.
#[test]
fn a_directory_as_dataset_path_is_sb204_naming_the_flag_for_every_file_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    for name in ["custom", "sharegpt", "timed_trace"] {
        let out = dry_run(&["--dataset-name", name, "--dataset-path", path]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains("SB204") && stderr.contains("fix: check the --dataset-path"),
            "{name}: {stderr}"
        );
    }
}

/// Pins oversampling said on the console: a 2-line custom file with `--num-prompts 5` sent 3
/// repeats of its prompts (as vLLM does) under "Generated 5 prompts" alone, and a prefix cache
/// then served them. The note says how many are repeats; `--no-oversample` sends each once.
#[test]
fn oversampled_prompts_are_said_on_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.jsonl");
    std::fs::write(&path, "{\"prompt\": \"hello there\"}\n{\"prompt\": \"second one\"}\n").unwrap();
    let path = path.to_str().unwrap();
    let base =
        ["--dataset-name", "custom", "--dataset-path", path, "--skip-chat-template", "--num-prompts", "5"];
    let out = dry_run(&base);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // A note: on stderr, with the other notes and warnings.
    assert!(
        stderr.contains("note: the dataset gave 2 usable prompts; 3 more are repeats drawn again"),
        "{stderr}"
    );
    let out = dry_run(&[&base[..], &["--no-oversample"]].concat());
    assert!(!text(&out.stderr).contains("drawn again"), "{}", text(&out.stderr));
}
