//! HTTP/1.1 client with our own connection pool.
//!
//! Why not reqwest: a benchmark must know whether any byte of a request was written (a POST
//! is never retried after that), must timestamp body frames as they arrive, and must count the
//! connections it opens and finds stale. This client gives those guarantees:
//!
//! - idle connections are reused LIFO; one is checked before reuse (a close the server sent
//!   while it was idle is read at checkout) and replaced when stale;
//! - if a pooled connection fails before any byte of the request was written, the request is
//!   sent on a fresh connection (counted as a reconnect); once bytes may have been written, a
//!   failure is final;
//! - a connection returns to the pool only after its response body was read to the end;
//! - HTTP/1.1 is our own small codec (`h1.rs`): body data is decoded in place from the
//!   connection's read buffer, so a streamed event costs one read and no allocation.

pub(crate) mod coding;
mod conn;
pub(crate) mod control;
pub(crate) mod error;
pub(crate) mod failure;
mod gateway;
pub(crate) mod h1;
pub mod kstamp;
mod limits;
pub mod path;
pub(crate) mod proxy;
mod reach;
pub(crate) mod redirect;
mod send;
pub(crate) mod tls;

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::header::HeaderValue;
use http::Uri;
use servebench_core::secret::Redactor;
use servebench_core::{BenchError, Result};
use tokio::net::TcpStream;
use tokio::sync::OnceCell;
use tokio_rustls::TlsConnector;
use url::Url;

pub use failure::ConnectFailure;
use failure::FailureLatch;
use proxy::ProxyRoute;
pub use proxy::{ProxyEnv, ProxyOptions, ProxyVarNames};
pub use tls::{TlsOptions, TrustEnv, TrustSource, FIX_CLIENT_CERT};

pub(crate) use conn::{Conn, ConnSetup, Incoming};
use error::ConnectError;
pub(crate) use error::{SendFailKind, SendFailure};
pub(crate) use send::{Sent, SentPhases};

/// Request body type used on every connection.
pub(crate) type ReqBody = bytes::Bytes;
pub use control::RawResponse;

/// Said once in the console when the client stops pooling connections.
pub const NO_POOLING_NOTICE: &str = "server closes connections after each response; not pooling";

/// Settings of an [`HttpClient`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// `http://host:port[/prefix]` or `https://...`; endpoint paths are appended to the prefix.
    pub base_url: String,
    /// Accept any TLS certificate (`--insecure`).
    pub insecure: bool,
    /// Bound on TCP connect + TLS handshake.
    pub connect_timeout: Duration,
    /// Most idle connections kept for reuse.
    pub max_idle: usize,
    /// Idle connections older than this are closed instead of reused (`None`: no limit).
    /// Servers close idle keep-alive connections (uvicorn after 5 s); closing them a little
    /// earlier on our side avoids racing the server's close.
    pub idle_timeout: Option<Duration>,
    /// Bound on control-plane requests (`get_json`, `post_json`, `request_raw`).
    pub control_timeout: Duration,
    /// Trusted roots and client identity (`--cacert`, `--client-cert`, `SSL_CERT_FILE`, ...).
    pub tls: TlsOptions,
    /// Proxies (`HTTPS_PROXY`, ..., `--no-proxy`).
    pub proxy: ProxyOptions,
    /// The run's secrets (API key, sensitive `--header` values: [`crate::headers::redactor`]);
    /// the client adds the proxy URLs' credentials. Applied to all server text it hands out:
    /// request records ([`crate::request`]), control-plane bodies and failure messages.
    pub secrets: Redactor,
    /// Time reads with the kernel's receive timestamps where supported (`--no-kernel-timestamps`
    /// turns it off; [`kstamp`]).
    pub kernel_timestamps: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            base_url: "http://127.0.0.1:8000".into(),
            insecure: false,
            connect_timeout: Duration::from_secs(30),
            max_idle: 2048,
            idle_timeout: None,
            control_timeout: Duration::from_secs(60),
            tls: TlsOptions::default(),
            proxy: ProxyOptions::default(),
            secrets: Redactor::new(),
            kernel_timestamps: true,
        }
    }
}

