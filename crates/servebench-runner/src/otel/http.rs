//! The HTTP client the OTLP exporters send through: HTTP/1.1 over hyper, one connection kept
//! and reused between requests (the span batches, then the metrics), plain `http://` (the only
//! scheme `--otlp-endpoint` accepts).
//!
//! opentelemetry-otlp's own hyper client pools connections with hyper-util's legacy client,
//! which links HTTP/2 (`h2`) as well; OTLP/HTTP here never speaks it, and leaving it out keeps
//! about 0.4 MB out of the binary (docs/performance.md, "Binary size and start-up").

use bytes::Bytes;
use http::header::{HeaderValue, HOST};
use http::uri::{PathAndQuery, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

/// A collector's answer is a small protobuf message; a larger body is refused, not buffered.
const MAX_RESPONSE_BYTES: usize = 4 << 20;

/// An OTLP/HTTP client: every request bounded by `timeout` (connect, send and the whole answer).
#[derive(Debug)]
pub(super) struct OtlpHttp {
    timeout: Duration,
    conn: Mutex<Option<SendRequest<Full<Bytes>>>>,
}

impl OtlpHttp {
    pub(super) fn new(timeout: Duration) -> Self {
        OtlpHttp { timeout, conn: Mutex::new(None) }
    }

    async fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (mut parts, body) = request.into_parts();
        let (host, port, host_header) = target(&parts.uri)?;
        // HTTP/1.1 to the server itself: the request line carries the origin form, `Host` the rest.
        let origin = parts.uri.path_and_query().cloned().unwrap_or_else(|| PathAndQuery::from_static("/"));
        parts.uri = Uri::from(origin);
        parts.headers.entry(HOST).or_insert(host_header);

        let request = || {
            let mut r = Request::new(Full::new(body.clone()));
            *r.method_mut() = parts.method.clone();
            *r.uri_mut() = parts.uri.clone();
            *r.headers_mut() = parts.headers.clone();
            r
        };
        let mut slot = self.conn.lock().await;
        let kept = slot.take().filter(|s| !s.is_closed());
        let reused = kept.is_some();
        let mut sender = match kept {
            Some(s) => s,
            None => connect(&host, port).await?,
        };
        let response = match send_on(&mut sender, request()).await {
            Ok(r) => r,
            // A kept connection the collector closed in the meantime: once more on a new one.
            Err(e) if reused && (e.is_closed() || e.is_canceled() || e.is_incomplete_message()) => {
                sender = connect(&host, port).await?;
                send_on(&mut sender, request()).await?
            }
            Err(e) => return Err(e.into()),
        };
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, MAX_RESPONSE_BYTES).collect().await?.to_bytes();
        // The answer is read whole, so the connection is free for the next request.
        *slot = Some(sender);
        Ok(Response::from_parts(parts, body))
    }
}

async fn send_on(
    sender: &mut SendRequest<Full<Bytes>>,
    request: Request<Full<Bytes>>,
) -> Result<Response<hyper::body::Incoming>, hyper::Error> {
    sender.ready().await?;
    sender.send_request(request).await
}

/// Host (without IPv6 brackets) and port to connect to, and the `Host` header, of an `http://` URL.
fn target(uri: &Uri) -> Result<(String, u16, HeaderValue), HttpError> {
    if uri.scheme_str() != Some("http") {
        return Err(format!("{uri}: only http:// is supported").into());
    }
    let host = uri.host().ok_or_else(|| format!("{uri}: no host"))?;
    let port = uri.port_u16().unwrap_or(80);
    let header = match uri.port_u16() {
        Some(p) => HeaderValue::from_str(&format!("{host}:{p}"))?,
        None => HeaderValue::from_str(host)?,
    };
    Ok((host.trim_start_matches('[').trim_end_matches(']').to_owned(), port, header))
}

async fn connect(host: &str, port: u16) -> Result<SendRequest<Full<Bytes>>, HttpError> {
    let stream = TcpStream::connect((host, port)).await?;
    stream.set_nodelay(true)?;
    let (sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    // Drives the connection until it closes; an error shows up in the next request instead.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

#[async_trait::async_trait]
impl HttpClient for OtlpHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        match tokio::time::timeout(self.timeout, self.send(request)).await {
            Ok(res) => res,
            Err(_) => Err(format!("no answer within {:.1} s", self.timeout.as_secs_f64()).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_of_endpoints() {
        let t = |s: &str| {
            target(&s.parse::<Uri>().unwrap()).map(|(h, p, v)| (h, p, v.to_str().unwrap().to_owned()))
        };
        assert_eq!(t("http://c:4318/v1/traces").unwrap(), ("c".into(), 4318, "c:4318".into()));
        assert_eq!(t("http://collector/v1/metrics").unwrap(), ("collector".into(), 80, "collector".into()));
        assert_eq!(t("http://[::1]:4318/v1/traces").unwrap(), ("::1".into(), 4318, "[::1]:4318".into()));
        assert!(t("https://c:4318/v1/traces").is_err());
    }
}
