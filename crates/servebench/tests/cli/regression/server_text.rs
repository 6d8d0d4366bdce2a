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

/// base64 of the whole `Authorization` value, `Bearer sk-live-0123456789abcdef`.
const BEARER_BASE64: &str = "QmVhcmVyIHNrLWxpdmUtMDEyMzQ1Njc4OWFiY2RlZg==";

/// Pins redaction across a length cut: server text is cut to a length before it enters a
/// record, and a cut inside an echoed key used to leave the key minus its last characters in
/// the result's `errors`, every record and stderr (`auth=Bearer sk-live-0123456789abc…`). The
/// echoing server pads its 401 body by 4 more bytes each request, so the cut walks through the
/// key; it also echoes the header's base64.
#[test]
fn a_secret_cut_short_by_the_message_length_limit_is_still_redacted() {
    let n = Arc::new(AtomicUsize::new(0));
    let server = in_background(move || {
        serve_by_request(move |request| {
            let auth = request
                .split("\r\n")
                .find_map(|l| l.strip_prefix("authorization: ").or_else(|| l.strip_prefix("Authorization: ")))
                .unwrap_or("")
                .to_owned();
            let pad = "P".repeat(380 + 4 * n.fetch_add(1, Ordering::SeqCst));
            let body = format!("{pad} b64={BEARER_BASE64} auth={auth}");
            let resp = format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            vec![w(resp), Step::Close]
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = bin()
        .env("OPENAI_API_KEY", API_KEY)
        .args(["--base-url", &server.base_url(), "--tokenizer", tokenizer().to_str().unwrap()])
        .args(["--model", "m", "--num-prompts", "60", "--random-input-len", "8", "--random-output-len", "4"])
        .args(["--disable-tqdm", "--save-result", "--save-detailed", "--result-dir", d.to_str().unwrap()])
        .output()
        .unwrap();
    let heads = server.requests().concat();
    assert!(heads.contains(API_KEY), "the server saw no key");
    let mut outputs =
        vec![("stdout".to_owned(), text(&out.stdout)), ("stderr".to_owned(), text(&out.stderr))];
    for f in std::fs::read_dir(d).unwrap() {
        let p = f.unwrap().path();
        outputs.push((
            p.display().to_string(),
            String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned(),
        ));
    }
    assert!(outputs.iter().any(|(_, s)| s.contains("auth=<redacted>")), "no redacted echo: {outputs:?}");
    for (what, s) in &outputs {
        assert!(!s.contains(BEARER_BASE64), "{what} shows the header's base64");
        for len in 5..=API_KEY.len() {
            assert!(!s.contains(&API_KEY[..len]), "{what} shows {:?}:\n{s}", &API_KEY[..len]);
        }
    }
}

/// nginx's answer when `ssl_verify_client on` gets no client certificate: the handshake
/// completes and every request gets this 400 page.
const NGINX_400_BODY: &str = "<html>\r\n<head><title>400 No required SSL certificate was sent</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<center>No required SSL certificate was sent</center>\r\n<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n";

fn nginx_400(body: &str) -> String {
    format!(
        "HTTP/1.1 400 Bad Request\r\nServer: nginx/1.24.0\r\nDate: Fri, 04 Dec 2026 15:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// squid's answer to an absolute-form request without proxy credentials.
const SQUID_407_BODY: &str = "<!DOCTYPE html PUBLIC \"-//W3C//DTD HTML 4.01//EN\" \"http://www.w3.org/TR/html4/strict.dtd\">\n<html><head>\n<meta type=\"copyright\" content=\"Copyright (C) 1996-2023 The Squid Software Foundation and contributors\">\n<meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">\n<title>ERROR: Cache Access Denied</title>\n</head><body id=ERR_CACHE_ACCESS_DENIED>\n<div id=\"titles\">\n<h1>ERROR</h1>\n<h2>Cache Access Denied.</h2>\n</div>\n<hr>\n<div id=\"content\">\n<p>Sorry, you are not currently allowed to request http://10.0.0.7:8000/v1/completions from this cache until you have authenticated yourself.</p>\n</div>\n<hr>\n<div id=\"footer\">\n<p>Generated Fri, 04 Dec 2026 15:00:00 GMT by proxy (squid/6.6)</p>\n<!-- ERR_CACHE_ACCESS_DENIED -->\n</div>\n</body></html>\n";

fn squid_407() -> String {
    format!(
        "HTTP/1.1 407 Proxy Authentication Required\r\nServer: squid/6.6\r\nMime-Version: 1.0\r\nContent-Type: text/html;charset=utf-8\r\nContent-Length: {}\r\nX-Squid-Error: ERR_CACHE_ACCESS_DENIED 0\r\nProxy-Authenticate: Basic realm=\"Squid proxy\"\r\nVia: 1.1 proxy (squid/6.6)\r\nConnection: close\r\n\r\n{SQUID_407_BODY}",
        SQUID_407_BODY.len()
    )
}

/// A server that answers every request with `bytes` and closes.
fn fixed(bytes: String) -> ScriptedServer {
    in_background(move || serve_by_request(move |_| vec![w(bytes.clone()), Step::Close]))
}

fn gateway_run(base_url: &str, extra: &[&str]) -> std::process::Command {
    let mut c = bin();
    c.args(["--base-url", base_url, "--model", "m", "--tokenizer", tokenizer().to_str().unwrap()])
        .args(["--num-prompts", "8", "--random-input-len", "8", "--random-output-len", "4"])
        .args(extra);
    c
}

/// Pins the diagnosis of an mTLS gateway without a client certificate: nginx's 400 page used to
/// give SB302 with the page quoted eight times (once per /tokenize dialect and path), then
/// SB602 "check the sampling flags" (or SB301 with a readiness check). It is SB310 naming
/// `--client-cert/--client-key`, stopping at the first call; the end-of-run notices carry one
/// prefix each (`note: warning[SB302]` was printed), and a run that fails at once gives no
/// client-CPU verdict (its CPU share is null).
#[test]
fn an_mtls_gateway_without_a_client_certificate_is_sb310_naming_client_cert() {
    let gw = fixed(nginx_400(NGINX_400_BODY));
    for extra in [&[][..], &["--ready-check-timeout-sec", "5"], &["--skip-tokenize-verification"]] {
        let out = gateway_run(&gw.base_url(), extra).output().unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        let all = format!("{stdout}{stderr}");
        assert_eq!(out.status.code(), Some(1), "{all}");
        let error = stderr.lines().find(|l| l.starts_with("error[")).unwrap_or_default();
        assert!(
            error.starts_with("error[SB310]") && error.contains("--client-cert PATH --client-key PATH"),
            "{all}"
        );
        assert_eq!(error.matches("fix:").count(), 1, "{error}");
        assert!(!all.contains("SB302") && !all.contains("SB602") && !all.contains("SB301"), "{all}");
        assert!(all.matches("No required SSL certificate").count() <= 3, "{all}");
        for doubled in ["note: note:", "note: warning", "WARNING: client CPU", "client CPU"] {
            assert!(!all.contains(doubled), "{doubled}: {all}");
        }
    }
    // A gateway's own 400 about something else stays a refused request.
    let other = nginx_400(
        &NGINX_400_BODY.replace("No required SSL certificate was sent", "Request Header Too Large"),
    );
    let other = fixed(other);
    let out = gateway_run(&other.base_url(), &["--skip-tokenize-verification"]).output().unwrap();
    assert!(text(&out.stderr).contains("error[SB602]"), "{}", text(&out.stderr));
}

/// Pins the diagnosis of a proxy refusing an absolute-form request (`http_proxy`, an http://
/// server): squid's 407 page used to be SB602 "check the sampling flags" (SB301 with a
/// readiness check), quoting the HTML; it is SB312 as through CONNECT. The run header named
/// `HTTP_PROXY` when `http_proxy` was set: it names the variable read.
#[test]
fn a_407_from_an_http_proxy_is_sb312_and_the_header_names_the_variable_read() {
    let squid = fixed(squid_407());
    let proxy = format!("http://127.0.0.1:{}", squid.port);
    for extra in [&[][..], &["--ready-check-timeout-sec", "5"], &["--skip-tokenize-verification"]] {
        let out = gateway_run("http://10.0.0.7:8000", extra).env("http_proxy", &proxy).output().unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        let all = format!("{stdout}{stderr}");
        assert_eq!(out.status.code(), Some(1), "{all}");
        assert!(stdout.contains("(absolute-form requests, from http_proxy)"), "{all}");
        let error = stderr.lines().find(|l| l.starts_with("error[")).unwrap_or_default();
        assert!(error.starts_with("error[SB312]") && error.contains("407"), "{all}");
        assert!(error.contains("http://user:password@proxy:port"), "{error}");
        assert!(!all.contains("Cache Access Denied") && !all.contains("SB602"), "{all}");
    }
}
