//! Connection behaviours of some personalities, as body wrappers: gzip (gateway; streams are
//! flushed after every frame so each event can be decoded when it arrives) and the per-
//! connection bookkeeping of llama.cpp's keep-alive (close right after a streamed answer,
//! close after an idle period).

use std::io::Write;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use http::HeaderMap;
use http_body::{Body, Frame};
use tokio::sync::Notify;

use crate::stream::SimBody;

/// Whether a request accepts a gzip answer: no `Accept-Encoding` at all (RFC 9110 §12.5.3:
/// any coding is acceptable) or one that lists `gzip` (or `*`) without `q=0`.
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    let values: Vec<&str> =
        headers.get_all(http::header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).collect();
    if values.is_empty() {
        return true;
    }
    values.iter().flat_map(|v| v.split(',')).any(|item| {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or("").to_ascii_lowercase();
        let q_zero = parts.any(|p| {
            let p = p.replace(' ', "");
            p == "q=0" || p == "q=0.0" || p == "q=0.00" || p == "q=0.000"
        });
        (coding == "gzip" || coding == "x-gzip" || coding == "*") && !q_zero
    })
}

/// The whole of `data` gzipped.
pub(crate) fn gzip_all(data: &[u8]) -> Bytes {
    let mut enc = GzEncoder::new(Vec::with_capacity(data.len() / 2 + 32), Compression::default());
    let _ = enc.write_all(data);
    Bytes::from(enc.finish().unwrap_or_default())
}

/// A body gzipped frame by frame, each frame flushed (sync flush) so that it decodes on arrival.
#[derive(Debug)]
pub(crate) struct GzipBody {
    inner: SimBody,
    enc: Option<GzEncoder<Vec<u8>>>,
}

impl GzipBody {
    pub(crate) fn new(inner: SimBody) -> Self {
        GzipBody { inner, enc: Some(GzEncoder::new(Vec::new(), Compression::default())) }
    }

    pub(crate) fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let Some(enc) = self.enc.as_mut() else { return Poll::Ready(None) };
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Some(Ok(frame))) => {
                let Ok(data) = frame.into_data() else {
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::new()))));
                };
                enc.write_all(&data)?;
                enc.flush()?;
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(std::mem::take(enc.get_mut()))))))
            }
            Poll::Ready(None) => match self.enc.take() {
                Some(enc) => Poll::Ready(Some(enc.finish().map(|v| Frame::data(Bytes::from(v))))),
                None => Poll::Ready(None),
            },
        }
    }

    pub(crate) fn is_end(&self) -> bool {
        self.enc.is_none()
    }
}

/// Per-connection state of the llama.cpp keep-alive behaviour.
#[derive(Debug)]
pub(crate) struct ConnCtx {
    /// Notified when the connection must close after the answer in flight.
    pub close: Notify,
    active: AtomicU32,
    /// Milliseconds from `start` to the end of the last answer (or the accept).
    last_ms: AtomicU64,
    start: Instant,
}

impl ConnCtx {
    pub(crate) fn new() -> Self {
        ConnCtx {
            close: Notify::new(),
            active: AtomicU32::new(0),
            last_ms: AtomicU64::new(0),
            start: Instant::now(),
        }
    }

    /// A request arrived on the connection.
    pub(crate) fn begin(&self) {
        self.active.fetch_add(1, Ordering::AcqRel);
    }

    fn end(&self) {
        self.last_ms.store(self.start.elapsed().as_millis() as u64, Ordering::Release);
        self.active.fetch_sub(1, Ordering::AcqRel);
    }

    /// Whether a request is in flight.
    pub(crate) fn is_busy(&self) -> bool {
        self.active.load(Ordering::Acquire) > 0
    }

    /// When the connection becomes idle-expired if nothing happens: `idle` after the last
    /// answer ended.
    pub(crate) fn idle_deadline(&self, idle: Duration) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Acquire)) + idle
    }

    /// Whether nothing is in flight and the last answer ended at least `idle` ago.
    pub(crate) fn idle_expired(&self, idle: Duration) -> bool {
        self.active.load(Ordering::Acquire) == 0 && Instant::now() >= self.idle_deadline(idle)
    }
}

/// An answer on a llama.cpp-like connection: ends the request's bookkeeping when dropped and,
/// for a streamed answer, asks the connection to close after it (once the head is out, so the
/// head carries no `Connection: close`).
#[derive(Debug)]
pub(crate) struct Tracked {
    inner: SimBody,
    ctx: std::sync::Arc<ConnCtx>,
    close_after: bool,
}

impl Tracked {
    pub(crate) fn new(inner: SimBody, ctx: std::sync::Arc<ConnCtx>, close_after: bool) -> Self {
        Tracked { inner, ctx, close_after }
    }

    pub(crate) fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if std::mem::take(&mut self.close_after) {
            self.ctx.close.notify_one();
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    pub(crate) fn inner(&self) -> &SimBody {
        &self.inner
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.ctx.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_encoding_rules() {
        let mut h = HeaderMap::new();
        assert!(accepts_gzip(&h), "no header: any coding");
        h.insert(http::header::ACCEPT_ENCODING, "identity".parse().unwrap());
        assert!(!accepts_gzip(&h));
        h.insert(http::header::ACCEPT_ENCODING, "br, gzip;q=0.5".parse().unwrap());
        assert!(accepts_gzip(&h));
        h.insert(http::header::ACCEPT_ENCODING, "gzip;q=0".parse().unwrap());
        assert!(!accepts_gzip(&h));
    }
}
