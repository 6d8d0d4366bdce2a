//! HTTP proxies from the environment, as `vllm bench serve` honours them (aiohttp `trust_env`):
//! `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` / `NO_PROXY` in either case (lowercase wins, as in
//! Python's `urllib`), `CONNECT` tunnels for `https` targets and absolute-form requests for
//! `http` targets, `Proxy-Authorization: Basic` from the proxy URL's credentials.
//!
//! The rules (which variable applies, `NO_PROXY` host / domain-suffix / IP / CIDR / `*`
//! matching, credentials) are `hyper-util`'s `Matcher`; the variables are passed in
//! ([`ProxyEnv`]), never read here. Credentials never leave this module except as the header
//! value (marked sensitive): every display form is redacted.

use http::header::HeaderValue;
use hyper_util::client::proxy::matcher::Matcher;
use servebench_core::secret::Redactor;
use servebench_core::{BenchError, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use url::Url;

use super::error::ConnectError;
use super::failure::ConnectFailure;

/// Proxy variables as found in the environment.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub all_proxy: Option<String>,
    pub no_proxy: Option<String>,
    /// The names the proxy variables were read under (`http_proxy` or `HTTP_PROXY`), for the
    /// run header and messages.
    pub names: ProxyVarNames,
}

/// The name each proxy variable was found under (uppercase when not read from a process).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyVarNames {
    pub http: &'static str,
    pub https: &'static str,
    pub all: &'static str,
}

impl Default for ProxyVarNames {
    fn default() -> Self {
        ProxyVarNames { http: "HTTP_PROXY", https: "HTTPS_PROXY", all: "ALL_PROXY" }
    }
}

impl std::fmt::Debug for ProxyEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = |v: &Option<String>| v.as_deref().map(redact);
        f.debug_struct("ProxyEnv")
            .field("http_proxy", &r(&self.http_proxy))
            .field("https_proxy", &r(&self.https_proxy))
            .field("all_proxy", &r(&self.all_proxy))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

impl ProxyEnv {
    /// Reads the variables of this process.
    pub fn from_process() -> ProxyEnv {
        ProxyEnv::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads the variables through `get` (lowercase first, then uppercase; empty = unset).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> ProxyEnv {
        // The value and the name it was found under.
        let var = |lower: &'static str, upper: &'static str| {
            get(lower)
                .map(|v| (v, lower))
                .or_else(|| get(upper).map(|v| (v, upper)))
                .filter(|(v, _)| !v.trim().is_empty())
        };
        let (http, https, all) = (
            var("http_proxy", "HTTP_PROXY"),
            var("https_proxy", "HTTPS_PROXY"),
            var("all_proxy", "ALL_PROXY"),
        );
        let d = ProxyVarNames::default();
        ProxyEnv {
            names: ProxyVarNames {
                http: http.as_ref().map_or(d.http, |v| v.1),
                https: https.as_ref().map_or(d.https, |v| v.1),
                all: all.as_ref().map_or(d.all, |v| v.1),
            },
            http_proxy: http.map(|v| v.0),
            https_proxy: https.map(|v| v.0),
            all_proxy: all.map(|v| v.0),
            no_proxy: var("no_proxy", "NO_PROXY").map(|v| v.0),
        }
    }
}

/// Proxy settings of a client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyOptions {
    pub env: ProxyEnv,
    /// `--no-proxy`: ignore every proxy variable.
    pub disabled: bool,
}

/// How requests to the origin go through a proxy.
#[derive(Clone)]
pub(crate) struct ProxyRoute {
    pub host: String,
    pub port: u16,
    /// `http://host:port` with credentials shown as `***`.
    pub display: String,
    /// `Proxy-Authorization` value (sensitive), from the proxy URL's credentials.
    pub auth: Option<HeaderValue>,
    /// `CONNECT` tunnel (https targets); otherwise absolute-form requests (http targets).
    pub tunnel: bool,
    /// Which variable named it (for the run header).
    pub source: &'static str,
}

impl std::fmt::Debug for ProxyRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyRoute").field("proxy", &self.display).field("tunnel", &self.tunnel).finish()
    }
}

