//! The listener: accepts connections (TCP_NODELAY, HTTP/1.1 keep-alive) and serves each on its
//! own task with hyper; shutdown stops accepting and lets in-flight responses finish.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use servebench_core::{BenchError, Result};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::config::SimConfig;
use crate::conn_wrap::ConnCtx;
use crate::fault::FaultCounts;
use crate::handlers::{handle, SimState};
use crate::personality::KeepAlive;
use crate::tls::SimTls;
use crate::truth::GroundTruth;

/// A running simulator.
#[derive(Debug)]
pub struct SimHandle {
    addr: SocketAddr,
    state: Arc<SimState>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
    /// The CA certificate (PEM) when serving HTTPS.
    tls_ca_pem: Option<String>,
}

impl SimHandle {
    /// The bound address (with the real port when started on port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ip:port` (`https://` with TLS), ready to prefix `/v1/...`.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls_ca_pem.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The CA certificate (PEM) clients must trust, when serving HTTPS ([`start_tls`]).
    pub fn tls_ca_pem(&self) -> Option<&str> {
        self.tls_ca_pem.as_deref()
    }

    /// The served model name.
    pub fn model(&self) -> &str {
        &self.state.config.model
    }

    /// True if the generated words were verified to re-encode to one token each with the
    /// configured tokenizer (so retokenized output equals `usage.completion_tokens`).
    pub fn output_retokenizes_exactly(&self) -> bool {
        self.state.vocab.verified()
    }

    /// A copy of the ground-truth records of finished (or abandoned) requests so far. Empty
    /// unless [`SimConfig::record_ground_truth`] is set.
    pub fn ground_truth(&self) -> Vec<GroundTruth> {
        self.state.truth.as_ref().map(|t| t.snapshot()).unwrap_or_default()
    }

    /// Like [`SimHandle::ground_truth`], but drains the log.
    pub fn take_ground_truth(&self) -> Vec<GroundTruth> {
        self.state.truth.as_ref().map(|t| t.take()).unwrap_or_default()
    }

    /// Faults injected so far, per kind (all zero unless [`SimConfig::faults`] is set). The
    /// same counts are exported on `/metrics` as `servebench_sim_faults_total{kind="..."}`.
    pub fn fault_counts(&self) -> FaultCounts {
        self.state.faults.counts()
    }

    /// Stops accepting connections, closes idle keep-alive connections and waits until every
    /// in-flight response has been sent.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }

    /// Stops at once: every connection is dropped, in-flight responses are cut.
    pub fn abort(self) {
        self.task.abort();
    }
}

/// Binds `addr` (port 0 picks an ephemeral port) and serves in the background on the current
/// tokio runtime.
pub async fn start(config: SimConfig, addr: SocketAddr) -> Result<SimHandle> {
    start_with(config, addr, None).await
}

/// Like [`start`], serving HTTPS with `tls` (see [`SimTls`]).
pub async fn start_tls(config: SimConfig, addr: SocketAddr, tls: SimTls) -> Result<SimHandle> {
    start_with(config, addr, Some(tls)).await
}

async fn start_with(config: SimConfig, addr: SocketAddr, tls: Option<SimTls>) -> Result<SimHandle> {
    config.validate()?;
    let listener = bind(addr).map_err(|e| listen_error(addr, e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| BenchError::transport_from("reading the simulator's bound address", e))?;
    let state = Arc::new(SimState::new(config));
    let (stop, stop_rx) = watch::channel(false);
    let tls_ca_pem = tls.as_ref().map(|t| t.ca_pem().to_owned());
    let task = tokio::spawn(accept_loop(listener, state.clone(), stop_rx, tls));
    Ok(SimHandle { addr, state, stop, task, tls_ca_pem })
}

/// SB316: the address cannot be listened on, with the fix for why (a port in use is not a
/// server that is down).
fn listen_error(addr: SocketAddr, e: std::io::Error) -> BenchError {
    let fix = match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            "another process listens on that port: choose another --port, or --port 0 for a free one"
        }
        std::io::ErrorKind::PermissionDenied => {
            "ports below 1024 need privileges: choose a --port above 1023, or --port 0"
        }
        std::io::ErrorKind::AddrNotAvailable => {
            "--host is not an address of this machine: use 127.0.0.1 or 0.0.0.0"
        }
        _ => "choose another --port (or --port 0) or --host",
    };
    BenchError::Listen {
        addr: addr.to_string(),
        detail: e.to_string(),
        fix: fix.into(),
        source: Some(Box::new(e)),
    }
}

