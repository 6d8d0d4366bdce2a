//! Typed transport failures: what the HTTP/1.1 codec (`h1.rs`), one connection (`conn.rs`) and
//! opening a connection (`HttpClient::connect`) fail with. Callers decide by variant — retry an
//! unanswered request, stop on a server that does not speak HTTP/1.1, call a refused connection
//! "unreachable" — never by reading a message. The messages (`Display`) are the ones records and
//! errors show.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use servebench_core::{FailureCause, UnreachableReason};

use super::failure::ConnectFailure;

/// A response head that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HeadParseError {
    #[error("response head larger than {max} bytes", max = super::limits::MAX_HEAD_BYTES)]
    TooLarge,
    /// The answer is not HTTP/1.x (SB308): an HTTP/2 frame or status line, TLS, another
    /// protocol. The text says which.
    #[error("{0}")]
    NotHttp1(String),
    #[error("invalid response head: {0}")]
    Syntax(#[source] httparse::Error),
    #[error("invalid status code {0}")]
    Status(u16),
    #[error("invalid response header name '{0}'")]
    HeaderName(String),
    #[error("invalid value of response header '{0}'")]
    HeaderValue(String),
    #[error("invalid content-length '{0}'")]
    ContentLength(String),
    #[error("conflicting content-length '{0}'")]
    ConflictingLength(String),
    /// A transfer coding other than `chunked` (SB306): the body cannot be framed into events.
    #[error("response body in the transfer coding '{0}': servebench decodes chunked only")]
    TransferCoding(String),
}

/// A response body that violates HTTP/1.1 framing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("chunk line longer than {max} bytes", max = super::limits::MAX_LINE_BYTES)]
    LineTooLong,
    #[error("invalid chunk size line '{0}'")]
    ChunkSize(String),
    #[error("chunk size too large")]
    ChunkTooLarge,
    #[error("chunk data not followed by CRLF")]
    ChunkEnd,
    /// End of file before the body ended (`Content-Length` or chunked body cut short).
    #[error("connection closed before the response body ended")]
    Truncated,
}

/// Why reading a response head failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadHeadError {
    /// The given deadline passed. Not a failure of the connection by itself: the caller
    /// decides.
    #[error("the deadline passed")]
    Deadline,
    /// The bytes that arrived are not a valid HTTP/1.1 response head.
    #[error(transparent)]
    Parse(#[from] HeadParseError),
    /// End of file before one byte of a response (the server had closed the connection).
    #[error("connection closed before the response head")]
    Unanswered,
    /// End of file in the middle of the head.
    #[error("connection closed in the middle of the response head")]
    Cut,
    /// A read failed; `answered`: some bytes of a response had arrived before.
    #[error("reading the response head: {source}")]
    Io { source: io::Error, answered: bool },
}

impl ReadHeadError {
    /// Not one byte of a response arrived (EOF or reset right after the request was written):
    /// the server never processed the request.
    pub(crate) fn unanswered(&self) -> bool {
        matches!(self, ReadHeadError::Unanswered | ReadHeadError::Io { answered: false, .. })
    }

    /// The server does not speak HTTP/1.1 (SB308).
    pub(crate) fn is_not_http1(&self) -> bool {
        matches!(self, ReadHeadError::Parse(HeadParseError::NotHttp1(_)))
    }

    /// The body is in a transfer coding servebench does not decode (SB306).
    pub(crate) fn is_transfer_coding(&self) -> bool {
        matches!(self, ReadHeadError::Parse(HeadParseError::TransferCoding(_)))
    }
}

