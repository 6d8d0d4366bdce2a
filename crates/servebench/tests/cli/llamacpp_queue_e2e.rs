//! Requests queued by llama.cpp: it reads a request and sends nothing — not even the `200`
//! head — until a slot starts it. A request stopped there (early stop, a cancel by design, an
//! interrupt) was written: it counts as sent and cancelled in flight, never as "not sent".
//! The scripted server plays the captured llama.cpp bytes (`servebench_testkit::llamacpp`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Value;
use servebench_testkit::llamacpp::{context_exceeded, queue_script};
use servebench_testkit::script::{in_background, serve_by_request, w, ScriptedServer, Step};
use tokio::sync::Notify;

use crate::support::{bin, text, tokenizer};

const MODELS: &str = r#"{"object":"list","data":[{"id":"tiny.gguf","object":"model","created":1764900000,"owned_by":"llamacpp"}]}"#;

/// Answers the model list, 404 to anything else but completions (no `/tokenize` here), and
/// scripts each completion by `completion` with its arrival number (0, 1, …) and its text.
pub(crate) fn llama_server(
    completion: impl Fn(usize, &str) -> Vec<Step> + Send + Sync + 'static,
) -> ScriptedServer {
    let n = Arc::new(AtomicUsize::new(0));
    in_background(move || {
        serve_by_request(move |req| {
            if req.starts_with("POST /v1/completions ") {
                return completion(n.fetch_add(1, Ordering::SeqCst), req);
            }
            if !req.starts_with("GET /v1/models") {
                return vec![
                    w("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
                    Step::Close,
                ];
            }
            {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    MODELS.len()
                );
                vec![w(head + MODELS), Step::Close]
            }
        })
    })
}

/// Completions the server has read.
fn completions_read(s: &ScriptedServer) -> usize {
    s.requests().iter().filter(|r| r.starts_with("POST /v1/completions ")).count()
}

pub(crate) fn command(server: &ScriptedServer, dir: &Path, extra: &[&str]) -> std::process::Command {
    let mut c = bin();
    c.args(["--backend", "openai", "--base-url", &server.base_url(), "--model", "tiny.gguf"])
        .arg("--tokenizer")
        .arg(tokenizer())
        .args(["--random-input-len", "16", "--random-output-len", "4", "--disable-tqdm"])
        .args(["--save-result", "--result-dir", dir.to_str().unwrap(), "--result-filename", "r.json"])
        .arg("--records")
        .arg(dir.join("r.records.jsonl"))
        .args(extra);
    c
}

fn result(dir: &Path) -> (Value, Vec<Value>) {
    let json = serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let recs = std::fs::read_to_string(dir.join("r.records.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("index").is_some())
        .collect();
    (json, recs)
}

fn count(recs: &[Value], f: impl Fn(&Value) -> bool) -> u64 {
    recs.iter().filter(|r| f(r)).count() as u64
}

/// One slot busy with a prompt too long for it (HTTP 400 once 4 requests are read), the others
/// queued: `--max-errors 0` stops the run. Every request the server read is sent: the queued
/// ones are cancelled in flight; only those the server never saw are "not sent". (The slot the
/// failure freed may take one more request before the stop trips: 3 or 4 in flight.)
#[test]
fn early_stop_counts_requests_queued_without_a_head_as_cancelled_in_flight() {
    let all_in = Arc::new(Notify::new());
    let never = Arc::new(Notify::new());
    let server = llama_server(move |k, _| match k {
        0 => vec![Step::Wait(all_in.clone()), w(context_exceeded(1500, 1024))],
        _ => {
            if k == 3 {
                all_in.notify_one();
            }
            queue_script(never.clone())
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out =
        command(&server, dir.path(), &["--num-prompts", "12", "--max-concurrency", "4", "--max-errors", "0"])
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let (json, recs) = result(dir.path());
    let e = &json["early_stop"];
    // The server read 4 before it answered the 400; all 3 others were queued then.
    assert!(completions_read(&server) >= 4);
    let queued = |r: &Value| r["cancelled_by"] == "early_stop" && r["dispatched_us"].is_u64();
    let in_flight = count(&recs, queued);
    assert!(in_flight == 3 || in_flight == 4, "{in_flight}");
    let not_sent = 11 - in_flight;
    let e_counts = (e["requests_not_sent"].as_u64(), e["cancelled_in_flight"].as_u64());
    assert_eq!(e_counts, (Some(not_sent), Some(in_flight)), "{e}");
    assert!(recs.iter().filter(|r| queued(r)).all(|r| r.get("headers_us").is_none()), "no head arrived");
    assert_eq!((json["sent"].as_u64(), json["never_sent"].as_u64()), (Some(1 + in_flight), Some(not_sent)));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("{not_sent} requests were not sent")), "{stderr}");
}

/// Every request chosen for cancellation (100 %) and queued behind a busy server: each is
/// cancelled by design at its delay, having been sent.
#[test]
fn cancellation_by_design_of_queued_requests_counts_them_as_sent() {
    let never = Arc::new(Notify::new());
    let server = llama_server(move |_, _| queue_script(never.clone()));
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--num-prompts", "4", "--max-concurrency", "4", "--request-cancellation-rate", "100"];
    let out =
        command(&server, dir.path(), &flags).args(["--request-cancellation-delay", "1"]).output().unwrap();
    // Nothing succeeded (SB602, exit 1): the run still writes its result.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(completions_read(&server), 4);
    let (json, recs) = result(dir.path());
    assert_eq!(json["cancelled_by_design"].as_u64(), Some(4), "{}", json["request_cancellation"]);
    assert_eq!((json["sent"].as_u64(), json["never_sent"].as_u64()), (Some(4), Some(0)));
    assert_eq!(count(&recs, |r| r["cancelled_by"] == "by_design" && r["dispatched_us"].is_u64()), 4);
}

/// Ctrl-C while 2 requests are queued (written, no head) and 4 more wait for a slot of the
/// client: the 2 are cancelled in flight (`interrupt`, with a dispatch time), the 4 never sent.
#[test]
fn interrupt_counts_requests_queued_without_a_head_as_sent() {
    let never = Arc::new(Notify::new());
    let server = llama_server(move |_, _| queue_script(never.clone()));
    let dir = tempfile::tempdir().unwrap();
    let child = command(&server, dir.path(), &["--num-prompts", "6", "--max-concurrency", "2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while completions_read(&server) < 2 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    servebench_testkit::cli::interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let (json, recs) = result(dir.path());
    assert_eq!(
        (json["sent"].as_u64(), json["never_sent"].as_u64()),
        (Some(2), Some(4)),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(count(&recs, |r| r["cancelled_by"] == "interrupt" && r["dispatched_us"].is_u64()), 2);
}
