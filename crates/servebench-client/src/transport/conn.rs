//! One HTTP/1.1 connection: TCP (+ TLS), hyper's client connection state machine, and the
//! driver that runs that state machine inside the calling task.
//!
//! hyper's `client::conn::http1` splits a connection into a `SendRequest` handle and a
//! `Connection` future that does the I/O. Most clients spawn the future as its own task; we
//! poll it from the request's task instead ([`Conn::drive`]). Body frames then reach the
//! request without a cross-task wake-up (one less hop between the socket read and the
//! timestamp), and an idle pooled connection is checked by polling it once at checkout: a
//! close that the server sent while it sat idle is read right then (see [`Conn::check_idle`]).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Request body type used on every connection.
pub(crate) type ReqBody = Full<Bytes>;

/// A TCP stream, plain or TLS.
#[derive(Debug)]
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
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

/// A live HTTP/1.1 connection driven by whoever holds it.
pub(crate) struct Conn {
    pub(crate) sender: SendRequest<ReqBody>,
    /// Boxed: hyper's connection state is large, and a `Conn` is moved (pool → send → request)
    /// and held inside every request future.
    conn: Box<Connection<TokioIo<Stream>, ReqBody>>,
    /// The connection future finished (closed or failed): never reuse.
    done: bool,
    /// Requests completed on this connection.
    pub(crate) uses: u32,
    /// When it was last returned to the pool.
    pub(crate) idle_since: Instant,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("done", &self.done).field("uses", &self.uses).finish()
    }
}

/// The outcome of [`Conn::drive`] when the future did not complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// The given deadline passed.
    Deadline,
}

impl Conn {
    /// Performs the HTTP/1.1 handshake (no bytes are exchanged) over `stream`.
    pub(crate) async fn handshake(stream: Stream) -> hyper::Result<Conn> {
        let (sender, conn) = hyper::client::conn::http1::Builder::new()
            .max_buf_size(1 << 20)
            .handshake(TokioIo::new(stream))
            .await?;
        Ok(Conn { sender, conn: Box::new(conn), done: false, uses: 0, idle_since: Instant::now() })
    }

    /// Whether the connection is known to be unusable.
    pub(crate) fn is_done(&self) -> bool {
        self.done || self.sender.is_closed()
    }

    fn poll_conn(&mut self, cx: &mut Context<'_>) {
        if !self.done && Pin::new(&mut self.conn).poll(cx).is_ready() {
            self.done = true;
        }
    }

    /// Polls `fut` to completion while driving the connection's I/O in the same task.
    /// With a `deadline`, gives up when it passes (the connection must then be dropped).
    pub(crate) async fn drive<F: Future + Unpin>(
        &mut self,
        mut fut: F,
        deadline: Option<&mut Pin<Box<tokio::time::Sleep>>>,
    ) -> Result<F::Output, Interrupted> {
        let mut deadline = deadline;
        std::future::poll_fn(move |cx| {
            self.poll_conn(cx);
            if let Poll::Ready(out) = Pin::new(&mut fut).poll(cx) {
                return Poll::Ready(Ok(out));
            }
            if let Some(d) = deadline.as_mut() {
                if d.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(Interrupted::Deadline));
                }
            }
            Poll::Pending
        })
        .await
    }

    /// Lets the connection process what it already read (e.g. a `Connection: close` that ends
    /// it) without waiting, so a connection that is about to close is not pooled.
    pub(crate) async fn settle(&mut self) {
        std::future::poll_fn(|cx| {
            self.poll_conn(cx);
            Poll::Ready(())
        })
        .await
    }

    /// Checks an idle connection before reuse by polling it once: a close or reset the server
    /// sent while it was idle is read now. Returns whether it can take a request.
    pub(crate) async fn check_idle(&mut self) -> bool {
        std::future::poll_fn(|cx| {
            self.poll_conn(cx);
            if self.done {
                return Poll::Ready(false);
            }
            Poll::Ready(matches!(self.sender.poll_ready(cx), Poll::Ready(Ok(()))))
        })
        .await
    }
}

/// Builds the TLS client configuration (webpki roots, or any certificate when `insecure`).
pub(crate) fn tls_config(insecure: bool) -> Result<Arc<ClientConfig>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder =
        ClientConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert { provider }))
            .with_no_client_auth()
    } else {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Opens a TLS session over `tcp`.
pub(crate) async fn tls_connect(connector: &TlsConnector, host: &str, tcp: TcpStream) -> io::Result<Stream> {
    let name = ServerName::try_from(host.to_owned())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    Ok(Stream::Tls(Box::new(connector.connect(name, tcp).await?)))
}

/// `--insecure`: accepts any server certificate, but still checks handshake signatures.
#[derive(Debug)]
struct AcceptAnyCert {
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_configs_build() {
        assert!(tls_config(false).is_ok());
        assert!(tls_config(true).is_ok());
    }
}
