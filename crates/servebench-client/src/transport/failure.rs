//! Typed connection failures that a message string cannot carry: a certificate the client
//! does not trust (or a client certificate the server rejected) and a proxy that refused or
//! could not be reached. The connect path notes the latest one in the client's latch; the
//! control plane turns it into its coded error (SB310, SB312) and the readiness check asks
//! [`ConnectFailure::is_permanent`] to stop at once instead of retrying.

use std::sync::Mutex;

use servebench_core::{BenchError, FailureCause};

/// A connection failure with a stable code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectFailure {
    /// The certificate check failed (SB310). Always permanent.
    Certificate { detail: String, fix: &'static str },
    /// The proxy failed (SB312). `permanent` when waiting cannot help (407, 403, an
    /// unsupported proxy, an unreachable proxy); a 5xx to CONNECT (the proxy could not reach
    /// a server that may still be starting) is not.
    Proxy { proxy: String, detail: String, permanent: bool },
}

impl ConnectFailure {
    /// Whether retrying cannot fix it (the readiness check stops at once).
    pub fn is_permanent(&self) -> bool {
        match self {
            ConnectFailure::Certificate { .. } => true,
            ConnectFailure::Proxy { permanent, .. } => *permanent,
        }
    }

    /// The coded error; `context` names the call (e.g. `GET https://host:443/v1/models`).
    pub fn to_error(&self, context: &str) -> BenchError {
        match self {
            ConnectFailure::Certificate { detail, fix } => BenchError::TlsCertificate {
                context: context.to_owned(),
                detail: detail.clone(),
                fix: (*fix).to_owned(),
            },
            ConnectFailure::Proxy { proxy, detail, .. } => {
                BenchError::Proxy { proxy: proxy.clone(), detail: detail.clone() }
            }
        }
    }

    /// The typed cause of a request failed by it (the code a record carries).
    pub fn cause(&self) -> FailureCause {
        match self {
            ConnectFailure::Certificate { .. } => FailureCause::ClientCertificate,
            ConnectFailure::Proxy { .. } => FailureCause::Proxy,
        }
    }

    /// One line for a request record's error message (with the fix, no secrets).
    pub fn message(&self) -> String {
        match self {
            ConnectFailure::Certificate { detail, fix } => {
                format!("TLS certificate check failed: {detail}; fix: {fix}")
            }
            ConnectFailure::Proxy { proxy, detail, .. } => format!("proxy {proxy}: {detail}"),
        }
    }
}

/// The latest typed connection failure of a client; a successful connection clears it.
#[derive(Debug, Default)]
pub(crate) struct FailureLatch(Mutex<Option<ConnectFailure>>);

impl FailureLatch {
    pub(crate) fn set(&self, f: ConnectFailure) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }

    pub(crate) fn clear(&self) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Cleared by a successful connect; a rejected client certificate (seen on the first
        // read after the handshake) is set again by that read.
        if g.is_some() {
            *g = None;
        }
    }

    pub(crate) fn get(&self) -> Option<ConnectFailure> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
