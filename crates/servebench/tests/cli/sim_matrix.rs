//! The simulator matrix: every client backend × {its text dataset, the multimodal datasets
//! where they apply} × every simulator personality, end to end in-process (`run::run` against
//! one simulator per personality), a few requests each. A served combination must complete
//! every request with the server's token counts and a result JSON that matches
//! docs/result.schema.json; a combination the server does not speak must fail every request
//! with the documented status (404 for a route the personality does not serve; TGI's 422 for
//! an SGLang body on `/generate`).
//!
//! Cells that once failed for client gaps (a gateway's gzip, llama.cpp's close after every
//! streamed answer, pooling nulls against the schema) complete now; the llamacpp and gateway
//! columns are their regression tests.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::Parser;
use serde_json::Value;
use servebench::cli::Cli;
use servebench_sim::{Personality, SimConfig, SimHandle};

const MODEL: &str = "matrix-model";
const REQUESTS: u64 = 3;
const OUT: u64 = 4;

/// GPT-2's BPE (built in, offline): loads in a fraction of the time of a tokenizer.json, which
/// every cell's client would load again.
const TOKENIZER: &str = "gpt2";

/// `(backend, endpoint path)` (`openai` is another name of `vllm`).
const BACKENDS: &[(&str, &str)] = &[
    ("vllm", "/v1/completions"),
    ("openai-chat", "/v1/chat/completions"),
    ("openai-responses", "/v1/responses"),
    ("openai-embeddings", "/v1/embeddings"),
    ("openai-embeddings-chat", "/v1/embeddings"),
    ("openai-embeddings-clip", "/v1/embeddings"),
    ("openai-embeddings-vlm2vec", "/v1/embeddings"),
    ("infinity-embeddings", "/v1/embeddings"),
    ("infinity-embeddings-clip", "/v1/embeddings"),
    ("openai-audio", "/v1/audio/transcriptions"),
    ("vllm-pooling", "/pooling"),
    ("vllm-rerank", "/v1/rerank"),
    ("tgi", "/generate_stream"),
    ("sglang", "/generate"),
    ("llama.cpp", "/completion"),
    ("anthropic", "/v1/messages"),
];

/// What a cell must do.
#[derive(Debug, PartialEq)]
enum Expect {
    Complete,
    /// Every request fails with this HTTP status.
    Status(u16),
}

fn expect(p: Personality, backend: &str, path: &str) -> Expect {
    let b = p.behaviour();
    if !b.serves(path) {
        return Expect::Status(404);
    }
    // TGI's `/generate` reads `inputs`: an SGLang body is a validation error.
    if backend == "sglang" && p == Personality::Tgi {
        return Expect::Status(422);
    }
    Expect::Complete
}

fn schema_errors(j: &Value) -> Option<String> {
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(j).map(|e| format!("{}: {e}", e.instance_path)).collect();
    (!errors.is_empty()).then(|| format!("schema violations: {errors:?}"))
}

/// A custom_image file: two lines, each with a data-URL PNG of 56 x 28 pixels (2 x 1 patches).
fn custom_image_file(dir: &Path) -> PathBuf {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x38\0\0\0\x1c\x08\x02\0\0\0";
    let img = dir.join("img.png");
    std::fs::write(&img, png).unwrap();
    let line = serde_json::json!({"prompt": "Describe the image.", "image_files": [img]});
    let path = dir.join("images.jsonl");
    std::fs::write(&path, format!("{line}\n{line}\n{line}\n")).unwrap();
    path
}

/// A custom_audio file: three lines, each with a 1-second 16 kHz WAV (generated here).
fn custom_audio_file(dir: &Path) -> PathBuf {
    let wav = dir.join("clip.wav");
    std::fs::write(&wav, servebench_data::dataset::wav::tone_wav(1.0, 16_000)).unwrap();
    let line = serde_json::json!({"prompt": "Transcribe the audio.", "audio": wav});
    let path = dir.join("audio.jsonl");
    std::fs::write(&path, format!("{line}\n{line}\n{line}\n")).unwrap();
    path
}

/// The backends that send images (the multimodal datasets apply to them).
const IMAGE_BACKENDS: &[&str] = &[
    "openai-chat",
    "openai-embeddings-chat",
    "openai-embeddings-clip",
    "openai-embeddings-vlm2vec",
    "infinity-embeddings-clip",
];

