//! The client's TLS trust and proxy paths against the simulator serving HTTPS
//! (`servebench_sim::start_tls`) and a small local proxy: `--cacert`, `SSL_CERT_FILE`,
//! `SSL_CERT_DIR`, mutual TLS, the permanent certificate error (SB310), IP-address and DNS
//! hostname checks, CONNECT tunnels and absolute-form requests with `Proxy-Authorization`,
//! `NO_PROXY`, and proxy failures (SB312). Nothing reads this process's environment.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use http::HeaderMap;
use servebench_client::transport::{ProxyEnv, ProxyOptions, TlsOptions, TrustEnv, TrustSource};
use servebench_client::{
    execute, BackendKind, ClientOptions, ExecOptions, HttpClient, RequestTarget, TargetConfig,
};
use servebench_core::{Outcome, Prompt, RequestRecord, RequestSpec, Result, RunClock};
use servebench_sim::{SimCa, SimHandle, SimTls};
use servebench_testkit::net::closed_port;
use servebench_testkit::proxy::TestProxy;
use servebench_testkit::tokenizers::byte_tokenizer;

fn sim_config() -> servebench_sim::SimConfig {
    servebench_sim::SimConfig::new("sim-model", byte_tokenizer()).with_fixed_timing_ms(1.0, 1.0).unwrap()
}

async fn https_sim(tls: SimTls) -> SimHandle {
    servebench_sim::start_tls(sim_config(), "127.0.0.1:0".parse().unwrap(), tls).await.unwrap()
}

async fn http_sim() -> SimHandle {
    servebench_sim::start(sim_config(), "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn client(base_url: String, tls: TlsOptions, proxy: ProxyOptions) -> HttpClient {
    HttpClient::new(ClientOptions { base_url, tls, proxy, ..ClientOptions::default() }).unwrap()
}

fn cacert(path: PathBuf) -> TlsOptions {
    TlsOptions { cacert: Some(path), ..TlsOptions::default() }
}

async fn models(c: &HttpClient) -> Result<serde_json::Value> {
    c.get_json::<serde_json::Value>("/v1/models", &HeaderMap::new()).await
}

#[tokio::test]
async fn cacert_trusts_the_simulator_by_ip_address_and_by_dns_name() {
    let dir = tempfile::tempdir().unwrap();
    let sim = https_sim(SimTls::generate(None).unwrap()).await;
    let ca = write(dir.path(), "ca.pem", sim.tls_ca_pem().unwrap());
    // 127.0.0.1: checked against the certificate's IP SAN (no SNI is sent for an IP).
    let c = client(sim.base_url(), cacert(ca.clone()), ProxyOptions::default());
    assert!(matches!(c.trust(), Some(TrustSource::CaCert { certs: 1, .. })), "{:?}", c.trust());
    assert_eq!(models(&c).await.unwrap()["data"][0]["id"], "sim-model");
    // localhost: SNI and the DNS SAN.
    let url = format!("https://localhost:{}", sim.local_addr().port());
    let c = client(url, cacert(ca), ProxyOptions::default());
    assert_eq!(models(&c).await.unwrap()["data"][0]["id"], "sim-model");
}

#[tokio::test]
async fn an_ipv6_literal_is_checked_against_the_ip_san() {
    let dir = tempfile::tempdir().unwrap();
    let tls = SimTls::generate(None).unwrap();
    let sim = servebench_sim::start_tls(sim_config(), "[::1]:0".parse().unwrap(), tls).await.unwrap();
    let ca = write(dir.path(), "ca.pem", sim.tls_ca_pem().unwrap());
    let url = format!("https://[::1]:{}", sim.local_addr().port());
    let c = client(url, cacert(ca), ProxyOptions::default());
    assert_eq!(models(&c).await.unwrap()["data"][0]["id"], "sim-model");
}

#[tokio::test]
async fn ssl_cert_file_and_ssl_cert_dir_are_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let sim = https_sim(SimTls::generate(None).unwrap()).await;
    let pem = sim.tls_ca_pem().unwrap();
    let file = write(dir.path(), "bundle.pem", pem);
    let env = TrustEnv { ssl_cert_file: Some(file), ssl_cert_dir: None };
    let c = client(sim.base_url(), TlsOptions { env, ..TlsOptions::default() }, ProxyOptions::default());
    assert!(matches!(c.trust(), Some(TrustSource::Env { .. })));
    models(&c).await.unwrap();

    // A plain directory of PEM files, and an `openssl rehash` one (hash-named symlinks), in a
    // colon-separated list as OpenSSL reads SSL_CERT_DIR.
    let plain = tempfile::tempdir().unwrap();
    write(plain.path(), "sim-ca.pem", pem);
    let hashed = tempfile::tempdir().unwrap();
    let target = write(hashed.path(), "sim-ca.crt", pem);
    std::os::unix::fs::symlink(&target, hashed.path().join("5d8a3c1e.0")).unwrap();
    for dirs in [plain.path().as_os_str().to_owned(), {
        let mut s = hashed.path().as_os_str().to_owned();
        s.push(":/nonexistent-is-reported");
        s
    }] {
        let env = TrustEnv { ssl_cert_file: None, ssl_cert_dir: Some(dirs.clone()) };
        let r = HttpClient::new(ClientOptions {
            base_url: sim.base_url(),
            tls: TlsOptions { env, ..TlsOptions::default() },
            ..ClientOptions::default()
        });
        if dirs.to_string_lossy().contains("nonexistent") {
            // A directory that is not there is a coded error naming it.
            let e = r.unwrap_err();
            assert_eq!(e.code().as_str(), "SB311", "{e}");
            assert!(e.to_string().contains("/nonexistent-is-reported"), "{e}");
            continue;
        }
        models(&r.unwrap()).await.unwrap();
    }
    let env = TrustEnv { ssl_cert_file: None, ssl_cert_dir: Some(hashed.path().as_os_str().to_owned()) };
    let c = client(sim.base_url(), TlsOptions { env, ..TlsOptions::default() }, ProxyOptions::default());
    models(&c).await.unwrap();
}

