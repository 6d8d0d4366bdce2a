//! Kernel receive timestamps (`SO_TIMESTAMPING`, software receive stamps): each socket read
//! carries the time the kernel received its newest bytes, mapped onto the run's monotonic
//! clock (`lag.rs`), so event times do not include the client's own read lag. docs/metrics.md,
//! "Receive timestamps", says which instant each time is; the fallback (not Linux, the option
//! refused, no control message) keeps the user-space read time and says so.
//!
//! Which packet's time: for TCP the kernel reports, for one `recvmsg`, the stamp of the last
//! buffer (skb) the read copied from (`tcp_recvmsg_locked` overwrites it per skb), and
//! segments coalesced into one skb in the receive queue keep the newest segment's stamp
//! (`tcp_try_coalesce`). So a read spanning several segments is stamped with the newest one's
//! arrival: never earlier than any byte in it, at most the span of the read later than its
//! first byte — the same direction as a user-space time, minus the read lag.

mod cmsg;
pub(crate) mod lag;
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod sys;

use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

pub use lag::ReadLag;
use lag::{LagStats, Mapped};

/// Where the client's receive times come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StampSource {
    /// Kernel software receive timestamps (`SO_TIMESTAMPING`).
    Kernel,
    /// User-space read times, with why (the flag, the platform, the kernel's refusal).
    UserSpace(String),
}

impl StampSource {
    /// The result's and console's one-line description.
    pub fn describe(&self) -> String {
        match self {
            StampSource::Kernel => "kernel (SO_TIMESTAMPING software receive stamps)".into(),
            StampSource::UserSpace(why) => format!("user-space read times ({why})"),
        }
    }
}

/// What a run reports about its receive timestamps.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiveTimestamps {
    pub source: StampSource,
    /// The read lag over the kernel-stamped reads (empty figures without them).
    pub lag: ReadLag,
}

/// The client's receive-timestamp state: whether sockets get the option, and the read lags.
#[derive(Debug)]
pub(crate) struct Stamping {
    /// Kernel stamps are on (wanted, and the probe socket took the option).
    enabled: bool,
    /// Why not, when not (the first refusal when a socket refused after the probe passed).
    off_reason: OnceLock<String>,
    pub(crate) stats: Arc<LagStats>,
    /// The probe's socket, kept open so the kernel keeps stamping (`sys::probe`).
    _keep: Option<Keep>,
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
type Keep = std::os::fd::OwnedFd;
#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
type Keep = ();

impl Stamping {
    /// Kernel stamps if `wanted` and this platform and kernel take the option.
    pub(crate) fn new(wanted: bool) -> Stamping {
        let off_reason = OnceLock::new();
        let keep = if !wanted {
            let _ = off_reason.set("--no-kernel-timestamps".to_owned());
            None
        } else {
            match probe() {
                Ok(keep) => Some(keep),
                Err(why) => {
                    let _ = off_reason.set(why);
                    None
                }
            }
        };
        Stamping { enabled: keep.is_some(), off_reason, stats: Arc::default(), _keep: keep }
    }

    /// Wraps a connected socket, turning stamps on for it (when on). A refusal is noted once
    /// and that socket reads with user-space times.
    pub(crate) fn wrap(&self, tcp: TcpStream) -> StampedTcp {
        let stamped = self.enabled && self.enable(&tcp);
        StampedTcp { tcp, stamped, last_ns: None }
    }

    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    fn enable(&self, tcp: &TcpStream) -> bool {
        use std::os::fd::AsFd;
        match sys::enable(tcp.as_fd()) {
            Ok(()) => true,
            Err(e) => {
                let _ = self.off_reason.set(format!("setsockopt SO_TIMESTAMPING failed: {e}"));
                false
            }
        }
    }

    #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
    fn enable(&self, _tcp: &TcpStream) -> bool {
        false
    }

    /// The stats to time reads with, when kernel stamps are on.
    pub(crate) fn reads(&self) -> Option<Arc<LagStats>> {
        self.enabled.then(|| self.stats.clone())
    }