/// Datasets of a backend: `(name, flags)`.
fn datasets(backend: &str, image_file: &str, audio_file: &str) -> Vec<(&'static str, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let audio = (
        "custom_audio",
        s(&["--dataset-name", "custom_audio", "--dataset-path", audio_file, "--custom-output-len", "4"]),
    );
    // openai-audio uploads audio: it has no text dataset.
    if backend == "openai-audio" {
        return vec![audio];
    }
    let mut d = vec![(
        "random",
        s(&["--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "4"]),
    )];
    if backend == "openai-chat" {
        d.push(audio);
    }
    if IMAGE_BACKENDS.contains(&backend) {
        d.push((
            "random-mm",
            s(&[
                "--dataset-name",
                "random-mm",
                "--random-input-len",
                "16",
                "--random-output-len",
                "4",
                "--random-mm-bucket-config",
                "{(56, 28, 1): 1.0}",
            ]),
        ));
        d.push((
            "custom_image",
            s(&[
                "--dataset-name",
                "custom_image",
                "--dataset-path",
                image_file,
                "--custom-ensure-client-side-data",
                "--custom-output-len",
                "4",
            ]),
        ));
    }
    d
}

struct Cell<'a> {
    backend: &'a str,
    dataset: &'a str,
    p: Personality,
}