/// Connection counters (cumulative since the client was created).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// TCP (+TLS) connections opened.
    pub opened: u64,
    /// Requests sent on a reused idle connection.
    pub reused: u64,
    /// Idle connections found closed at checkout (or that rejected a request unsent).
    pub stale: u64,
    /// Idle connections closed because they exceeded `idle_timeout` or `max_idle`.
    pub expired: u64,
    /// Requests sent a second time, on a fresh connection, because the reused connection they
    /// were written on closed (EOF or reset) before one byte of a response arrived.
    pub resent: u64,
}

#[derive(Debug, Default)]
struct Counters {
    opened: AtomicU64,
    reused: AtomicU64,
    stale: AtomicU64,
    expired: AtomicU64,
    resent: AtomicU64,
}

/// A connection found closed within this long after its last response counts as "the server
/// closes after each response" (an idle keep-alive timeout takes seconds).
const CLOSE_AFTER_RESPONSE_WINDOW: Duration = Duration::from_secs(1);
/// After this many such closes in a row (no successful reuse between them), connections to the
/// origin are no longer pooled.
const CLOSES_BEFORE_NO_POOLING: u32 = 2;

/// What the client learned about the server's connection handling.
#[derive(Debug, Default)]
struct ReuseState {
    /// Pooled connections found closed right after a response, with no successful reuse since.
    closes_in_row: AtomicU32,
    /// The server closes connections after each response without saying so: do not pool.
    no_pooling: AtomicBool,
    /// The console was told about `no_pooling` (it is said once).
    announced: AtomicBool,
}

#[derive(Debug)]
struct Origin {
    tls: bool,
    host: String,
    port: u16,
    host_header: HeaderValue,
    /// Base path prefix without trailing slash.
    prefix: String,
    /// The base URL's query (`?api-version=…` of a gateway), sent on every request whose path
    /// is joined to the prefix; `None` without one.
    query: Option<String>,
    /// `scheme://host:port` for messages (never userinfo).
    display: String,
}

struct Inner {
    origin: Origin,
    opts: ClientOptions,
    tls: Option<TlsConnector>,
    /// Where the TLS roots came from (`None` for `http://`).
    trust: Option<TrustSource>,
    /// The proxy requests go through, if any.
    proxy: Option<ProxyRoute>,
    /// `http://host:port` put before paths (absolute-form requests through a proxy).
    forward_prefix: Option<String>,
    /// The latest certificate or proxy failure (cleared by a successful connect).
    failures: Arc<FailureLatch>,
    addrs: OnceCell<Vec<SocketAddr>>,
    idle: Mutex<Vec<Conn>>,
    counters: Counters,
    reuse: ReuseState,
    redirects: Mutex<redirect::RedirectLog>,
    /// `opts.secrets` plus the proxy credentials.
    redactor: Redactor,
    /// Kernel receive timestamps: on or why not, and the read lags.
    stamping: kstamp::Stamping,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient").field("origin", &self.origin.display).finish()
    }
}

/// The HTTP client. Cheap to clone: clones share the pool.
#[derive(Debug, Clone)]
pub struct HttpClient {
    inner: Arc<Inner>,
}