    /// The run's report: kernel when every socket took the option and reads carried stamps.
    pub(crate) fn report(&self) -> ReceiveTimestamps {
        let lag = self.stats.snapshot();
        let source = match self.off_reason.get() {
            Some(why) if !self.enabled || lag.kernel_reads == 0 => StampSource::UserSpace(why.clone()),
            _ if self.enabled && lag.kernel_reads == 0 && lag.user_only_reads > 0 => {
                StampSource::UserSpace("no read carried a kernel timestamp".into())
            }
            _ => StampSource::Kernel,
        };
        ReceiveTimestamps { source, lag }
    }
}

/// Whether this platform and kernel take software receive timestamps.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn probe() -> Result<Keep, String> {
    sys::probe().map_err(|e| format!("setsockopt SO_TIMESTAMPING failed: {e}"))
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn probe() -> Result<Keep, String> {
    Err("kernel receive timestamps need Linux (64-bit)".into())
}

/// A TCP socket whose reads (with stamps on) go through `recvmsg` and keep the kernel's
/// receive time of the newest bytes read. Writes go straight to the socket.
#[derive(Debug)]
pub(crate) struct StampedTcp {
    tcp: TcpStream,
    stamped: bool,
    /// CLOCK_REALTIME ns of the stamp of the newest read that brought bytes (`None` when it
    /// carried none). Kept until the next such read: TLS may hand out plaintext of it later.
    last_ns: Option<i128>,
}

impl StampedTcp {
    /// Whether reads go through `recvmsg` with stamps.
    pub(crate) fn is_stamped(&self) -> bool {
        self.stamped
    }

    /// The newest kernel receive stamp read so far (CLOCK_REALTIME ns).
    pub(crate) fn last_stamp_ns(&self) -> Option<i128> {
        self.last_ns
    }

    /// A read that returns fewer bytes than the buffer holds drained the socket: readiness is
    /// cleared with it (as tokio's own `TcpStream::poll_read` does), so the next poll waits
    /// for the reactor instead of making a `recvmsg` that can only say `EAGAIN` — about one
    /// such call per event at 1,000 streams before (docs/performance.md, "Goals against
    /// vLLM's Rust client"). The clearing goes through `try_io`, which clears only if no
    /// readiness event came in since the one this read started from: data that arrived
    /// meanwhile still wakes the reader.
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    fn poll_recv(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        use std::os::fd::AsFd;
        loop {
            std::task::ready!(self.tcp.poll_read_ready(cx))?;
            let dst = buf.initialize_unfilled();
            let room = dst.len();
            let mut control: sys::Control = [0; 16];
            let fd = self.tcp.as_fd();
            let mut read = None;
            let outcome = self.tcp.try_io(tokio::io::Interest::READABLE, || {
                let (n, used) = sys::recv(fd, dst, &mut control)?;
                read = Some((n, used));
                // WouldBlock here only clears readiness; the bytes are taken below.
                if n > 0 && n < room {
                    Err(io::ErrorKind::WouldBlock.into())
                } else {
                    Ok(())
                }
            });
            match (read, outcome) {
                (Some((n, used)), _) => {
                    if n > 0 {
                        self.last_ns = (used > 0).then(|| stamp_of(&control, used)).flatten();
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                (None, Err(e)) if e.kind() == io::ErrorKind::WouldBlock => continue,
                (None, Err(e)) => return Poll::Ready(Err(e)),
                (None, Ok(())) => continue,
            }
        }
    }

    #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
    fn poll_recv(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

/// The time of a read that just brought bytes: the kernel's receive time when `stamp_ns` is
/// the read's stamp, else the monotonic time now; counted in `stats`. The realtime clock is read
/// before the monotonic one, so a preemption between the two readings makes the time later
/// (as a user-space read time would be), never earlier than the bytes' arrival.
pub(crate) fn read_time(stats: &LagStats, stamp_ns: Option<i128>) -> Instant {
    let Some(k) = stamp_ns else {
        stats.user_only();
        return Instant::now();
    };
    let real_now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i128).unwrap_or(0);
    let user = Instant::now();
    match lag::map(k, real_now, user) {
        Mapped::Kernel { at, lag } => {
            stats.kernel(lag);
            at
        }
        Mapped::Anomaly => {
            stats.anomaly();
            user
        }
    }
}

/// The software receive stamp in the first `used` bytes of a control buffer.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn stamp_of(control: &sys::Control, used: usize) -> Option<i128> {
    let mut bytes = [0u8; std::mem::size_of::<sys::Control>()];
    for (chunk, w) in bytes.chunks_exact_mut(8).zip(control.iter()) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
    cmsg::software_rx_ns(&bytes[..used])
}

impl AsyncRead for StampedTcp {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.stamped {
            this.poll_recv(cx, buf)
        } else {
            Pin::new(&mut this.tcp).poll_read(cx, buf)
        }
    }
}

impl AsyncWrite for StampedTcp {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests;
