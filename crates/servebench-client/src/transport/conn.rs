//! One HTTP/1.1 connection: TCP (+ TLS), a read buffer, and the I/O of one request at a time,
//! all driven by the request's own task (no connection task, no channel between the socket
//! and the reader).
//!
//! Body data is decoded in place from the read buffer ([`Conn::frame`]) and handed out as a
//! borrowed slice with the time its bytes were read; an idle pooled connection is checked by
//! polling a read once at checkout, so a close the server sent while it sat idle is seen then
//! (see [`Conn::check_idle`]). The HTTP/1.1 codec itself is pure and lives in `h1.rs`.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::error::{ReadBodyError, ReadHeadError, WriteFail};
use super::h1::{BodyDecoder, HeadParse, KeepAlive, Step};
use super::kstamp::{lag::LagStats, StampedTcp};

/// A TCP stream, plain or TLS.
#[derive(Debug)]
pub(crate) enum Stream {
    Plain(StampedTcp),
    Tls(Box<super::tls::TlsIo>),
}

impl Stream {
    /// The kernel receive stamp of the newest socket read (TLS: of the newest read under the
    /// TLS layer), CLOCK_REALTIME ns.
    fn stamp_ns(&self) -> Option<i128> {
        match self {
            Stream::Plain(s) => s.last_stamp_ns(),
            Stream::Tls(s) => s.tcp().last_stamp_ns(),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Initial read buffer of a connection. A streamed event is a few hundred bytes; the buffer
/// doubles whenever a read fills it (events arriving faster than they are read, large heads
/// or bodies), so it adapts without every idle connection holding a large buffer.
const INITIAL_BUF: usize = 1 << 10;
/// The buffer does not grow beyond this for body reads (heads may need up to their limit).
const MAX_READ_BUF: usize = 64 << 10;
/// A pooled connection whose buffer grew beyond this gets a fresh small one.
const POOLED_BUF_MAX: usize = 16 << 10;

/// A live HTTP/1.1 connection: the stream, a read buffer that body frames are decoded from in
/// place, and whether it can carry another request.
pub(crate) struct Conn {
    io: Stream,
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// When the most recent read returned bytes: the arrival time of everything it brought
    /// (the kernel's receive time with kernel timestamps, else the user-space read time).
    last_read: Instant,
    /// When a read found the end of file (the server closed): a close-delimited body's end.
    closed_at: Option<Instant>,
    /// Read-lag counters, when the socket reads with kernel timestamps (`None`: no cost).
    stamps: Option<Arc<LagStats>>,
    /// The connection must not carry another request (closed, failed, `Connection: close`,
    /// bytes after the body, or a body not read to its end).
    done: bool,
    /// Request bytes (head + body) being written; kept to reuse the allocation.
    wbuf: Vec<u8>,
    /// Requests completed on this connection.
    pub(crate) uses: u32,
    /// When it was last returned to the pool.
    pub(crate) idle_since: Instant,
    /// How long opening it took; taken by the request that opened it (docs/metrics.md, "HTTP
    /// phases").
    pub(crate) setup: Option<ConnSetup>,
    /// The server's `Keep-Alive` parameters from the latest response head.
    keep_alive: KeepAlive,
    /// How long its TCP connect took: about a round trip, the scale of a close racing a
    /// request (see `transport::send`).
    pub(crate) opened_in: std::time::Duration,
    /// A read found nothing and waited since the latest request was written: false when the
    /// answer (or the server's close) was already there at the first look.
    waited_since_write: bool,
}

/// How long opening a connection took, µs per phase (`None`: the phase did not happen).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ConnSetup {
    pub dns_us: Option<u32>,
    pub connect_us: Option<u32>,
    pub tls_us: Option<u32>,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("done", &self.done).field("uses", &self.uses).finish()
    }
}

/// The given deadline passed before an operation completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Deadline;

/// A response body being read: its decoder. Obtained with the response head.
#[derive(Debug)]
pub(crate) struct Incoming {
    decoder: BodyDecoder,
}

/// One piece of body data: the bytes, and when the read that brought them returned.
pub(crate) type Frame<'a> = (&'a [u8], Instant);

