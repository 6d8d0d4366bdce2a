//! `--plot-dataset-stats`, `--enable-multimodal-chat` and `--custom-ensure-client-side-data`
//! through the binary: runs against the embedded simulator, dry runs, and the coded errors of
//! misuse (before any traffic).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::{data, fast_sim, text};

#[test]
fn plot_dataset_stats_writes_the_page_next_to_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    // Without --save-result the page still goes where the result would.
    let out = fast_sim(&[
        "--random-input-len",
        "40",
        "--random-output-len",
        "8",
        "--random-range-ratio",
        r#"{"input": 0.5, "output": 0.0}"#,
        "--result-dir",
        d,
        "--result-filename",
        "x.json",
        "--plot-dataset-stats",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let page_path = dir.path().join("x.dataset_stats.html");
    assert!(stdout.contains(&format!("Dataset statistics: {}", page_path.display())), "{stdout}");
    assert!(!dir.path().join("x.json").exists(), "no result without --save-result");
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert_eq!(page.matches("<figure class=\"chart\"").count(), 4);
    assert!(page.contains("<td>requests</td><td>12</td>"), "every request counted");
    assert!(page.contains("<td>dataset</td><td>random</td>"));
    // Every request completed with its 8 output tokens: one output bin holds all 12.
    assert!(page.contains("min 8, mean 8.0, max 8, total 96"), "output summary");

    // With --save-result and vLLM's default name: the page shares the result's stem.
    let out = fast_sim(&[
        "--random-input-len",
        "16",
        "--random-output-len",
        "4",
        "--result-dir",
        d,
        "--save-result",
        "--plot-dataset-stats",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let result = stdout.lines().find_map(|l| l.strip_prefix("Result: ")).unwrap();
    let expected = Path::new(result).with_extension("dataset_stats.html");
    assert!(expected.exists(), "{}", expected.display());
    assert!(result.ends_with(".json"));

    // A dry run writes nothing and says so; several runs refuse the flag.
    let out =
        fast_sim(&["--dry-run", "--result-dir", d, "--result-filename", "dry.json", "--plot-dataset-stats"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("a dry run writes nothing"));
    assert!(!dir.path().join("dry.dataset_stats.html").exists());
    let out = fast_sim(&["--dry-run", "--plot-dataset-stats", "--num-runs", "2"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("SB101") && stderr.contains("--plot-dataset-stats"), "{stderr}");
}

#[test]
fn multimodal_chat_run_sends_the_same_requests() {
    // sharegpt through the chat backend, with and without pre-built messages: every request
    // succeeds and the server counts the same prompt tokens (the bodies are identical).
    let dir = tempfile::tempdir().unwrap();
    let sharegpt = data("sharegpt_small.json");
    let mut totals = Vec::new();
    for flag in [None, Some("--enable-multimodal-chat")] {
        let name = if flag.is_some() { "chat.json" } else { "plain.json" };
        let mut args = vec![
            "--backend",
            "openai-chat",
            "--dataset-name",
            "sharegpt",
            "--dataset-path",
            &sharegpt,
            "--sharegpt-output-len",
            "6",
            "--save-result",
            "--result-dir",
            dir.path().to_str().unwrap(),
            "--result-filename",
            name,
        ];
        args.extend(flag);
        let out = fast_sim(&args);
        assert!(out.status.success(), "{flag:?}: {}\n{}", text(&out.stdout), text(&out.stderr));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap();
        assert_eq!((v["completed"].as_u64(), v["failed"].as_u64()), (Some(12), Some(0)), "{flag:?}");
        totals.push(v["total_input_tokens"].clone());
    }
    assert_eq!(totals[0], totals[1]);
}

#[test]
fn multimodal_chat_and_client_side_data_misuse_is_sb101() {
    let sharegpt = data("sharegpt_small.json");
    let custom = data("custom_small.jsonl");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--enable-multimodal-chat", "--backend", "openai-chat"], "random"),
        (
            vec!["--enable-multimodal-chat", "--dataset-name", "sharegpt", "--dataset-path", &sharegpt],
            "--backend openai",
        ),
        (
            vec![
                "--enable-multimodal-chat",
                "--backend",
                "openai-chat",
                "--dataset-name",
                "custom",
                "--dataset-path",
                &custom,
            ],
            "custom",
        ),
        (
            vec!["--custom-ensure-client-side-data", "--dataset-name", "custom", "--dataset-path", &custom],
            "custom_image",
        ),
    ];
    for (args, needle) in cases {
        let mut all = vec!["--dry-run"];
        all.extend(args.iter().copied());
        let out = fast_sim(&all);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("SB101") && stderr.contains(needle), "{args:?}: {stderr}");
        let flag =
            args.iter().find(|a| a.starts_with("--enable") || a.starts_with("--custom-ensure")).unwrap();
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}

#[test]
fn custom_image_dry_run_loads_images_client_side() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("one pixel.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0").unwrap();
    let lines = [
        serde_json::json!({"prompt": "Describe the image.", "image_files": [png]}),
        serde_json::json!({"content": [{"type": "text", "text": "Compare "}, {"type": "image", "image": png}, {"type": "image_url", "image_url": "data:image/png;base64,Zm9v"}]}),
    ];
    let path = dir.path().join("images.jsonl");
    // Six lines of each form: 12 requests, 6 × 1 + 6 × 2 images.
    let rows: Vec<String> = (0..12).map(|i| lines[i % 2].to_string()).collect();
    std::fs::write(&path, rows.join("\n")).unwrap();
    let p = path.to_str().unwrap();
    let base =
        ["--dry-run", "--backend", "openai-chat", "--dataset-name", "custom_image", "--dataset-path", p];
    for extra in [
        &[][..],
        &["--custom-ensure-client-side-data"][..],
        &["--custom-ensure-client-side-data", "--enable-multimodal-chat"][..],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let out = fast_sim(&args);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{extra:?}: {stdout}\n{}", text(&out.stderr));
        assert!(stdout.contains("Multimodal items:") && stdout.contains("18"), "{extra:?}: {stdout}");
    }
    // A referenced file that is not an image fails the build when loaded client-side only.
    std::fs::write(&png, "not an image").unwrap();
    let mut args = base.to_vec();
    assert!(fast_sim(&args).status.success(), "the server would load it: not checked here");
    args.push("--custom-ensure-client-side-data");
    let out = fast_sim(&args);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("SB204") && stderr.contains("images.jsonl, line ") && stderr.contains("not an image"),
        "{stderr}"
    );
    // Images need a chat backend.
    let out = fast_sim(&["--dry-run", "--dataset-name", "custom_image", "--dataset-path", p]);
    assert!(text(&out.stderr).contains("SB110"), "{}", text(&out.stderr));
}

#[test]
fn asr_flac_rows_run_through_the_simulator_with_rtfx_of_the_decoded_audio() {
    // LibriSpeech-shaped rows whose audio cells are FLAC: decoded, uploaded to the simulator's
    // /v1/audio/transcriptions as 16-bit WAV, and every request completes. Only the 1-second
    // clip passes the length filter, so the run carries 12 s of audio.
    let dir = tempfile::tempdir().unwrap();
    let rows =
        servebench_testkit::fixtures::repo_path("fixtures/datasets/hf/openslr/librispeech_asr/train.jsonl");
    let out = fast_sim(&[
        "--backend",
        "openai-audio",
        "--dataset-name",
        "hf",
        "--dataset-path",
        rows.to_str().unwrap(),
        "--hf-name",
        "openslr/librispeech_asr",
        "--asr-min-audio-len-sec",
        "0.9",
        "--asr-max-audio-len-sec",
        "1.1",
        "--hf-output-len",
        "4",
        "--save-result",
        "--result-dir",
        dir.path().to_str().unwrap(),
        "--result-filename",
        "asr.json",
    ]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("asr.json")).unwrap()).unwrap();
    assert_eq!(j["completed"], 12, "{j}");
    assert_eq!(j["failed"], 0);
    let (rtfx, duration) = (j["rtfx"].as_f64().unwrap(), j["duration"].as_f64().unwrap());
    assert!((rtfx * duration - 12.0).abs() < 1e-6, "rtfx {rtfx} x duration {duration}");
}
