//! Inputs at the edge (an eighth adversarial pass): flags, config files and datasets that were
//! accepted and then sent something other than what was asked, each now exact or a coded
//! error naming the fix.

use std::process::Output;

use crate::support::{bin, data, text};

/// A committed synthetic tokenizer (`fixtures/tokenizers/NAME/tokenizer.json`), as an argument.
fn synthetic(name: &str) -> String {
    let path = servebench_testkit::fixtures::fixture(&format!("tokenizers/{name}/tokenizer.json"));
    path.to_str().expect("UTF-8 path").to_owned()
}

/// Asserts exit 2 with SB101 on a line naming `flag` (and not `not_flag`).
fn refused(out: &Output, flag: &str, not_flag: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = err.lines().find(|l| l.starts_with("error[")).unwrap_or_default();
    assert!(line.starts_with("error[SB101]") && line.contains(flag), "{err}");
    assert!(!line.contains(not_flag), "{err}");
}

/// Pins prefix_repetition prompts of exactly the asked length on the server. With a
/// SentencePiece-style (Metaspace) tokenizer the prefix's last word and the suffix's first fused
/// into one token: 10 + 10 tokens asked, the simulator (same tokenizer) counted 20 with its BOS
/// instead of 21, and the client's `prompt_tokens` agreed with it.
#[test]
fn prefix_repetition_prompts_are_exact_on_the_server_with_a_metaspace_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    let tok = synthetic("synthetic-metaspace");
    let records = dir.path().join("r.jsonl");
    let out = bin()
        .current_dir(dir.path())
        .args(["--sim", "--sim-ttft-ms", "1", "--sim-itl-ms", "1", "--disable-tqdm", "--model", "m"])
        .args(["--tokenizer", &tok, "--sim-tokenizer", &tok, "--dataset-name", "prefix_repetition"])
        .args(["--prefix-repetition-prefix-len", "10", "--prefix-repetition-suffix-len", "10"])
        .args(["--prefix-repetition-num-prefixes", "2", "--prefix-repetition-output-len", "2"])
        .args(["--num-prompts", "4", "--records"])
        .arg(&records)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = std::fs::read_to_string(&records).unwrap();
    let records: Vec<serde_json::Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 4);
    for r in &records {
        assert_eq!(
            (r["prompt_tokens"].as_u64(), r["server_prompt_tokens"].as_u64()),
            (Some(21), Some(21)),
            "{r}"
        );
    }
}

/// Pins `--sharegpt-output-len 0` and `--hf-output-len 0` as SB101: they were accepted and every
/// request then failed (`max_tokens` 0), where every other output-length flag refuses 0. And
/// `--output-len 0` with sharegpt named `--random-output-len`, a flag the user did not give.
#[test]
fn output_lengths_of_zero_are_refused_naming_the_flag_given() {
    let dir = tempfile::tempdir().unwrap();
    let tok = crate::support::tokenizer();
    let run = |extra: &[&str]| {
        bin()
            .current_dir(dir.path())
            .args([
                "--sim",
                "--sim-ttft-ms",
                "1",
                "--sim-itl-ms",
                "1",
                "--disable-tqdm",
                "--num-prompts",
                "2",
            ])
            .arg("--tokenizer")
            .arg(&tok)
            .arg("--sim-tokenizer")
            .arg(&tok)
            .args(extra)
            .output()
            .unwrap()
    };
    let sharegpt = data("sharegpt_small.json");
    let hf = data("hf_small.jsonl");
    let sg = ["--dataset-name", "sharegpt", "--dataset-path", sharegpt.as_str()];
    let hf = ["--dataset-name", "hf", "--dataset-path", hf.as_str()];
    refused(&run(&[&sg[..], &["--sharegpt-output-len", "0"]].concat()), "--sharegpt-output-len", "--random");
    refused(&run(&[&hf[..], &["--hf-output-len", "0"]].concat()), "--hf-output-len", "--random");
    refused(&run(&[&sg[..], &["--output-len", "0"]].concat()), "--output-len", "--random-output-len");
    refused(&run(&["--input-len", "0"]), "--input-len", "--random-input-len");
    refused(&run(&["--random-output-len", "0"]), "--random-output-len", "--sharegpt");
    // 1 is a length.
    let out = run(&[&sg[..], &["--sharegpt-output-len", "1"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Pins several `--config` files merging in order: `--config a.toml --config b.toml` used to
/// ignore a.toml silently (`config show` listed only b's keys). Now a's keys are kept and b's
/// win where both set one.
#[test]
fn repeated_config_files_merge_in_order_the_later_winning() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::write(&a, "num-prompts = 7\nseed = 11\n").unwrap();
    std::fs::write(&b, "seed = 22\nmax-concurrency = 3\n").unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["config", "show", "--config", a.to_str().unwrap(), "--config", b.to_str().unwrap()])
        .output()
        .unwrap();
    let show = text(&out.stdout);
    assert!(out.status.success(), "{show}\n{}", text(&out.stderr));
    assert!(show.contains(&format!("num-prompts = 7  # {}:1", a.display())), "{show}");
    assert!(show.contains(&format!("seed = 22  # {}:1", b.display())), "{show}");
    assert!(show.contains(&format!("max-concurrency = 3  # {}:2", b.display())), "{show}");
    assert!(!show.contains("seed = 11"), "{show}");
}