/// `url` with its userinfo replaced by `***` (for messages); unparsable text is hidden whole.
pub fn redact(url: &str) -> String {
    let with_scheme = if url.contains("://") { url.to_owned() } else { format!("http://{url}") };
    match Url::parse(&with_scheme) {
        Ok(u) => {
            let host = u.host_str().unwrap_or("");
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            let cred = if u.username().is_empty() && u.password().is_none() { "" } else { "***@" };
            format!("{}://{cred}{host}{port}", u.scheme())
        }
        Err(_) => "(unparsable proxy URL)".into(),
    }
}

/// Adds the credentials of every proxy URL in `env` (whichever applies) to `r`.
pub(crate) fn add_credentials(env: &ProxyEnv, r: &mut Redactor) {
    for raw in [&env.http_proxy, &env.https_proxy, &env.all_proxy].into_iter().flatten() {
        let with_scheme = if raw.contains("://") { raw.clone() } else { format!("http://{raw}") };
        if let Ok(u) = Url::parse(&with_scheme) {
            if !u.username().is_empty() || u.password().is_some() {
                r.add_credentials(u.username(), u.password().unwrap_or(""));
            }
        }
    }
}

fn proxy_error(proxy: &str, detail: impl Into<String>) -> BenchError {
    BenchError::Proxy { proxy: proxy.to_owned(), detail: detail.into() }
}

/// The proxy for `target` (`None`: connect directly), by the rules of `hyper-util`'s matcher.
pub(crate) fn route(opts: &ProxyOptions, target: &Url) -> Result<Option<ProxyRoute>> {
    if opts.disabled {
        return Ok(None);
    }
    let tunnel = target.scheme() == "https";
    let env = &opts.env;
    let (raw, source) = match (tunnel, &env.https_proxy, &env.http_proxy, &env.all_proxy) {
        (true, Some(v), _, _) => (v, env.names.https),
        (false, _, Some(v), _) => (v, env.names.http),
        (_, _, _, Some(v)) => (v, env.names.all),
        _ => return Ok(None),
    };
    // `*` bypasses every host, IP addresses included (curl, Python); hyper-util's matcher
    // applies it to domain names only.
    if env.no_proxy.as_deref().is_some_and(|n| n.split(',').any(|e| e.trim() == "*")) {
        return Ok(None);
    }
    let shown = redact(raw);
    let host = match target.host() {
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        Some(h) => h.to_string(),
        None => return Ok(None),
    };
    let dst: http::Uri = format!("{}://{host}/", target.scheme())
        .parse()
        .map_err(|_| proxy_error(&shown, "the target URL cannot be matched against NO_PROXY"))?;
    // NO_PROXY first: a host it names never needs the proxy, whatever the proxy URL.
    let no = env.no_proxy.clone().unwrap_or_default();
    if Matcher::builder().all("http://0.0.0.0:1").no(no.clone()).build().intercept(&dst).is_none() {
        return Ok(None);
    }
    let scheme = raw.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        None | Some("http") => {}
        Some(s) => {
            return Err(proxy_error(
                &shown,
                format!("{source} uses a {s}:// proxy; only http:// proxies are supported"),
            ))
        }
    }
    // The proxy URL must parse whole: the matcher below reads an out-of-range port
    // (`:99999`) as no port, which would connect to port 80 of the proxy host.
    let with_scheme = if raw.contains("://") { raw.clone() } else { format!("http://{raw}") };
    let parsed = Url::parse(&with_scheme).map_err(|e| {
        proxy_error(&shown, format!("{source} is not a valid proxy URL ({e}); use http://host:port"))
    })?;
    let matcher = Matcher::builder()
        .http(env.http_proxy.clone().unwrap_or_default())
        .https(env.https_proxy.clone().unwrap_or_default())
        .all(env.all_proxy.clone().unwrap_or_default())
        .no(no)
        .build();
    let Some(intercept) = matcher.intercept(&dst) else {
        return Err(proxy_error(&shown, format!("{source} is not a proxy URL (use http://host:port)")));
    };
    let uri = intercept.uri();
    let phost = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
    if phost.is_empty() {
        return Err(proxy_error(&shown, format!("{source} names no proxy host")));
    }
    let port = parsed.port().unwrap_or(80);
    let auth = intercept.basic_auth().cloned().map(|mut v| {
        v.set_sensitive(true);
        v
    });
    Ok(Some(ProxyRoute { host: phost, port, display: shown, auth, tunnel, source }))
}