impl HttpClient {
    /// Creates a client for `opts.base_url`. No connection is opened yet.
    pub fn new(opts: ClientOptions) -> Result<HttpClient> {
        let url = Url::parse(opts.base_url.trim()).map_err(|e| {
            BenchError::config(
                "--base-url",
                format!("'{}' is not a URL ({e})", servebench_core::secret::redact_url(&opts.base_url)),
                "use http://host:port",
            )
        })?;
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            s => {
                return Err(BenchError::config(
                    "--base-url",
                    format!("unsupported scheme '{s}'"),
                    "use http:// or https://",
                ))
            }
        };
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => {
                return Err(BenchError::config("--base-url", "the URL has no host", "use http://host:port"))
            }
        };
        let port = url.port_or_known_default().unwrap_or(if tls { 443 } else { 80 });
        let host_for_header = match url.host() {
            Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
            _ => host.clone(),
        };
        let host_header = match url.port() {
            Some(p) => format!("{host_for_header}:{p}"),
            None => host_for_header.clone(),
        };
        let host_header = HeaderValue::from_str(&host_header)
            .map_err(|_| BenchError::config("--base-url", "invalid host", "use http://host:port"))?;
        let display = format!("{}://{}:{}", url.scheme(), host_for_header, port);
        let prefix = path::normalize_prefix(url.path());
        let query = url.query().filter(|q| !q.is_empty()).map(str::to_owned);
        let (tls, trust) = if tls || opts.tls.names_files() {
            let setup = tls::setup(opts.insecure, &opts.tls)?;
            (tls.then_some(setup.connector), tls.then_some(setup.trust))
        } else {
            (None, None)
        };
        let proxy = proxy::route(&opts.proxy, &url)?;
        let forward_prefix = proxy
            .as_ref()
            .filter(|p| !p.tunnel)
            .map(|_| format!("http://{}", host_header.to_str().unwrap_or("")));
        let mut redactor = opts.secrets.clone();
        proxy::add_credentials(&opts.proxy.env, &mut redactor);
        // A secret query value of the base URL (`?api-key=…`): a server echoing the path.
        for value in servebench_core::secret::secret_query_values(&opts.base_url) {
            redactor.add(value);
        }
        Ok(HttpClient {
            inner: Arc::new(Inner {
                redactor,
                stamping: kstamp::Stamping::new(opts.kernel_timestamps),
                origin: Origin { tls: tls.is_some(), host, port, host_header, prefix, query, display },
                opts,
                tls,
                trust,
                proxy,
                forward_prefix,
                failures: Arc::default(),
                addrs: OnceCell::new(),
                idle: Mutex::new(Vec::new()),
                counters: Counters::default(),
                reuse: ReuseState::default(),
                redirects: Mutex::new(redirect::RedirectLog::default()),
            }),
        })
    }

    /// The options this client was created with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.opts
    }

    /// The run's secrets as this client redacts them from server text.
    pub fn redactor(&self) -> &Redactor {
        &self.inner.redactor
    }

    /// `scheme://host:port` of the server (for messages; never contains credentials).
    pub fn origin(&self) -> &str {
        &self.inner.origin.display
    }

    /// Whether the origin is `https`.
    pub fn is_tls(&self) -> bool {
        self.inner.origin.tls
    }

    /// Where the TLS roots came from (`None` for `http://` origins).
    pub fn trust(&self) -> Option<&TrustSource> {
        self.inner.trust.as_ref()
    }

    /// The proxy in use, for the run header: `http://***@host:port (CONNECT tunnel, from
    /// HTTPS_PROXY)`; credentials are never shown.
    pub fn proxy_summary(&self) -> Option<String> {
        self.inner.proxy.as_ref().map(|p| {
            let how = if p.tunnel { "CONNECT tunnel" } else { "absolute-form requests" };
            format!("{} ({how}, from {})", p.display, p.source)
        })
    }

    /// The latest certificate or proxy failure of a connection attempt (cleared by the next
    /// successful connection). [`ConnectFailure::is_permanent`] tells whether waiting can help.
    pub fn connect_failure(&self) -> Option<ConnectFailure> {
        self.inner.failures.get()
    }

    /// Connection counters.
    pub fn stats(&self) -> PoolStats {
        let c = &self.inner.counters;
        PoolStats {
            opened: c.opened.load(Ordering::Relaxed),
            reused: c.reused.load(Ordering::Relaxed),
            stale: c.stale.load(Ordering::Relaxed),
            expired: c.expired.load(Ordering::Relaxed),
            resent: c.resent.load(Ordering::Relaxed),
        }
    }

    /// Where its receive times come from, and its read lag so far (docs/metrics.md, "Receive
    /// timestamps").
    pub fn receive_timestamps(&self) -> kstamp::ReceiveTimestamps {
        self.inner.stamping.report()
    }

    /// Counts read lags afresh from now (the measured phase's start).
    pub fn reset_receive_stats(&self) {
        self.inner.stamping.stats.reset();
    }

    /// Whether the client stopped pooling connections because the server closes them after
    /// each response without saying so (`Connection: close`).
    pub fn pooling_disabled(&self) -> bool {
        self.inner.reuse.no_pooling.load(Ordering::Relaxed)
    }

    /// The one-line console notice about [`pooling_disabled`](Self::pooling_disabled), returned
    /// once per client (the first call after pooling was disabled), `None` otherwise.
    pub fn take_pooling_notice(&self) -> Option<&'static str> {
        let r = &self.inner.reuse;
        (r.no_pooling.load(Ordering::Relaxed) && !r.announced.swap(true, Ordering::Relaxed))
            .then_some(NO_POOLING_NOTICE)
    }

    /// A connection that carried a response was found closed by the server soon after
    /// (stale at checkout, or a request on it got no answer). Two in a row: stop pooling.
    fn note_close_after_response(&self) {
        let r = &self.inner.reuse;
        if r.closes_in_row.fetch_add(1, Ordering::Relaxed) + 1 >= CLOSES_BEFORE_NO_POOLING
            && !r.no_pooling.swap(true, Ordering::Relaxed)
        {
            // Pooled connections that carried a response will be closed by the server too.
            self.lock_idle().retain(|c| c.uses == 0);
        }
    }

    /// Idle connections currently pooled.
    pub fn idle_count(&self) -> usize {
        self.lock_idle().len()
    }

    /// The request-target path for `endpoint`: the base URL's path prefix and `endpoint`
    /// joined by segment ([`path::join`]: `/team-a/v1` + `/v1/models` → `/team-a/v1/models`),
    /// with the base URL's query after the endpoint's own ([`path::with_query`]). An absolute `http(s)://` endpoint is taken as written (path and query) and must be on
    /// the base URL's origin.
    pub fn path_for(&self, endpoint: &str) -> Result<String> {
        self.resolve(endpoint, path::join)
    }

    /// The request-target path of a control-plane call ([`path::join_control`]): server-root
    /// endpoints (`/tokenize`, `/metrics`, `/start_profile`, …) go to the server root (the
    /// prefix without a trailing `/v1`), `/v1/...` endpoints as [`HttpClient::path_for`].
    pub fn control_path_for(&self, endpoint: &str) -> Result<String> {
        self.resolve(endpoint, path::join_control)
    }

    /// `scheme://host:port/path` of a request path, as requested (never userinfo; a secret
    /// query value of the base URL is in it: for requests, not for text — see
    /// [`HttpClient::shown_url`]).
    pub fn url_for_path(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// [`HttpClient::url_for_path`] for messages, results and files: secret query values (the
    /// base URL's `?api-key=…`, sent on every call) redacted.
    pub fn shown_url(&self, path: &str) -> String {
        servebench_core::secret::redact_url(&self.url_for_path(path))
    }

    fn resolve(&self, endpoint: &str, join: fn(&str, &str) -> String) -> Result<String> {
        let invalid =
            |problem: String| BenchError::config("--endpoint", problem, "use a path like /v1/completions");
        let path = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
            let u = Url::parse(endpoint).map_err(|e| {
                invalid(format!("'{}' is not a URL ({e})", servebench_core::secret::redact_url(endpoint)))
            })?;
            let host = match u.host() {
                Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
                Some(h) => h.to_string(),
                None => String::new(),
            };
            let origin = format!("{}://{}:{}", u.scheme(), host, u.port_or_known_default().unwrap_or(0));
            if origin != self.inner.origin.display {
                return Err(BenchError::config(
                    "--endpoint",
                    format!("'{endpoint}' is on another origin than --base-url ({})", self.origin()),
                    "pass the server's origin as --base-url and the path as --endpoint",
                ));
            }
            match u.query() {
                Some(q) => format!("{}?{q}", u.path()),
                None => u.path().to_owned(),
            }
        } else {
            path::with_query(join(&self.inner.origin.prefix, endpoint), self.inner.origin.query.as_deref())
        };
        path.parse::<Uri>().map_err(|_| invalid(format!("invalid path '{path}'")))?;
        Ok(path)
    }

    /// Opens up to `n` connections concurrently and pools them (bounded by `max_idle`).
    /// Returns how many were opened; fails only if none could be.
    pub async fn preconnect(&self, n: usize) -> Result<usize> {
        let n = n.min(self.inner.opts.max_idle);
        let results = futures::future::join_all((0..n).map(|_| self.connect())).await;
        let mut opened = 0;
        let mut last_err = None;
        for r in results {
            match r {
                Ok(c) => {
                    opened += 1;
                    self.checkin(c);
                }
                Err(e) => last_err = Some(e),
            }
        }
        match (opened, last_err) {
            (0, Some(e)) => {
                let context = format!("connect {}", self.origin());
                Err(match self.connect_failure() {
                    Some(f) => f.to_error(&context),
                    None => BenchError::transport_from(context, e),
                })
            }
            _ => Ok(opened),
        }
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<Conn>> {
        self.inner.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The addresses of the host connections go to: the proxy's, or the origin's.
    async fn addrs(&self) -> std::result::Result<&[SocketAddr], ConnectError> {
        let (host, port) = match &self.inner.proxy {
            Some(p) => (p.host.as_str(), p.port),
            None => (self.inner.origin.host.as_str(), self.inner.origin.port),
        };
        let addrs = self
            .inner
            .addrs
            .get_or_try_init(|| async {
                if let Ok(ip) = host.parse::<IpAddr>() {
                    return Ok(vec![SocketAddr::new(ip, port)]);
                }
                let mut v: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
                    .await
                    .map_err(|source| ConnectError::Resolve { host: host.to_owned(), source })?
                    .collect();
                v.sort_by_key(|a| a.is_ipv6()); // IPv4 first, stable otherwise
                if v.is_empty() {
                    return Err(ConnectError::NoAddresses { host: host.to_owned() });
                }
                Ok(v)
            })
            .await?;
        Ok(addrs)
    }

    /// Opens a new connection (TCP, TLS, HTTP/1.1 handshake) within `connect_timeout`.
    async fn connect(&self) -> std::result::Result<Conn, ConnectError> {
        let timeout = self.inner.opts.connect_timeout;
        match tokio::time::timeout(timeout, self.connect_inner()).await {
            Ok(r) => r,
            Err(_) => Err(ConnectError::TimedOut { origin: self.origin().to_owned(), after: timeout }),
        }
    }

    async fn connect_inner(&self) -> std::result::Result<Conn, ConnectError> {
        // Name resolution happens once per client; a connect that waited for it times it.
        let resolving = self.inner.addrs.get().is_none() && !self.connects_to_ip();
        let start = Instant::now();
        let addrs = self.addrs().await.map_err(|e| self.proxy_unreachable(e))?;
        let resolved = Instant::now();
        let mut last = None;
        let mut tcp = None;
        for &addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(source) => last = Some(ConnectError::Tcp { addr, source }),
            }
        }
        let mut tcp = match (tcp, last) {
            (Some(tcp), _) => tcp,
            (None, Some(e)) => return Err(self.proxy_unreachable(e)),
            // `addrs` is never empty.
            (None, None) => return Err(ConnectError::NoAddresses { host: self.inner.origin.host.clone() }),
        };
        let _ = tcp.set_nodelay(true);
        self.open_tunnel(&mut tcp).await?;
        let connected = Instant::now();
        let tcp = self.inner.stamping.wrap(tcp);
        let stamps = tcp.is_stamped().then(|| self.inner.stamping.reads()).flatten();
        let stream = match &self.inner.tls {
            Some(tls) => tls::connect(tls, &self.inner.origin.host, tcp, &self.inner.failures)
                .await
                .map(|s| conn::Stream::Tls(Box::new(s)))
                .map_err(|source| ConnectError::Tls { origin: self.origin().to_owned(), source })?,
            None => conn::Stream::Plain(tcp),
        };
        let ready = Instant::now();
        self.inner.failures.clear();
        let mut c = Conn::new(stream, stamps);
        // The TCP connect alone (about a round trip; through a proxy, its tunnel too), not the
        // name resolution or the TLS handshake.
        c.opened_in = connected - resolved;
        let us = |d: Duration| u32::try_from(d.as_micros()).unwrap_or(u32::MAX);
        c.setup = Some(ConnSetup {
            dns_us: resolving.then(|| us(resolved - start)),
            connect_us: Some(us(connected - resolved)),
            tls_us: self.inner.tls.is_some().then(|| us(ready - connected)),
        });
        self.inner.counters.opened.fetch_add(1, Ordering::Relaxed);
        Ok(c)
    }

    /// Whether connections go to an IP address (the proxy's or the origin's): no name to resolve.
    fn connects_to_ip(&self) -> bool {
        let host = match &self.inner.proxy {
            Some(p) => p.host.as_str(),
            None => self.inner.origin.host.as_str(),
        };
        host.parse::<IpAddr>().is_ok()
    }

    /// Takes the most recently used healthy idle connection. Stale ones are dropped and
    /// counted in `stale`.
    async fn take_idle(&self, stale: &mut u32) -> Option<Conn> {
        loop {
            let mut c = self.lock_idle().pop()?;
            let past_ours = self.inner.opts.idle_timeout.is_some_and(|max| c.idle_since.elapsed() > max);
            if past_ours || c.past_keep_alive() {
                self.inner.counters.expired.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if self.pooling_disabled() && c.uses > 0 {
                continue;
            }
            if c.check_idle().await {
                return Some(c);
            }
            *stale += 1;
            self.inner.counters.stale.fetch_add(1, Ordering::Relaxed);
            if c.uses > 0 && c.idle_since.elapsed() < CLOSE_AFTER_RESPONSE_WINDOW {
                self.note_close_after_response();
            }
        }
    }

    /// Pools a connection whose response body was read to the end. A response that said
    /// `Connection: close` (or HTTP/1.0 without keep-alive, a close-delimited body, bytes after
    /// the body) already marked the connection done when its head or body was read, so
    /// `checkin` drops it.
    pub(crate) fn release(&self, mut c: Conn) {
        c.reset_for_pool();
        self.checkin(c);
    }

    /// Returns a connection to the pool (if it is still open).
    pub(crate) fn checkin(&self, mut c: Conn) {
        if c.is_done() || (c.uses > 0 && self.pooling_disabled()) {
            return;
        }
        c.idle_since = Instant::now();
        let mut idle = self.lock_idle();
        if idle.len() < self.inner.opts.max_idle {
            idle.push(c);
        } else {
            self.inner.counters.expired.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(url: &str) -> HttpClient {
        HttpClient::new(ClientOptions { base_url: url.into(), ..ClientOptions::default() }).unwrap()
    }

    #[test]
    fn parses_origins_and_paths() {
        let c = client("http://user:pw@localhost:8000/");
        assert_eq!(c.origin(), "http://localhost:8000");
        assert_eq!(c.path_for("/v1/completions").unwrap(), "/v1/completions");
        let c = client("https://example.com/api/");
        assert_eq!(c.origin(), "https://example.com:443");
        assert!(c.is_tls());
        assert_eq!(c.path_for("/v1/models").unwrap(), "/api/v1/models");
        assert_eq!(c.path_for("/api/v1/models").unwrap(), "/api/v1/models");
        assert_eq!(c.path_for("https://example.com/api/v1/a?b=1").unwrap(), "/api/v1/a?b=1");
        assert_eq!(c.path_for("https://example.com:443/v1/a").unwrap(), "/v1/a");
        let e = c.path_for("http://x/v1/a?b=1").unwrap_err();
        assert!(e.to_string().contains("another origin"), "{e}");
        assert_eq!(c.control_path_for("/tokenize").unwrap(), "/api/tokenize");
        let c = client("http://gw:80/team-a/v1/");
        assert_eq!(c.path_for("/v1/models").unwrap(), "/team-a/v1/models");
        assert_eq!(c.control_path_for("/v1/models").unwrap(), "/team-a/v1/models");
        assert_eq!(c.control_path_for("/metrics").unwrap(), "/team-a/metrics");
        assert_eq!(c.url_for_path("/team-a/metrics"), "http://gw:80/team-a/metrics");
        let c = client("http://[::1]:9000");
        assert_eq!(c.inner.origin.host_header, "[::1]:9000");
        assert!(HttpClient::new(ClientOptions { base_url: "ftp://x".into(), ..Default::default() }).is_err());
        assert!(HttpClient::new(ClientOptions { base_url: "nope".into(), ..Default::default() }).is_err());
    }

    #[tokio::test]
    async fn connect_refused_is_reported() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let c = client(&format!("http://127.0.0.1:{port}"));
        let e = c.preconnect(1).await.unwrap_err();
        assert!(matches!(e, BenchError::Transport { .. }), "{e}");
        // The typed connect error is the source; its words are in the message.
        let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<ConnectError>());
        assert!(matches!(source, Some(ConnectError::Tcp { .. })), "{e}");
        assert!(e.to_string().contains("Connection refused") || e.to_string().contains("refused"), "{e}");
    }
}
