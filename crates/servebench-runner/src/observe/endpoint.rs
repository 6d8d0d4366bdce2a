//! `--metrics-port`: serves the run's [`LiveMetrics`] in the Prometheus text format at
//! `/metrics` while the run is in progress, so client and server dashboards can be overlaid.

use crate::observe::live::LiveMetrics;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use servebench_core::{BenchError, Result};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Content type of the text exposition format.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A running metrics endpoint; stops when [`stop`](MetricsServer::stop) is called or dropped.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (port 0 = any free port) and serves `metrics` until stopped.
    pub async fn start(addr: SocketAddr, metrics: Arc<LiveMetrics>) -> Result<Self> {
        let listener = TcpListener::bind(addr).await.map_err(|e| {
            BenchError::config(
                "--metrics-port",
                format!("cannot listen on {addr}: {e}"),
                "choose a free port (or 0 for any), or another --metrics-host",
            )
        })?;
        let addr = listener.local_addr().map_err(|e| BenchError::io(addr, e))?;
        let stop = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, metrics, stop.clone()));
        Ok(MetricsServer { addr, stop, task: Some(task) })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and closes open connections.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn accept_loop(listener: TcpListener, metrics: Arc<LiveMetrics>, stop: CancellationToken) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => if let Ok((stream, _)) = accepted {
                let metrics = metrics.clone();
                let stop = stop.clone();
                conns.spawn(async move {
                    let service = service_fn(move |req| {
                        let metrics = metrics.clone();
                        async move { Ok::<_, Infallible>(respond(&req, &metrics)) }
                    });
                    let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = stop.cancelled() => {}
                    }
                });
            },
        }
        while conns.try_join_next().is_some() {}
    }
    conns.shutdown().await;
}

fn respond(req: &Request<Incoming>, metrics: &LiveMetrics) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, ctype: &'static str, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(ctype));
        r
    };
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => {
            reply(StatusCode::OK, PROMETHEUS_CONTENT_TYPE, metrics.render_prometheus())
        }
        (&Method::GET, _) => reply(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "servebench serves its live client metrics at /metrics\n".into(),
        ),
        _ => reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", "use GET\n".into()),
    }
}