/// Largest CONNECT response head read.
const MAX_CONNECT_HEAD: usize = 16 << 10;

/// How a CONNECT handshake failed.
#[derive(Debug)]
pub(crate) struct TunnelFail {
    pub detail: String,
    /// Waiting cannot help (4xx from the proxy, a malformed answer).
    pub permanent: bool,
}

/// Opens a `CONNECT` tunnel to `authority` (`host:port`) through the proxy on `tcp`.
pub(crate) async fn tunnel(
    tcp: &mut TcpStream,
    route: &ProxyRoute,
    authority: &str,
) -> std::result::Result<(), TunnelFail> {
    let mut head = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n").into_bytes();
    if let Some(auth) = &route.auth {
        head.extend_from_slice(b"Proxy-Authorization: ");
        head.extend_from_slice(auth.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    let io_fail =
        |what: &str, e: std::io::Error| TunnelFail { detail: format!("{what}: {e}"), permanent: false };
    tcp.write_all(&head).await.map_err(|e| io_fail("sending CONNECT", e))?;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    loop {
        let n = tcp.read(&mut chunk).await.map_err(|e| io_fail("reading the CONNECT answer", e))?;
        if n == 0 {
            let detail = format!("the proxy closed the connection before answering CONNECT {authority}");
            return Err(TunnelFail { detail, permanent: false });
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let code = resp.code.unwrap_or(0);
                if (200..300).contains(&code) {
                    if len != buf.len() {
                        let detail = "the proxy sent bytes after its CONNECT answer".to_owned();
                        return Err(TunnelFail { detail, permanent: true });
                    }
                    return Ok(());
                }
                let reason = resp.reason.unwrap_or("").trim();
                let hint = match code {
                    407 if route.auth.is_some() => " (the proxy refused the credentials in the proxy URL)",
                    407 => " (put credentials in the proxy URL: http://user:password@proxy:port)",
                    _ => "",
                };
                let detail = format!("CONNECT {authority} answered HTTP {code} {reason}{hint}");
                return Err(TunnelFail { detail, permanent: (400..500).contains(&code) });
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_CONNECT_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Err(TunnelFail { detail: "the CONNECT answer is too long".into(), permanent: true })
            }
            Err(e) => {
                let detail = format!("the proxy's answer to CONNECT is not HTTP ({e})");
                return Err(TunnelFail { detail, permanent: true });
            }
        }
    }
}

impl super::HttpClient {
    /// The message of a failed TCP connect (or resolve); through a proxy, notes a permanent
    /// proxy failure (an unreachable proxy is a configuration problem, not a server starting).
    pub(super) fn proxy_unreachable(&self, e: ConnectError) -> ConnectError {
        match &self.inner.proxy {
            Some(p) => {
                let detail = self.redactor().redact(&format!("unreachable: {e}")).into_owned();
                let f = ConnectFailure::Proxy { proxy: p.display.clone(), detail, permanent: true };
                self.inner.failures.set(f.clone());
                ConnectError::Proxy(f)
            }
            None => e,
        }
    }

    /// Opens the CONNECT tunnel when the origin is reached through a proxy by tunnel.
    pub(super) async fn open_tunnel(&self, tcp: &mut TcpStream) -> std::result::Result<(), ConnectError> {
        let Some(p) = self.inner.proxy.as_ref().filter(|p| p.tunnel) else { return Ok(()) };
        let o = &self.inner.origin;
        let host = if o.host.contains(':') { format!("[{}]", o.host) } else { o.host.clone() };
        let authority = format!("{host}:{}", o.port);
        tunnel(tcp, p, &authority).await.map_err(|t| {
            // The reason phrase is the proxy's text.
            let detail = self.redactor().redact(&t.detail).into_owned();
            let f = ConnectFailure::Proxy { proxy: p.display.clone(), detail, permanent: t.permanent };
            self.inner.failures.set(f.clone());
            ConnectError::Proxy(f)
        })
    }
}

#[cfg(test)]
mod tests;
