//! The network paths through the binary: the embedded simulator over HTTPS (`--sim-tls`),
//! `SSL_CERT_FILE`, mutual TLS, the readiness check stopping at once on a certificate error
//! (SB310), and `HTTPS_PROXY` with credentials that are never printed. Every proxy and TLS
//! variable of the spawned binary is set or cleared explicitly.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use servebench_testkit::proxy;

use std::path::{Path, PathBuf};

use servebench_sim::{SimCa, SimHandle, SimTls};

use crate::support::{bin, text, tokenizer};

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// A short run's flags (few requests, fast simulator timing).
fn short_run(tok: &Path) -> Vec<String> {
    [
        "--tokenizer",
        tok.to_str().unwrap(),
        "--num-prompts",
        "4",
        "--random-input-len",
        "16",
        "--random-output-len",
        "4",
        "--disable-tqdm",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn sim_flags(tok: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        ["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", "1", "--sim-tokenizer", tok.to_str().unwrap()]
            .iter()
            .map(|s| s.to_string())
            .collect();
    v.extend(short_run(tok));
    v
}

/// A standalone HTTPS simulator on its own runtime (the binary under test is the client).
struct Served {
    rt: tokio::runtime::Runtime,
    sim: Option<SimHandle>,
}

impl Served {
    fn start(tls: SimTls) -> Served {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let tok = servebench_data::tokenizer::load_tokenizer(tokenizer().to_str().unwrap()).unwrap();
        let cfg = servebench_sim::SimConfig::new("sim-model", tok).with_fixed_timing_ms(2.0, 1.0).unwrap();
        let sim = rt.block_on(servebench_sim::start_tls(cfg, "127.0.0.1:0".parse().unwrap(), tls)).unwrap();
        Served { rt, sim: Some(sim) }
    }

    fn sim(&self) -> &SimHandle {
        self.sim.as_ref().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(s) = self.sim.take() {
            s.abort();
        }
    }
}

#[test]
fn embedded_simulator_over_https_trusts_its_generated_ca() {
    let tok = tokenizer();
    let out = bin().args(sim_flags(&tok)).arg("--sim-tls").output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Embedded simulator at https://127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("CA certificate written to"), "{stdout}");
    assert!(stdout.contains("TLS trust: --cacert"), "{stdout}");
    assert!(stdout.contains("Successful requests:") && stdout.contains(" 4"), "{stdout}");
}

#[test]
fn an_untrusted_certificate_stops_the_readiness_check_at_once_with_sb310() {
    let served = Served::start(SimTls::generate(None).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let other = write(dir.path(), "other-ca.pem", SimCa::generate("other").unwrap().cert_pem());
    let out = bin()
        .args(short_run(&tokenizer()))
        .args(["--base-url", &served.sim().base_url(), "--model", "sim-model"])
        .args(["--cacert", other.to_str().unwrap(), "--ready-check-timeout-sec", "120"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    // Not SB301 after the whole timeout: the typed failure ends the loop on the first attempt.
    assert!(stderr.contains("error[SB310]") && !stderr.contains("not ready after"), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("SB310")).unwrap();
    assert!(line.contains("--cacert") && line.contains("--insecure"), "{line}");
}

#[test]
fn ssl_cert_file_is_honoured() {
    let served = Served::start(SimTls::generate(None).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", served.sim().tls_ca_pem().unwrap());
    let out = bin()
        .args(short_run(&tokenizer()))
        .args(["--base-url", &served.sim().base_url(), "--model", "sim-model"])
        .env("SSL_CERT_FILE", &ca)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("TLS trust: SSL_CERT_FILE="), "{stdout}");
}

#[test]
fn mutual_tls_with_and_without_a_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let client_ca = SimCa::generate("client CA").unwrap();
    let ca_path = write(dir.path(), "client-ca.pem", client_ca.cert_pem());
    let id = client_ca.issue_client("bench").unwrap();
    let cert = write(dir.path(), "client.crt", &id.cert_pem);
    let key = write(dir.path(), "client.key", &id.key_pem);
    let tok = tokenizer();
    let base = || {
        let mut c = bin();
        c.args(sim_flags(&tok)).args(["--sim-tls", "--sim-client-ca", ca_path.to_str().unwrap()]);
        c.args(["--model", "servebench-sim", "--ready-check-timeout-sec", "120"]);
        c
    };
    let ok = base()
        .args(["--client-cert", cert.to_str().unwrap(), "--client-key", key.to_str().unwrap()])
        .output();
    let ok = ok.unwrap();
    assert!(ok.status.success(), "{}\n{}", text(&ok.stdout), text(&ok.stderr));
    let refused = base().output().unwrap();
    let stderr = text(&refused.stderr);
    assert!(!refused.status.success());
    assert!(stderr.contains("error[SB310]") && stderr.contains("--client-cert"), "{stderr}");
    assert!(!stderr.contains("not ready after"), "{stderr}");
}

#[test]
fn https_proxy_from_the_environment_tunnels_and_credentials_are_never_printed() {
    let served = Served::start(SimTls::generate(None).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", served.sim().tls_ca_pem().unwrap());
    // base64("bench:hunter2")
    let proxy = served.rt.block_on(proxy::TestProxy::start(Some("Basic YmVuY2g6aHVudGVyMg==")));
    let proxy_url = format!("http://bench:hunter2@{}", proxy.addr);
    let run = |extra: &[(&str, &str)]| {
        let mut c = bin();
        c.args(short_run(&tokenizer()))
            .args(["--base-url", &served.sim().base_url(), "--model", "sim-model"])
            .args(["--cacert", ca.to_str().unwrap(), "--save-result", "--save-detailed"])
            .args(["--result-dir", dir.path().to_str().unwrap(), "--result-filename", "run.json"])
            .env("https_proxy", &proxy_url);
        for (k, v) in extra {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let out = run(&[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("Proxy: http://***@{}", proxy.addr)), "{stdout}");
    let result = std::fs::read_to_string(dir.path().join("run.json")).unwrap();
    for s in [&stdout, &stderr, &result] {
        assert!(!s.contains("hunter2") && !s.contains("YmVuY2g6aHVudGVyMg"), "credentials leaked");
    }
    let seen = proxy.seen();
    assert!(
        !seen.is_empty() && seen.iter().all(|s| s.request_line.starts_with("CONNECT 127.0.0.1:")),
        "{seen:?}"
    );
    assert!(seen.iter().all(|s| s.proxy_authorization.as_deref() == Some("Basic YmVuY2g6aHVudGVyMg==")));

    // NO_PROXY (uppercase, as a CIDR) bypasses it; so does --no-proxy.
    let before = proxy.seen().len();
    let out = run(&[("NO_PROXY", "127.0.0.0/8")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("Proxy:"));
    assert_eq!(proxy.seen().len(), before, "NO_PROXY host went through the proxy");
}

#[test]
fn a_proxy_refusing_credentials_is_sb312_without_the_password() {
    let served = Served::start(SimTls::generate(None).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", served.sim().tls_ca_pem().unwrap());
    let proxy = served.rt.block_on(proxy::TestProxy::start(Some("Basic c29tZW9uZTplbHNl")));
    let out = bin()
        .args(short_run(&tokenizer()))
        .args([
            "--base-url",
            &served.sim().base_url(),
            "--model",
            "sim-model",
            "--cacert",
            ca.to_str().unwrap(),
        ])
        .env("HTTPS_PROXY", format!("http://bench:wrongpass@{}", proxy.addr))
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("error[SB312]") && stderr.contains("407"), "{stderr}");
    assert!(!stderr.contains("wrongpass") && !text(&out.stdout).contains("wrongpass"), "{stderr}");
}
