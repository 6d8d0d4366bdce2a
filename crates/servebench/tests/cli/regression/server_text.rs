//! Server text in every output: secrets a server echoes, and the diagnoses of what real
//! gateways (nginx, squid) answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use servebench_testkit::script::{in_background, serve_by_request, w, ScriptedServer, Step};

use crate::support::{bin, text, tokenizer};

const API_KEY: &str = "sk-live-0123456789abcdef";
const HEADER_TOKEN: &str = "tok-header-secret-42";
/// base64("bench:pr0xy-s3cret"), the proxy's `Basic` credentials.
const PROXY_BASIC: &str = "YmVuY2g6cHIweHktczNjcmV0";
const FORBIDDEN: [&str; 4] = [API_KEY, HEADER_TOKEN, "pr0xy-s3cret", PROXY_BASIC];

/// The request head a server got, as the error text of an echoing server.
fn head(request: &str) -> String {
    request.split("\r\n\r\n").next().unwrap_or("").replace("\r\n", " | ")
}

/// A server that echoes every request header into its error text, three ways in turn: a 401
/// body (`bad key: ...`), an `error` event inside a 200 event stream, and a 200 JSON error
/// answer (not streamed). Every answer closes the connection.
fn echo_server() -> ScriptedServer {
    let n = Arc::new(AtomicUsize::new(0));
    in_background(move || {
        serve_by_request(move |request| {
            let echoed = head(request);
            let json =
                serde_json::json!({ "error": { "message": format!("bad key: {echoed}") } }).to_string();
            let generation = request.contains("/v1/completions");
            let resp = match (generation, n.fetch_add(usize::from(generation), Ordering::SeqCst) % 3) {
                (true, 1) => format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: {json}\n\n"
                ),
                (true, 2) => format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{json}",
                    json.len()
                ),
                _ => {
                    let body = format!("bad key: {echoed}");
                    format!(
                        "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                }
            };
            vec![w(resp), Step::Close]
        })
    })
}

/// Runs the binary with the key, a sensitive `--header` and (optionally) a proxy with
/// credentials; `extra` adds flags.
fn run(server: &ScriptedServer, dir: &std::path::Path, proxy: bool, extra: &[&str]) -> std::process::Output {
    let mut c = bin();
    c.env("OPENAI_API_KEY", API_KEY)
        .args(["--base-url", &server.base_url(), "--tokenizer", tokenizer().to_str().unwrap()])
        .args(["--num-prompts", "6", "--random-input-len", "8", "--random-output-len", "4"])
        .args(["--header", &format!("X-Session-Token={HEADER_TOKEN}"), "--disable-tqdm"])
        .args(["--result-dir", dir.to_str().unwrap()])
        .args(extra);
    if proxy {
        c.env("http_proxy", format!("http://bench:pr0xy-s3cret@127.0.0.1:{}", server.port));
    }
    c.output().unwrap()
}

fn assert_no_secret(what: &str, s: &str) {
    for f in FORBIDDEN {
        assert!(!s.contains(f), "{what} shows the secret {f}:\n{s}");
    }
}

/// Pins the redaction of server text: a server answering `bad key: <the Authorization
/// header>` used to put the API key into stderr, the result's `errors`, every record and the
/// HTML report. Generation requests (401 body, an error event in a stream, a JSON answer),
/// the readiness check, the model list and `/tokenize` all echo every header, directly and
/// through a proxy given credentials (which the echoing proxy sees as `Proxy-Authorization`).
#[test]
fn secrets_a_server_echoes_are_redacted_from_every_output() {
    for proxy in [false, true] {
        let server = echo_server();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Generation requests (and /tokenize): records, result JSON, then the HTML report.
        let out = run(&server, d, proxy, &["--model", "m", "--save-result", "--save-detailed"]);
        let out = [out.clone()].into_iter().chain([
            run(&server, d, proxy, &["--model", "m", "--ready-check-timeout-sec", "5"]),
            run(&server, d, proxy, &[]), // the model list
        ]);
        for o in out {
            assert_no_secret("stdout", &text(&o.stdout));
            assert_no_secret("stderr", &text(&o.stderr));
        }
        let heads = server.requests().concat();
        assert!(heads.contains(API_KEY) && heads.contains(HEADER_TOKEN), "the server saw no secret");
        assert_eq!(heads.contains(PROXY_BASIC), proxy, "{heads}");
        let files: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()).collect();
        let result = files.iter().find(|p| p.extension().is_some_and(|e| e == "json")).expect("result");
        let html = d.join("report.html");
        let rep = bin().arg("report").arg(result).arg("-o").arg(&html).output().unwrap();
        assert!(rep.status.success(), "{}", text(&rep.stderr));
        for f in std::fs::read_dir(d).unwrap() {
            let p = f.unwrap().path();
            let s = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            assert_no_secret(&p.display().to_string(), &s);
        }
        let result = std::fs::read_to_string(result).unwrap();
        assert!(result.contains("bad key: ") && result.contains("<redacted>"), "{result}");
    }
}