/// Why reading the next piece of a response body failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadBodyError {
    /// The given deadline passed (see [`ReadHeadError::Deadline`]).
    #[error("the deadline passed")]
    Deadline,
    /// The body violates HTTP/1.1 framing.
    #[error("invalid response body: {0}")]
    Invalid(#[source] BodyError),
    /// The connection ended before the body did.
    #[error(transparent)]
    Ended(BodyError),
    /// A read failed.
    #[error("reading the response body: {0}")]
    Io(#[source] io::Error),
}

/// How writing a request failed.
#[derive(Debug)]
pub(crate) enum WriteFail {
    /// Nothing of the request was written.
    Unsent(io::Error),
    /// Part of the request may have reached the server.
    Partial(io::Error),
    /// The deadline passed; `written`: some bytes had been written.
    Deadline { written: bool },
}

/// Why a new connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// The host name does not resolve.
    #[error("resolve {host}: {source}")]
    Resolve { host: String, source: io::Error },
    /// The host name resolves to no address.
    #[error("resolve {host}: no addresses")]
    NoAddresses { host: String },
    /// The TCP connect to `addr` failed (the last address tried).
    #[error("connect to {addr}: {source}{}", local_port_hint(source))]
    Tcp { addr: SocketAddr, source: io::Error },
    /// TCP, TLS and the tunnel did not complete within the connect timeout.
    #[error("connect to {origin} timed out after {after:?}")]
    TimedOut { origin: String, after: Duration },
    /// The proxy could not be reached or refused the tunnel (SB312; the typed failure is in
    /// the client's latch too).
    #[error("{}", .0.message())]
    Proxy(ConnectFailure),
    /// The TLS handshake failed (a certificate failure is typed in the client's latch too).
    #[error("TLS handshake with {origin}: {source}")]
    Tls { origin: String, source: TlsConnectError },
}

/// What `EADDRNOTAVAIL` on a connect means in a benchmark, and what to do: every local port to
/// the server is taken, typically by the previous runs' connections in TIME_WAIT (60 s on
/// Linux; docs/performance.md, "Ephemeral ports").
fn local_port_hint(e: &io::Error) -> &'static str {
    if e.kind() == io::ErrorKind::AddrNotAvailable {
        " (no free local port: earlier connections may still be in TIME_WAIT; wait a minute \
         between large runs, or widen net.ipv4.ip_local_port_range)"
    } else {
        ""
    }
}