/// Polls `op` until ready or until `deadline` passes.
async fn with_deadline<T>(
    deadline: Option<&mut Pin<Box<tokio::time::Sleep>>>,
    mut op: impl FnMut(&mut Context<'_>) -> Poll<T>,
) -> Result<T, Deadline> {
    let mut deadline = deadline;
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(v) = op(cx) {
            return Poll::Ready(Ok(v));
        }
        if let Some(d) = deadline.as_mut() {
            if d.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(Deadline));
            }
        }
        Poll::Pending
    })
    .await
}

impl Conn {
    /// Wraps an established stream; `stamps`: its reads carry kernel receive timestamps.
    pub(crate) fn new(io: Stream, stamps: Option<Arc<LagStats>>) -> Conn {
        let now = Instant::now();
        Conn {
            io,
            buf: vec![0; INITIAL_BUF],
            start: 0,
            end: 0,
            last_read: now,
            closed_at: None,
            stamps,
            done: false,
            wbuf: Vec::new(),
            uses: 0,
            idle_since: now,
            setup: None,
            opened_in: std::time::Duration::ZERO,
            waited_since_write: false,
            keep_alive: KeepAlive::default(),
        }
    }

    /// When the most recent read that returned bytes completed.
    pub(crate) fn last_read_at(&self) -> Instant {
        self.last_read
    }

    /// When the body ended: the read that found the server's close, for a body that ends there
    /// (close-delimited), else the read that brought its last bytes.
    pub(crate) fn body_end_at(&self) -> Instant {
        self.closed_at.unwrap_or(self.last_read).max(self.last_read)
    }

    /// Whether a read had to wait since the latest request was written (the server's close, if
    /// it came, came after the write was done, not before the first look).
    pub(crate) fn waited_since_write(&self) -> bool {
        self.waited_since_write
    }

    /// When a read found the server's close (end of file), if one did.
    pub(crate) fn closed_at(&self) -> Option<Instant> {
        self.closed_at
    }

    /// Whether the connection is known to be unusable.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Makes room after `end` for a read: drops consumed bytes, compacts, or grows (up to
    /// `max` buffered bytes). Returns false when the buffer is full at `max`.
    fn make_room(&mut self, max: usize) -> bool {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.end < self.buf.len() {
            return true;
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            return true;
        }
        if self.buf.len() >= max {
            return false;
        }
        let grown = (self.buf.len() * 2).min(max.max(INITIAL_BUF));
        self.buf.resize(grown, 0);
        true
    }