#[tokio::test]
async fn an_untrusted_ca_is_a_permanent_sb310_naming_cacert_and_insecure() {
    let dir = tempfile::tempdir().unwrap();
    let sim = https_sim(SimTls::generate(None).unwrap()).await;
    let other = SimCa::generate("some other CA").unwrap();
    let wrong = write(dir.path(), "other.pem", other.cert_pem());
    let c = client(sim.base_url(), cacert(wrong), ProxyOptions::default());
    let e = models(&c).await.unwrap_err();
    assert_eq!(e.code().as_str(), "SB310", "{e}");
    let line = e.user_line();
    assert!(line.contains("--cacert") && line.contains("--insecure") && !line.contains('\n'), "{line}");
    assert!(line.contains("unknown certificate authority"), "{line}");
    let f = c.connect_failure().unwrap();
    assert!(f.is_permanent());
    // --insecure still connects.
    let c = HttpClient::new(ClientOptions {
        base_url: sim.base_url(),
        insecure: true,
        ..ClientOptions::default()
    })
    .unwrap();
    models(&c).await.unwrap();
}

#[tokio::test]
async fn a_certificate_for_another_name_fails_the_hostname_check() {
    let dir = tempfile::tempdir().unwrap();
    let ca = SimCa::generate("test CA").unwrap();
    let server = ca.issue_server(&["other.example", "10.9.9.9"]).unwrap();
    let sim = https_sim(SimTls::from_parts(ca.cert_pem(), &server, None).unwrap()).await;
    let ca_path = write(dir.path(), "ca.pem", ca.cert_pem());
    let c = client(sim.base_url(), cacert(ca_path), ProxyOptions::default());
    let e = models(&c).await.unwrap_err();
    assert_eq!(e.code().as_str(), "SB310", "{e}");
    assert!(e.to_string().contains("does not name"), "{e}");
}

