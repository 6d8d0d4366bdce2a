//! vLLM 0.34's rule for the client-side chat template: chat backends skip it (its
//! `CHAT_TEMPLATE_BACKENDS`), as if `--skip-chat-template` were given — the server renders its
//! own template once. Completions backends render it as before.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use crate::support::{bin, text, tokenizer};

/// A custom-dataset run (2 prompts) against the simulator; exit code, stderr and the result's
/// `total_input_tokens` (the client's prompt_tokens).
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
    let tokens = std::fs::read_to_string(dir.path().join("r.json"))
        .ok()
        .and_then(|r| serde_json::from_str::<serde_json::Value>(&r).ok())
        .and_then(|j| j["total_input_tokens"].as_u64());
    (out.status.code(), text(&out.stderr), tokens)
}

#[test]
fn chat_backends_skip_the_client_side_chat_template_as_vllm_0_34() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(tokenizer(), dir.path().join("tokenizer.json")).unwrap();
    std::fs::write(
        dir.path().join("chat_template.jinja"),
        "<|im_start|>user\n{{ messages[0].content }}<|im_end|>\n",
    )
    .unwrap();
    let prompts = dir.path().join("p.jsonl");
    std::fs::write(&prompts, "{\"prompt\": \"Name three rivers.\"}\n").unwrap();
    let (code, err, rendered) = custom_run(dir.path(), &prompts, &[]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err, skipped) = custom_run(dir.path(), &prompts, &["--skip-chat-template"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err, chat) = custom_run(dir.path(), &prompts, &["--backend", "openai-chat"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(rendered > skipped, "completions render the template: {rendered:?} > {skipped:?}");
    assert_eq!(chat, skipped, "openai-chat counts the bare prompt, as --skip-chat-template");
    // A tokenizer without a template is no longer needed for a chat backend (0.33: SB206).
    let bare = tempfile::tempdir().unwrap();
    std::fs::copy(tokenizer(), bare.path().join("tokenizer.json")).unwrap();
    let (code, err, tokens) = custom_run(bare.path(), &prompts, &["--backend", "openai-chat"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(tokens, skipped);
    let (code, err, _) = custom_run(bare.path(), &prompts, &[]);
    assert_eq!(code, Some(1), "completions still need the template: {err}");
    assert!(err.contains("error[SB206]"), "{err}");
}