/// Runs one cell in-process; returns the exit code (or the error line), the result JSON and
/// the records.
fn run_cell(
    base_url: &str,
    cell: &Cell<'_>,
    flags: &[String],
    dir: &Path,
) -> (Result<u8, String>, Option<Value>, Vec<Value>) {
    let mut argv: Vec<String> = [
        "servebench",
        "--base-url",
        base_url,
        "--backend",
        cell.backend,
        "--model",
        MODEL,
        "--tokenizer",
        TOKENIZER,
        "--num-prompts",
        "3",
        "--max-concurrency",
        "2",
        "--disable-tqdm",
        "--ready-check-timeout-sec",
        "0",
        "--save-result",
        "--result-dir",
        dir.to_str().unwrap(),
        "--result-filename",
        "r.json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    argv.extend_from_slice(flags);
    if !is_pooling(cell.backend) {
        argv.push("--ignore-eos".into());
    }
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let code = servebench::cmd::run::run(&cli.run, &Default::default(), Default::default())
        .map_err(|e| format!("{e:#}"));
    let json = std::fs::read(dir.join("r.json")).ok().map(|b| serde_json::from_slice(&b).unwrap());
    let records = std::fs::read_to_string(dir.join("r.json.records.jsonl"))
        .map(|t| t.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
        .unwrap_or_default();
    (code, json, records)
}

fn is_pooling(backend: &str) -> bool {
    backend.contains("embeddings") || matches!(backend, "vllm-pooling" | "vllm-rerank")
}

/// Backends that send other text than the dataset's with images (CLIP's empty text, VLM2Vec's
/// instruction, Infinity's bare image URL): the server counts no dataset text for them.
fn replaces_text(backend: &str) -> bool {
    backend.ends_with("-clip") || backend.ends_with("-vlm2vec")
}

fn sum(records: &[Value], key: &str) -> u64 {
    records.iter().map(|r| r[key].as_u64().unwrap_or(0)).sum()
}

/// Checks a cell; returns a failure description (None = as expected).
fn check(
    cell: &Cell<'_>,
    want: &Expect,
    out: (Result<u8, String>, Option<Value>, Vec<Value>),
) -> Option<String> {
    let (code, json, records) = out;
    let label = format!("{} × {} × {}", cell.backend, cell.dataset, cell.p.name());
    match want {
        Expect::Complete => {
            let Some(j) = json else { return Some(format!("{label}: no result ({code:?})")) };
            if j["completed"] != REQUESTS || j["failed"] != 0 {
                let errs: Vec<&Value> = records.iter().filter_map(|r| r.get("error")).take(2).collect();
                return Some(format!(
                    "{label}: completed {} failed {} {errs:?}",
                    j["completed"], j["failed"]
                ));
            }
            if let Some(e) = schema_errors(&j) {
                return Some(format!("{label}: {e}"));
            }
            if code != Ok(0) {
                return Some(format!("{label}: exit {code:?}"));
            }
            let server_in = sum(&records, "server_prompt_tokens");
            let client_in = sum(&records, "prompt_tokens");
            // Input tokens: the client's count (vLLM's rule), the server's for pooling.
            if server_in == 0
                || (j["total_input_tokens"] != client_in && j["total_input_tokens"] != server_in)
            {
                return Some(format!(
                    "{label}: input {} (client {client_in}, server {server_in})",
                    j["total_input_tokens"]
                ));
            }
            if !is_pooling(cell.backend) {
                // `completion_tokens` of a record is the server's usage.
                let out_tokens = sum(&records, "completion_tokens");
                // TGI and Anthropic have no ignore_eos: the server's draw up to the limit.
                let ok = j["total_output_tokens"] == out_tokens
                    && match cell.backend {
                        "tgi" | "anthropic" => (REQUESTS..=REQUESTS * OUT).contains(&out_tokens),
                        _ => out_tokens == REQUESTS * OUT,
                    };
                if !ok {
                    return Some(format!(
                        "{label}: output {} (records {out_tokens})",
                        j["total_output_tokens"]
                    ));
                }
            }
            // RTFx: 3 clips of 1 s over the run's duration; a run without audio has none
            // (vLLM's 0.0: vLLM's key keeps vLLM's type).
            let rtfx_ok = match cell.backend {
                "openai-audio" => j["rtfx"]
                    .as_f64()
                    .zip(j["duration"].as_f64())
                    .is_some_and(|(r, d)| (r * d - REQUESTS as f64).abs() < 1e-6 * REQUESTS as f64),
                b if is_pooling(b) => j.get("rtfx").is_none(),
                _ => j["rtfx"].as_f64() == Some(0.0),
            };
            if !rtfx_ok {
                return Some(format!("{label}: rtfx {} (duration {})", j["rtfx"], j["duration"]));
            }
            // Each image (56 x 28 pixels) adds 2 prompt tokens on the server, each second of
            // audio 25.
            let text_in = if replaces_text(cell.backend) { 0 } else { client_in };
            if cell.dataset != "random" && server_in < text_in + 2 * REQUESTS {
                return Some(format!("{label}: images not counted: server {server_in} client {client_in}"));
            }
            None
        }
        Expect::Status(status) => {
            let failed_with = |r: &Value| r["outcome"] == "failed" && r["http_status"] == *status;
            match json {
                Some(j)
                    if j["completed"] == 0
                        && records.len() as u64 == REQUESTS
                        && records.iter().all(failed_with) =>
                {
                    None
                }
                Some(j) => Some(format!(
                    "{label}: want every request failed with {status}: completed {} {:?}",
                    j["completed"],
                    records.first().map(|r| (&r["outcome"], &r["http_status"], &r["error"]))
                )),
                None => Some(format!("{label}: want every request failed with {status}, got {code:?}")),
            }
        }
    }
}

fn start_sims(rt: &tokio::runtime::Runtime) -> Vec<(Personality, SimHandle)> {
    let tok = servebench_data::tokenizer::load_tokenizer(TOKENIZER).unwrap();
    Personality::ALL
        .iter()
        .map(|&p| {
            let cfg = SimConfig::new(MODEL, tok.clone())
                .with_fixed_timing_ms(1.0, 1.0)
                .unwrap()
                .with_personality(p);
            let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
            (p, rt.block_on(servebench_sim::start(cfg, addr)).unwrap())
        })
        .collect()
}

#[test]
fn every_backend_dataset_and_personality() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let sims = start_sims(&rt);
    let tmp = tempfile::tempdir().unwrap();
    let images = custom_image_file(tmp.path());
    let audio = custom_audio_file(tmp.path());
    let mut failures = Vec::new();
    let mut cells = 0;
    for (p, sim) in &sims {
        let prefix = if p.behaviour().prefixed { "/gw" } else { "" };
        let base_url = format!("{}{prefix}", sim.base_url());
        for &(backend, path) in BACKENDS {
            for (dataset, flags) in datasets(backend, images.to_str().unwrap(), audio.to_str().unwrap()) {
                let cell = Cell { backend, dataset, p: *p };
                let dir = tempfile::tempdir().unwrap();
                let started = std::time::Instant::now();
                let out = run_cell(&base_url, &cell, &flags, dir.path());
                let want = expect(*p, backend, path);
                let problem = check(&cell, &want, out);
                eprintln!("cell {backend} × {dataset} × {}: {:?}", p.name(), started.elapsed());
                cells += 1;
                if let Some(msg) = problem {
                    failures.push(msg);
                }
            }
        }
    }
    for (_, sim) in sims {
        sim.abort();
    }
    assert!(cells > 70, "{cells} cells");
    assert!(failures.is_empty(), "{} of {cells} cells failed:\n{}", failures.len(), failures.join("\n"));
}