#[tokio::test]
async fn mutual_tls_accepts_a_signed_client_certificate_and_rejects_others() {
    let dir = tempfile::tempdir().unwrap();
    let client_ca = SimCa::generate("client CA").unwrap();
    let client_ca_path = write(dir.path(), "client-ca.pem", client_ca.cert_pem());
    let sim = https_sim(SimTls::generate(Some(&client_ca_path)).unwrap()).await;
    let server_ca = write(dir.path(), "server-ca.pem", sim.tls_ca_pem().unwrap());
    let good = client_ca.issue_client("bench").unwrap();
    let with = |cert: &servebench_sim::IssuedCert, name: &str| TlsOptions {
        cacert: Some(server_ca.clone()),
        client_cert: Some(write(dir.path(), &format!("{name}.crt"), &cert.cert_pem)),
        client_key: Some(write(dir.path(), &format!("{name}.key"), &cert.key_pem)),
        env: TrustEnv::default(),
    };
    let c = client(sim.base_url(), with(&good, "good"), ProxyOptions::default());
    models(&c).await.unwrap();

    // No client certificate, and one signed by another CA: the server refuses; permanent.
    let stranger = SimCa::generate("stranger").unwrap().issue_client("bench").unwrap();
    for opts in [cacert(server_ca.clone()), with(&stranger, "stranger")] {
        let c = client(sim.base_url(), opts, ProxyOptions::default());
        let e = models(&c).await.unwrap_err();
        let f = c.connect_failure().unwrap_or_else(|| panic!("no typed failure for {e}"));
        assert!(f.is_permanent(), "{f:?}");
        let msg = f.to_error("GET /v1/models").user_line();
        assert!(msg.starts_with("error[SB310]") && msg.contains("--client-cert"), "{msg}");
    }
}

fn proxy_env(pairs: &[(&str, &str)]) -> ProxyOptions {
    let map: std::collections::HashMap<String, String> =
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    ProxyOptions { env: ProxyEnv::from_lookup(|k| map.get(k).cloned()), disabled: false }
}

#[tokio::test]
async fn https_through_a_connect_tunnel_with_proxy_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let sim = https_sim(SimTls::generate(None).unwrap()).await;
    let ca = write(dir.path(), "ca.pem", sim.tls_ca_pem().unwrap());
    // base64("bench:pa ss") — the password is percent-encoded in the URL.
    let proxy = TestProxy::start(Some("Basic YmVuY2g6cGEgc3M=")).await;
    let url = format!("http://bench:pa%20ss@{}", proxy.addr);
    let c = client(sim.base_url(), cacert(ca.clone()), proxy_env(&[("HTTPS_PROXY", &url)]));
    let summary = c.proxy_summary().unwrap();
    assert!(
        summary.contains("***@127.0.0.1") && summary.contains("CONNECT") && !summary.contains("pa"),
        "{summary}"
    );
    assert!(!format!("{c:?}").contains("pa%20ss"));
    models(&c).await.unwrap();
    let seen = proxy.seen();
    assert_eq!(seen[0].request_line, format!("CONNECT 127.0.0.1:{} HTTP/1.1", sim.local_addr().port()));
    assert_eq!(seen[0].proxy_authorization.as_deref(), Some("Basic YmVuY2g6cGEgc3M="));

    // NO_PROXY bypasses it (IP, CIDR).
    for no in ["127.0.0.1", "127.0.0.0/8", "*"] {
        let c =
            client(sim.base_url(), cacert(ca.clone()), proxy_env(&[("https_proxy", &url), ("no_proxy", no)]));
        assert!(c.proxy_summary().is_none());
        models(&c).await.unwrap();
    }
    assert_eq!(proxy.seen().len(), 1, "NO_PROXY hosts never reach the proxy");
}

/// A generation request through a CONNECT tunnel to an HTTPS server opens its connection:
/// its phases have the connect (to the proxy, tunnel included) and the TLS handshake with the
/// server, no DNS (the proxy is an IP address); the next request reuses the tunnel.
#[tokio::test]
async fn phases_through_a_connect_tunnel_have_connect_and_tls_then_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let sim = https_sim(SimTls::generate(None).unwrap()).await;
    let ca = write(dir.path(), "ca.pem", sim.tls_ca_pem().unwrap());
    let proxy = TestProxy::start(None).await;
    let url = format!("http://{}", proxy.addr);
    let c = client(sim.base_url(), cacert(ca), proxy_env(&[("HTTPS_PROXY", &url)]));
    let tcfg = TargetConfig {
        backend: BackendKind::Completions,
        model: "sim-model".into(),
        ..TargetConfig::default()
    };
    let target = RequestTarget::new(&c, &tcfg).unwrap();
    let spec = RequestSpec::new(0, Prompt::Text(Arc::from("hello through the tunnel")), 0, 4);
    let clock = RunClock::start();
    let mut phases = Vec::new();
    for i in 0..2 {
        let rec = RequestRecord::scheduled(i, format!("t-{i}"), 0, 0, 4);
        let rec = execute(&c, &target, &spec, rec, &clock, &ExecOptions::default()).await;
        assert_eq!(rec.outcome, Outcome::Completed, "{:?}", rec.error);
        phases.push(rec.phases.unwrap());
    }
    let (first, second) = (phases[0], phases[1]);
    assert!(!first.reused && first.connect_us.is_some() && first.tls_us.is_some(), "{first:?}");
    assert_eq!(first.dns_us, None, "{first:?}");
    assert!(second.reused && second.connect_us.is_none() && second.tls_us.is_none(), "{second:?}");
    assert_eq!(proxy.seen().iter().filter(|s| s.request_line.starts_with("CONNECT ")).count(), 1);
}

