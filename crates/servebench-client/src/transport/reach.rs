//! Whether the server can be reached at all: a connection that is refused, a host name that
//! does not resolve or a connect that times out means nothing listens there (SB315), which no
//! amount of retrying a request fixes — unlike a server that answers with an error.

use super::HttpClient;
use servebench_core::{BenchError, Result};

/// What a connect failure (as `connect` words it) says about reachability: `Some(reason)`
/// when the server cannot be reached at all, `None` for other failures (TLS, a closed
/// connection).
pub fn unreachable_reason(message: &str) -> Option<&'static str> {
    let m = message.to_ascii_lowercase();
    if m.contains("connection refused") {
        Some("connection refused")
    } else if m.starts_with("resolve ") {
        Some("the host name does not resolve")
    } else if m.starts_with("connect to ") && m.contains("timed out") {
        Some("connecting timed out")
    } else if m.contains("network is unreachable") || m.contains("no route to host") {
        Some("no route to the host")
    } else {
        None
    }
}

impl HttpClient {
    /// `host:port` of the origin (as named in SB315 messages).
    pub fn host_port(&self) -> String {
        let o = &self.inner.origin;
        format!("{}:{}", o.host, o.port)
    }

    /// The SB315 error for a connect failure `message`, if it means the server is unreachable.
    pub fn unreachable_error(&self, message: &str) -> Option<BenchError> {
        unreachable_reason(message).map(|reason| BenchError::Unreachable {
            addr: self.host_port(),
            reason: reason.to_owned(),
            waited: String::new(),
        })
    }

    /// Opens one connection (kept in the pool): `Err(SB315)` when the server cannot be reached,
    /// SB310/SB312 for a certificate or proxy failure, `Err(SB304)` for another connect failure,
    /// `Ok` otherwise.
    pub async fn check_reachable(&self) -> Result<()> {
        match self.connect().await {
            Ok(c) => {
                self.checkin(c);
                Ok(())
            }
            // A certificate or proxy failure keeps its own code (SB310, SB312).
            Err(e) => Err(match self.connect_failure() {
                Some(typed) => typed.to_error(&format!("connect {}", self.origin())),
                None => self.unreachable_error(&e).unwrap_or_else(|| BenchError::Transport {
                    context: format!("connect {}", self.origin()),
                    detail: e,
                }),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_dns_and_timeouts_are_unreachable_tls_is_not() {
        let refused = "connect to 127.0.0.1:1: Connection refused (os error 111)";
        assert_eq!(unreachable_reason(refused), Some("connection refused"));
        let dns = "resolve nosuchhost.invalid: failed to lookup address information";
        assert_eq!(unreachable_reason(dns), Some("the host name does not resolve"));
        let slow = "connect to http://10.0.0.1:80 timed out after 10s";
        assert_eq!(unreachable_reason(slow), Some("connecting timed out"));
        assert_eq!(unreachable_reason("TLS handshake with https://x:443: invalid peer certificate"), None);
        assert_eq!(unreachable_reason("connection closed before the request was sent: eof"), None);
    }

    #[tokio::test]
    async fn a_port_nobody_listens_on_is_sb315_naming_host_and_port() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let client = HttpClient::new(crate::transport::ClientOptions {
            base_url: format!("http://127.0.0.1:{port}"),
            ..Default::default()
        })
        .unwrap();
        let e = client.check_reachable().await.unwrap_err();
        assert_eq!(e.code(), servebench_core::ErrorCode::Unreachable);
        let line = e.user_line();
        assert!(line.contains(&format!("cannot connect to 127.0.0.1:{port}: connection refused")), "{line}");
        assert_eq!(line.matches("fix:").count(), 1, "{line}");
    }
}
