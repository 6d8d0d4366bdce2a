//! Whether the server can be reached at all: a connection that is refused, a host name that
//! does not resolve or a connect that times out means nothing listens there (SB315), which no
//! amount of retrying a request fixes — unlike a server that answers with an error.

use super::HttpClient;
use servebench_core::{BenchError, Result, UnreachableReason};

impl HttpClient {
    /// `host:port` of the origin (as named in SB315 messages).
    pub fn host_port(&self) -> String {
        let o = &self.inner.origin;
        format!("{}:{}", o.host, o.port)
    }

    /// SB315 for this origin, with the reason connecting gave.
    pub(crate) fn unreachable_error(&self, reason: UnreachableReason) -> BenchError {
        BenchError::Unreachable {
            addr: self.host_port(),
            reason: reason.as_str().to_owned(),
            waited: String::new(),
        }
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
            Err(e) => Err(match (self.connect_failure(), e.unreachable()) {
                (Some(typed), _) => typed.to_error(&format!("connect {}", self.origin())),
                (None, Some(reason)) => self.unreachable_error(reason),
                (None, None) => BenchError::transport_from(format!("connect {}", self.origin()), e),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