    /// One read into the buffer: `Ok(0)` at end of file.
    fn poll_fill(&mut self, cx: &mut Context<'_>, max: usize) -> Poll<io::Result<usize>> {
        if !self.make_room(max) {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, "response line too long")));
        }
        let room = self.buf.len() - self.end;
        let mut rb = ReadBuf::new(&mut self.buf[self.end..]);
        match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                if n > 0 {
                    let at = match &self.stamps {
                        None => Instant::now(),
                        Some(stats) => super::kstamp::read_time(stats, self.io.stamp_ns()),
                    };
                    // Bytes on one connection arrive in order, so a read is never earlier than
                    // the one before it. A kernel stamp is mapped to the monotonic clock through
                    // a realtime and a monotonic reading taken one after the other: two reads
                    // whose packets came microseconds apart can map out of order by that jitter
                    // (a last token timed 1 µs after its stream's end was seen under CI load).
                    self.last_read = self.last_read.max(at);
                    self.end += n;
                    // The read filled the buffer: more is probably waiting; read more at once
                    // next time.
                    if n == room && self.buf.len() < MAX_READ_BUF.min(max) {
                        let grown = (self.buf.len() * 2).min(MAX_READ_BUF.min(max));
                        self.buf.resize(grown, 0);
                    }
                } else {
                    // No bytes, so no kernel stamp: the close is timed on reading it.
                    self.closed_at.get_or_insert_with(Instant::now);
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                self.waited_since_write = true;
                Poll::Pending
            }
        }
    }

    /// Writes the request (head and body). Tells whether any byte was written on failure.
    pub(crate) async fn write_request(
        &mut self,
        req: &http::Request<Bytes>,
        deadline: Option<&mut Pin<Box<tokio::time::Sleep>>>,
    ) -> Result<(), WriteFail> {
        self.waited_since_write = false;
        let mut wbuf = std::mem::take(&mut self.wbuf);
        wbuf.clear();
        super::h1::write_request_head(req, &mut wbuf);
        let body = req.body();
        // Small bodies go out in the same buffer (one write); large ones vectored.
        let inline_body = body.len() <= 64 << 10;
        if inline_body {
            wbuf.extend_from_slice(body);
        }
        let extra: &[u8] = if inline_body { &[] } else { body };
        let total = wbuf.len() + extra.len();
        let mut written = 0usize;
        let io = &mut self.io;
        let r = with_deadline(deadline, |cx| loop {
            if written >= total {
                return Poll::Ready(Ok(()));
            }
            let (a, b): (&[u8], &[u8]) = if written < wbuf.len() {
                (&wbuf[written..], extra)
            } else {
                (&extra[written - wbuf.len()..], &[])
            };
            let bufs = [io::IoSlice::new(a), io::IoSlice::new(b)];
            match Pin::new(&mut *io).poll_write_vectored(cx, &bufs) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::WriteZero, "connection closed")))
                }
                Poll::Ready(Ok(n)) => written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        })
        .await;
        self.wbuf = wbuf;
        let r = match r {
            Ok(Ok(())) => {
                with_deadline(None, |cx| Pin::new(&mut self.io).poll_flush(cx)).await.unwrap_or(Ok(()))
            }
            Ok(Err(e)) => Err(e),
            Err(Deadline) => {
                self.done = true;
                return Err(WriteFail::Deadline { written: written > 0 });
            }
        };
        r.map_err(|e| {
            self.done = true;
            if written == 0 {
                WriteFail::Unsent(e)
            } else {
                WriteFail::Partial(e)
            }
        })
    }

    /// Reads the response head (interim 1xx responses are skipped), with when its first byte
    /// (of an interim response too) was read.
    pub(crate) async fn read_head(
        &mut self,
        head_request: bool,
        deadline: Option<&mut Pin<Box<tokio::time::Sleep>>>,
    ) -> Result<(super::h1::ResponseHead, Incoming, Instant), ReadHeadError> {
        // Whether any byte of the response arrived: a request on a reused connection that got
        // none was never processed (the server had closed it) and may be sent again.
        let mut answered = false;
        // When the read that brought the first byte returned.
        let mut first_byte = None;
        let r = with_deadline(deadline, |cx| loop {
            match super::h1::parse_head(&self.buf[self.start..self.end], head_request) {
                Ok(HeadParse::Complete { head, len }) => {
                    self.start += len;
                    return Poll::Ready(Ok(head));
                }
                Ok(HeadParse::Interim { len }) => {
                    self.start += len;
                    continue;
                }
                Ok(HeadParse::Partial) => {}
                Err(e) => return Poll::Ready(Err(ReadHeadError::Parse(e))),
            }
            match self.poll_fill(cx, super::limits::MAX_HEAD_BYTES + 1) {
                Poll::Ready(Ok(0)) => {
                    let e = if answered { ReadHeadError::Cut } else { ReadHeadError::Unanswered };
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(_)) => {
                    answered = true;
                    first_byte.get_or_insert(self.last_read);
                }
                Poll::Ready(Err(source)) => return Poll::Ready(Err(ReadHeadError::Io { source, answered })),
                Poll::Pending => return Poll::Pending,
            }
        })
        .await;
        match r {
            Ok(Ok(head)) => {
                if head.close {
                    self.done = true;
                }
                self.keep_alive = head.keep_alive;
                let incoming = Incoming { decoder: head.body };
                Ok((*head, incoming, first_byte.unwrap_or(self.last_read)))
            }
            Ok(Err(e)) => {
                self.done = true;
                Err(e)
            }
            // A deadline is not a failure of the connection by itself: the caller decides
            // (a stall timer re-armed after progress keeps reading).
            Err(Deadline) => Err(ReadHeadError::Deadline),
        }
    }

    /// The next piece of body data (`Ok(None)` at the end of the body), decoded in place from
    /// the read buffer: no copy and no allocation. Each piece comes with the time its bytes
    /// were read from the socket.
    pub(crate) async fn frame<'a>(
        &'a mut self,
        body: &mut Incoming,
        deadline: Option<&mut Pin<Box<tokio::time::Sleep>>>,
    ) -> Result<Option<Frame<'a>>, ReadBodyError> {
        let r = with_deadline(deadline, |cx| loop {
            if body.decoder.is_done() {
                return Poll::Ready(Ok(None));
            }
            match body.decoder.decode(&self.buf[self.start..self.end]) {
                Ok(Step::Data { start, len, consumed }) => {
                    let at = self.start + start;
                    self.start += consumed;
                    return Poll::Ready(Ok(Some((at, len))));
                }
                Ok(Step::End { consumed }) => {
                    self.start += consumed;
                    return Poll::Ready(Ok(None));
                }
                Ok(Step::NeedMore { consumed }) => self.start += consumed,
                Err(e) => return Poll::Ready(Err(ReadBodyError::Invalid(e))),
            }
            match self.poll_fill(cx, 1 << 20) {
                Poll::Ready(Ok(0)) => {
                    if let Err(e) = body.decoder.on_eof() {
                        return Poll::Ready(Err(ReadBodyError::Ended(e)));
                    }
                    self.done = true;
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(ReadBodyError::Io(e))),
                Poll::Pending => return Poll::Pending,
            }
        })
        .await;
        match r {
            Ok(Ok(Some((at, len)))) => Ok(Some((&self.buf[at..at + len], self.last_read))),
            Ok(Ok(None)) => {
                if self.start != self.end {
                    self.done = true; // bytes after the body: never reuse
                }
                Ok(None)
            }
            Ok(Err(e)) => {
                self.done = true;
                Err(e)
            }
            // A deadline is not a failure of the connection by itself: the caller decides
            // (a stall timer re-armed after progress keeps reading).
            Err(Deadline) => Err(ReadBodyError::Deadline),
        }
    }

    /// Checks an idle connection before reuse by polling a read once: a close, reset or
    /// unsolicited response (e.g. a 408) the server sent while it sat idle is seen now.
    /// Returns whether it can take a request.
    pub(crate) async fn check_idle(&mut self) -> bool {
        if self.done || self.start != self.end {
            return false;
        }
        let healthy =
            std::future::poll_fn(|cx| Poll::Ready(self.poll_fill(cx, INITIAL_BUF).is_pending())).await;
        if !healthy {
            self.done = true;
        }
        healthy
    }

    /// Whether the server has closed, or is about to close, this idle connection by what it
    /// said in `Keep-Alive`: it took its `max` requests, or it has been idle for nearly its
    /// `timeout` (a second short of it, or half of a timeout under 2 s), where a request
    /// written now would race the server's close.
    pub(crate) fn past_keep_alive(&self) -> bool {
        let k = self.keep_alive;
        if k.max.is_some_and(|max| self.uses >= max) {
            return true;
        }
        k.timeout.is_some_and(|t| {
            let margin = (t / 2).min(Duration::from_secs(1));
            self.idle_since.elapsed() >= t - margin
        })
    }

    /// Prepares a connection whose response was read to the end for the pool.
    pub(crate) fn reset_for_pool(&mut self) {
        if self.buf.len() > POOLED_BUF_MAX && self.start == self.end {
            self.buf = vec![0; INITIAL_BUF];
            self.start = 0;
            self.end = 0;
        }
        self.uses += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::{Duration, Instant};

    use crate::transport::{ClientOptions, HttpClient};

    /// The reading of a read's time that went backwards: the previous read on the connection
    /// is timed after this one's arrival (as a kernel stamp mapped with a little jitter can be).
    /// The new read keeps the previous time instead of going before it.
    #[tokio::test]
    async fn a_reads_time_never_goes_before_the_previous_reads_on_its_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello").unwrap();
            s
        });
        let client = HttpClient::new(ClientOptions { base_url, ..ClientOptions::default() }).unwrap();
        let mut conn = client.connect().await.unwrap();
        let previous = Instant::now() + Duration::from_millis(50);
        conn.last_read = previous;
        let (_, _, first_byte) = conn.read_head(false, None).await.unwrap();
        assert_eq!(first_byte, previous);
        assert_eq!(conn.last_read_at(), previous);
        drop(server.join().unwrap());
    }
}
