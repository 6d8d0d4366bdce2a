//! The network flags (`crate::cli::network`, `crate::cli::live`) as the runner's options: TLS
//! trust and identity, proxies, the live metrics address. The environment (`SSL_CERT_FILE`,
//! `HTTPS_PROXY`, ...) is read once, by [`with_process_env`], so everything else stays pure.

use crate::cli::live::LiveArgs;
use crate::cli::network::NetworkArgs;
use servebench_client::transport::{ProxyEnv, ProxyOptions, TlsOptions, TrustEnv};
use servebench_runner::config::RunConfig;

impl NetworkArgs {
    /// TLS options from the flags (no environment yet).
    pub fn tls_options(&self) -> TlsOptions {
        TlsOptions {
            cacert: self.cacert.clone(),
            client_cert: self.client_cert.clone(),
            client_key: self.client_key.clone(),
            env: TrustEnv::default(),
        }
    }

    /// Proxy options from the flags (no environment yet).
    pub fn proxy_options(&self) -> ProxyOptions {
        ProxyOptions { env: ProxyEnv::default(), disabled: self.no_proxy }
    }
}

/// Fills the run's TLS and proxy environment from this process's variables.
pub fn with_process_env(run: &mut RunConfig) {
    run.tls.env = TrustEnv::from_process();
    run.proxy.env = ProxyEnv::from_process();
}

impl LiveArgs {
    /// The address to serve live metrics on, if asked for.
    pub fn metrics_listen(&self) -> servebench_core::Result<Option<std::net::SocketAddr>> {
        let Some(port) = self.metrics_port else { return Ok(None) };
        Ok(Some(std::net::SocketAddr::new(self.metrics_host, port)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(port: Option<u16>, host: &str) -> LiveArgs {
        LiveArgs {
            metrics_port: port,
            metrics_host: crate::cli::values::metrics_host(host).unwrap(),
            tui: false,
            no_tui: false,
            max_records_in_memory: 10,
        }
    }

    #[test]
    fn metrics_listen_address() {
        assert_eq!(args(None, "127.0.0.1").metrics_listen().unwrap(), None);
        assert_eq!(
            args(Some(9100), "0.0.0.0").metrics_listen().unwrap(),
            Some("0.0.0.0:9100".parse().unwrap())
        );
        assert_eq!(args(Some(0), "::1").metrics_listen().unwrap(), Some("[::1]:0".parse().unwrap()));
        assert!(crate::cli::values::metrics_host("localhost").is_err());
    }
}