#[tokio::test]
async fn http_through_a_proxy_uses_absolute_form_requests() {
    let sim = http_sim().await;
    let proxy = TestProxy::start(Some("Basic dTpw")).await;
    let url = format!("http://u:p@{}", proxy.addr);
    let c = client(sim.base_url(), TlsOptions::default(), proxy_env(&[("HTTP_PROXY", &url)]));
    models(&c).await.unwrap();
    let seen = proxy.seen();
    let expect = format!("GET http://127.0.0.1:{}/v1/models HTTP/1.1", sim.local_addr().port());
    assert_eq!(seen[0].request_line, expect);
    assert_eq!(seen[0].proxy_authorization.as_deref(), Some("Basic dTpw"));
    // The generation path goes the same way (a streamed completion).
    let tcfg = TargetConfig {
        backend: BackendKind::Completions,
        model: "sim-model".into(),
        ignore_eos: true,
        ..TargetConfig::default()
    };
    let target = RequestTarget::new(&c, &tcfg).unwrap();
    let spec = RequestSpec::new(0, Prompt::Text(Arc::from("hello through the proxy")), 0, 4);
    let rec = RequestRecord::scheduled(0, "p-0".into(), 0, 0, 4);
    let rec = execute(&c, &target, &spec, rec, &RunClock::start(), &ExecOptions::default()).await;
    assert_eq!(rec.outcome, Outcome::Completed, "{:?}", rec.error);
    let seen = proxy.seen();
    let expect = format!("POST http://127.0.0.1:{}/v1/completions HTTP/1.1", sim.local_addr().port());
    assert_eq!(seen.last().unwrap().request_line, expect);
    assert_eq!(seen.last().unwrap().proxy_authorization.as_deref(), Some("Basic dTpw"));
    // --no-proxy ignores the variables.
    let n = proxy.seen().len();
    let mut off = proxy_env(&[("HTTP_PROXY", &url)]);
    off.disabled = true;
    models(&client(sim.base_url(), TlsOptions::default(), off)).await.unwrap();
    assert_eq!(proxy.seen().len(), n);
}

#[tokio::test]
async fn proxy_failures_are_sb312_naming_the_redacted_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let sim = https_sim(SimTls::generate(None).unwrap()).await;
    let ca = write(dir.path(), "ca.pem", sim.tls_ca_pem().unwrap());
    // 407: wrong credentials.
    let proxy = TestProxy::start(Some("Basic cmlnaHQ6b25l")).await;
    let url = format!("http://wrong:secret@{}", proxy.addr);
    let c = client(sim.base_url(), cacert(ca.clone()), proxy_env(&[("HTTPS_PROXY", &url)]));
    let e = models(&c).await.unwrap_err();
    let line = e.user_line();
    assert_eq!(e.code().as_str(), "SB312", "{line}");
    assert!(
        line.contains("407") && line.contains("http://***@127.0.0.1") && !line.contains("secret"),
        "{line}"
    );
    assert!(c.connect_failure().unwrap().is_permanent());
    // Unreachable proxy.
    let url = format!("http://127.0.0.1:{}", closed_port());
    let c = client(sim.base_url(), cacert(ca), proxy_env(&[("ALL_PROXY", &url)]));
    let e = models(&c).await.unwrap_err();
    assert_eq!(e.code().as_str(), "SB312", "{e}");
    assert!(e.to_string().contains("unreachable"), "{e}");
}
