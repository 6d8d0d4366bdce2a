//! vLLM 0.33's request and report flags through the binary against the embedded simulator:
//! `--plot-timeline`, `--probe-request-rate`, the `spec_bench` dataset, and SB113 before any
//! traffic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use crate::support::{bin, fast_sim, text, tokenizer};

#[test]
fn plot_timeline_and_probes_are_written_for_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = fast_sim(&[
        "--random-input-len",
        "16",
        "--random-output-len",
        "8",
        "--result-dir",
        d,
        "--result-filename",
        "t.json",
        "--save-result",
        "--plot-timeline",
        // Every gap of the simulator is below the first threshold: green.
        "--timeline-itl-thresholds",
        "1000,2000",
        "--probe-request-rate",
        "50",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let page_path = dir.path().join("t.timeline.html");
    assert!(stdout.contains(&format!("Timeline: {}", page_path.display())), "{stdout}");
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert!(page.contains("<td>requests drawn</td><td>12</td>"), "every request drawn");
    // 12 requests of 8 tokens: 7 gaps each, all green.
    assert!(page.contains("<td>gaps ITL &lt; 1000ms</td><td>84</td>"), "gap classes");
    assert!(page.contains("<td>gaps 1000ms ≤ ITL &lt; 2000ms</td><td>0</td>"));
    assert_eq!(page.matches("<g class=\"req\">").count(), 12);

    // The probe loop sends its first probe at the start and lets the probe in flight finish:
    // at least one completed probe, none failed.
    assert!(stdout.contains("Probe Requests"), "{stdout}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("t.json")).unwrap()).unwrap();
    assert!(result["probe_completed"].as_u64().unwrap() >= 1, "{result}");
    assert_eq!(result["probe_failed"], 0);
    let (median, max) =
        (result["probe_median_e2el_ms"].as_f64().unwrap(), result["probe_max_e2el_ms"].as_f64().unwrap());
    assert!(0.0 < median && median <= max, "{median} {max}");
    // Probes are in no metric of the run.
    assert_eq!(result["completed"], 12);
}

#[test]
fn spec_bench_questions_are_sent_with_the_category_filter() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("question.jsonl");
    std::fs::write(
        &q,
        concat!(
            r#"{"question_id": 1, "category": "writing", "turns": ["Write a short poem about a lighthouse keeper."]}"#,
            "\n",
            r#"{"question_id": 2, "category": "coding", "turns": ["Write a function that reverses a linked list."]}"#,
            "\n",
        ),
    )
    .unwrap();
    let out = fast_sim(&[
        "--dataset-name",
        "spec_bench",
        "--dataset-path",
        q.to_str().unwrap(),
        "--spec-bench-category",
        "writing",
        "--spec-bench-output-len",
        "6",
        "--dry-run",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("Avg output tokens:") && stdout.contains("6.00"), "{stdout}");
    let out = fast_sim(&[
        "--dataset-name",
        "spec_bench",
        "--dataset-path",
        q.to_str().unwrap(),
        "--spec-bench-output-len",
        "6",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Successful requests:                     12"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_vllm_flag_that_cannot_apply_exits_2_with_sb113() {
    let out = fast_sim(&["--chat-template-kwargs", r#"{"enable_thinking": false}"#]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("error[SB113]") && err.contains("--backend openai-chat"), "{err}");
}

/// A run of the custom dataset (completions backend) against the simulator with the tokenizer
/// directory `tok`; the result's `total_input_tokens` (the client's prompt_tokens).
fn custom_run(tok: &Path, prompts: &Path, extra: &[&str]) -> (Option<i32>, String, Option<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", "1", "--disable-tqdm", "--tokenizer"])
        .arg(tok)
        .arg("--sim-tokenizer")
        .arg(tok)
        .args([
            "--num-prompts",
            "2",
            "--dataset-name",
            "custom",
            "--custom-output-len",
            "4",
            "--dataset-path",
        ])
        .arg(prompts)
        .args(["--save-result", "--result-filename", "r.json", "--result-dir"])
        .arg(dir.path())
        .args(extra)
        .output()
        .unwrap();
    let result = std::fs::read_to_string(dir.path().join("r.json")).ok();
    let tokens = result
        .and_then(|r| serde_json::from_str::<serde_json::Value>(&r).ok())
        .and_then(|j| j["total_input_tokens"].as_u64());
    (out.status.code(), text(&out.stderr), tokens)
}

#[test]
fn chat_template_kwargs_reach_the_client_side_template_of_the_custom_dataset() {
    // SmolLM2's tokenizer with a template that reads a kwarg, as Qwen3's enable_thinking.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(tokenizer(), dir.path().join("tokenizer.json")).unwrap();
    std::fs::write(
        dir.path().join("chat_template.jinja"),
        "<|im_start|>user\n{{ messages[0].content }}<|im_end|>\n\
         {% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n{% endif %}",
    )
    .unwrap();
    let prompts = dir.path().join("p.jsonl");
    std::fs::write(&prompts, "{\"prompt\": \"Name three rivers.\"}\n").unwrap();
    let (code, err, plain) = custom_run(dir.path(), &prompts, &[]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err, thinking_off) =
        custom_run(dir.path(), &prompts, &["--chat-template-kwargs", r#"{"enable_thinking": false}"#]);
    assert_eq!(code, Some(0), "{err}");
    // Two requests, each rendered with the kwarg's extra text: more prompt tokens per request.
    let (plain, off) = (plain.unwrap(), thinking_off.unwrap());
    assert!(off > plain && (off - plain) % 2 == 0, "{plain} -> {off}");
    // With --skip-chat-template nothing renders a template: the kwargs apply nowhere (SB113).
    let (code, err, _) = custom_run(
        dir.path(),
        &prompts,
        &["--skip-chat-template", "--chat-template-kwargs", r#"{"enable_thinking": false}"#],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("error[SB113]"), "{err}");
    // A tokenizer without a template (a tokenizer.json alone): SB206, as vLLM's apply_chat_template raises.
    let bare = tempfile::tempdir().unwrap();
    std::fs::copy(tokenizer(), bare.path().join("tokenizer.json")).unwrap();
    let (code, err, _) = custom_run(bare.path(), &prompts, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("error[SB206]") && err.contains("--skip-chat-template"), "{err}");
}