/// Accept queue length of the listener. `TcpListener::bind` uses 128 (std's value); a burst
/// of a few hundred connections (a benchmark releasing every request at once) then overflows
/// it while the accept loop catches up, the kernel drops SYNs and those connects take the 1 s
/// SYN retransmission time. The kernel caps it at `net.core.somaxconn`.
const LISTEN_BACKLOG: u32 = 4096;

/// Binds `addr` with [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, as `TcpListener::bind`).
fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves until `signal` completes, then shuts down gracefully (for the standalone
/// `servebench sim` command, e.g. with `tokio::signal::ctrl_c()`). Use [`start`] to learn the
/// bound address first.
pub async fn serve_until(
    config: SimConfig,
    addr: SocketAddr,
    signal: impl Future<Output = ()>,
) -> Result<()> {
    let handle = start(config, addr).await?;
    signal.await;
    handle.shutdown().await;
    Ok(())
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<SimState>,
    mut stop: watch::Receiver<bool>,
    tls: Option<SimTls>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => match &tls {
                    None => {
                        conns.spawn(serve_connection(stream, state.clone(), stop.clone()));
                    }
                    Some(tls) => {
                        conns.spawn(serve_tls(tls.clone(), stream, state.clone(), stop.clone()));
                    }
                },
                // Out of file descriptors or a connection reset before accept: back off briefly.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
        }
        while conns.try_join_next().is_some() {}
    }
    drop(listener);
    while conns.join_next().await.is_some() {}
}

/// Completes the TLS handshake (a failed one, e.g. a client certificate the CA did not sign,
/// just closes the connection), then serves it.
async fn serve_tls(tls: SimTls, stream: TcpStream, state: Arc<SimState>, stop: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    if let Ok(s) = tls.acceptor.accept(stream).await {
        serve_io(s, state, stop).await;
    }
}

async fn serve_connection(stream: TcpStream, state: Arc<SimState>, stop: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    serve_io(stream, state, stop).await;
}

/// Serves one connection with the personality's keep-alive behaviour.
async fn serve_io<S>(stream: S, state: Arc<SimState>, stop: watch::Receiver<bool>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    match state.behaviour.keep_alive {
        KeepAlive::Plain => serve_plain(stream, state, stop).await,
        KeepAlive::CloseAfterStream { idle_secs } => {
            let idle = state.config.idle_close.unwrap_or(Duration::from_secs(idle_secs));
            serve_closing(stream, state, stop, idle).await
        }
    }
}

/// llama.cpp's connection behaviour: closed right after every streamed answer (without
/// `Connection: close`) and after `idle` without a request.
async fn serve_closing<S>(stream: S, state: Arc<SimState>, mut stop: watch::Receiver<bool>, idle: Duration)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let ctx = Arc::new(ConnCtx::new());
    let c = ctx.clone();
    let service = service_fn(move |req| handle(state.clone(), req, Some(c.clone())));
    let conn = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    loop {
        let deadline = match ctx.is_busy() {
            // An answer in flight: look again one idle period later.
            true => tokio::time::Instant::now() + idle,
            false => tokio::time::Instant::from_std(ctx.idle_deadline(idle)),
        };
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = ctx.close.notified() => break,
            _ = tokio::time::sleep_until(deadline) => {
                if ctx.idle_expired(idle) {
                    break;
                }
            }
            _ = stop.changed() => break,
        }
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

async fn serve_plain<S>(stream: S, state: Arc<SimState>, mut stop: watch::Receiver<bool>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| handle(state.clone(), req, None));
    let conn = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}