/// Why a TLS session could not be opened over a connected socket.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsConnectError {
    /// The host is neither a DNS name nor an IP address rustls accepts.
    #[error("invalid TLS server name: {0}")]
    ServerName(#[source] rustls::pki_types::InvalidDnsNameError),
    /// The certificate check failed (SB310): the server's certificate is not trusted, or the
    /// server rejected ours. The message says which and names the fix.
    #[error("{}", failure.message())]
    Certificate { failure: ConnectFailure, source: io::Error },
    /// Any other handshake failure (a reset, a protocol alert, an unexpected message).
    #[error("{0}")]
    Handshake(#[source] io::Error),
}

/// A request that `http` refuses to build (an invalid request target).
#[derive(Debug, thiserror::Error)]
#[error("invalid request: {0}")]
pub(crate) struct RequestBuildError(#[source] pub(crate) http::Error);

impl ConnectError {
    /// `Some(reason)` when the server cannot be reached at all (SB315): nothing listens, the
    /// name does not resolve, connecting timed out, no route. `None` for other failures (TLS,
    /// a proxy), which have codes of their own.
    pub(crate) fn unreachable(&self) -> Option<UnreachableReason> {
        match self {
            ConnectError::Resolve { .. } | ConnectError::NoAddresses { .. } => {
                Some(UnreachableReason::NoResolve)
            }
            ConnectError::TimedOut { .. } => Some(UnreachableReason::ConnectTimeout),
            ConnectError::Tcp { source, .. } => match source.kind() {
                io::ErrorKind::ConnectionRefused => Some(UnreachableReason::Refused),
                io::ErrorKind::TimedOut => Some(UnreachableReason::ConnectTimeout),
                io::ErrorKind::NetworkUnreachable | io::ErrorKind::HostUnreachable => {
                    Some(UnreachableReason::NoRoute)
                }
                _ => None,
            },
            ConnectError::Proxy(_) | ConnectError::Tls { .. } => None,
        }
    }
}

/// How sending a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendFailKind {
    /// No connection could be established (nothing was sent).
    Connect,
    /// The request may have been (partly) written, then the connection failed.
    Transport,
    /// The deadline passed.
    Timeout,
}

/// A failed send.
#[derive(Debug)]
pub(crate) struct SendFailure {
    pub kind: SendFailKind,
    /// What happened, without a code tag (see [`SendFailure::record_message`]).
    pub message: String,
    /// The coded failure it stands for, typed where it happened: the server is unreachable
    /// (SB315), does not speak HTTP/1.1 (SB308), or redirected where it cannot be followed
    /// (SB307).
    pub cause: Option<FailureCause>,
    /// When the (last) attempt started writing, if it got that far.
    pub dispatched: Option<Instant>,
    pub reconnects: u32,
    /// The request was written twice (see [`super::Sent::resent`]).
    pub resent: bool,
}

impl SendFailure {
    /// The message of a request record: with its code tag (`[SB308] ...`) when the failure
    /// has one.
    pub(crate) fn record_message(&self) -> String {
        match self.cause {
            Some(c) => c.tagged(&self.message),
            None => self.message.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_dns_timeouts_and_no_route_are_unreachable_tls_and_proxies_are_not() {
        let tcp = |kind: io::ErrorKind| ConnectError::Tcp {
            addr: SocketAddr::from(([127, 0, 0, 1], 1)),
            source: io::Error::from(kind),
        };
        assert_eq!(tcp(io::ErrorKind::ConnectionRefused).unreachable(), Some(UnreachableReason::Refused));
        // Out of local ports: not "unreachable"; the message says what it is and what to do.
        let no_port = tcp(io::ErrorKind::AddrNotAvailable);
        assert_eq!(no_port.unreachable(), None);
        assert!(
            no_port.to_string().contains("no free local port") && no_port.to_string().contains("TIME_WAIT")
        );
        assert!(!tcp(io::ErrorKind::ConnectionRefused).to_string().contains("local port"));
        assert_eq!(tcp(io::ErrorKind::HostUnreachable).unreachable(), Some(UnreachableReason::NoRoute));
        assert_eq!(tcp(io::ErrorKind::NetworkUnreachable).unreachable(), Some(UnreachableReason::NoRoute));
        assert_eq!(tcp(io::ErrorKind::TimedOut).unreachable(), Some(UnreachableReason::ConnectTimeout));
        assert_eq!(tcp(io::ErrorKind::PermissionDenied).unreachable(), None);
        let dns = ConnectError::Resolve { host: "nosuchhost.invalid".into(), source: io::Error::other("x") };
        assert_eq!(dns.unreachable(), Some(UnreachableReason::NoResolve));
        let slow =
            ConnectError::TimedOut { origin: "http://10.0.0.1:80".into(), after: Duration::from_secs(10) };
        assert_eq!(slow.unreachable(), Some(UnreachableReason::ConnectTimeout));
        assert_eq!(slow.to_string(), "connect to http://10.0.0.1:80 timed out after 10s");
        let reset =
            TlsConnectError::Handshake(io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer"));
        let tls = ConnectError::Tls { origin: "https://x:443".into(), source: reset };
        assert_eq!(tls.unreachable(), None);
        assert_eq!(tls.to_string(), "TLS handshake with https://x:443: reset by peer");
        let io_source = std::error::Error::source(&tls).and_then(std::error::Error::source);
        assert_eq!(
            io_source.and_then(|s| s.downcast_ref::<io::Error>()).map(io::Error::kind),
            Some(io::ErrorKind::ConnectionReset)
        );
        let proxy = ConnectError::Proxy(ConnectFailure::Proxy {
            proxy: "http://p:3128".into(),
            detail: "unreachable: connect to 10.0.0.9:3128: Connection refused".into(),
            permanent: true,
        });
        assert_eq!(proxy.unreachable(), None, "a proxy failure is SB312, not SB315");
    }

    #[test]
    fn only_a_silent_close_is_unanswered() {
        assert!(ReadHeadError::Unanswered.unanswered());
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert!(ReadHeadError::Io { source: reset, answered: false }.unanswered());
        assert!(!ReadHeadError::Cut.unanswered());
        assert!(!ReadHeadError::Parse(HeadParseError::Status(999)).unanswered());
        assert!(ReadHeadError::Parse(HeadParseError::NotHttp1("x".into())).is_not_http1());
    }
}
