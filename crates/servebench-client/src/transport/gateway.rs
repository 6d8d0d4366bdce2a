//! Answers of a gateway in front of the server that stand for a connection failure, not for a
//! refused request: an mTLS gateway (nginx) that completed the handshake without a client
//! certificate and answers HTTP 400 "No required SSL certificate was sent", and an HTTP proxy
//! (squid) answering an absolute-form request with 407. They get the codes of the connection
//! failures they are (SB310, SB312), with the fix, instead of a quoted HTML page and a fix
//! about the request.

use super::failure::ConnectFailure;
use super::tls::FIX_CLIENT_CERT;

/// What an nginx mTLS gateway says (status 400, or its internal 495/496) when the client sent
/// no certificate, or one it could not verify.
const NO_CLIENT_CERT: &[&str] = &["no required ssl certificate was sent", "400 ssl certificate required"];
const BAD_CLIENT_CERT: &[&str] = &["the ssl certificate error"];

impl super::HttpClient {
    /// The connection failure an error status stands for, from its status and the start of
    /// its body (`body`, the bytes read): the one place that reads a gateway's page. Also
    /// noted in the client's latch, so the readiness check stops at once.
    pub(crate) fn gateway_failure(&self, status: u16, body: &[u8]) -> Option<ConnectFailure> {
        let f = self.diagnose(status, body)?;
        self.inner.failures.set(f.clone());
        Some(f)
    }

    fn diagnose(&self, status: u16, body: &[u8]) -> Option<ConnectFailure> {
        match status {
            400 | 495 | 496 => self.client_certificate_page(status, body),
            407 => self.proxy_refusal(),
            _ => None,
        }
    }

    /// nginx's page for a client certificate missing (400 "No required SSL certificate was
    /// sent", 496) or not verified (400 "The SSL certificate error", 495).
    fn client_certificate_page(&self, status: u16, body: &[u8]) -> Option<ConnectFailure> {
        let text = String::from_utf8_lossy(body).to_ascii_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
        let detail = if status == 496 || has(NO_CLIENT_CERT) {
            let what = if self.inner.opts.tls.client_cert.is_some() {
                "the client certificate given was not sent (check that --client-key matches it)"
            } else {
                "none was given"
            };
            format!(
                "the gateway answered HTTP {status} \"No required SSL certificate was sent\": it requires a \
                 client certificate (mutual TLS) and {what}"
            )
        } else if status == 495 || has(BAD_CLIENT_CERT) {
            format!("the gateway answered HTTP {status} \"The SSL certificate error\": it rejected the client certificate")
        } else {
            return None;
        };
        Some(ConnectFailure::Certificate { detail, fix: FIX_CLIENT_CERT })
    }

    /// A 407 to an absolute-form request through the proxy (a `CONNECT` refusal is the
    /// tunnel's, `proxy::tunnel`).
    fn proxy_refusal(&self) -> Option<ConnectFailure> {
        let p = self.inner.proxy.as_ref().filter(|p| !p.tunnel)?;
        let hint = if p.auth.is_some() {
            "the proxy refused the credentials in the proxy URL"
        } else {
            "put credentials in the proxy URL: http://user:password@proxy:port"
        };
        Some(ConnectFailure::Proxy {
            proxy: p.display.clone(),
            detail: format!("answered HTTP 407 Proxy Authentication Required ({hint}; from {})", p.source),
            permanent: true,
        })
    }
}
