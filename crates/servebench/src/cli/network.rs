//! Network flags: TLS trust and client identity (`--cacert`, `--client-cert`, `--client-key`),
//! proxies (`--no-proxy`), and the simulator's HTTPS (`--sim-tls`, `--sim-tls-ca-out`,
//! `--sim-client-ca`). Turned into the runner's options by `config::network`.

use clap::Args;
use std::path::PathBuf;

/// TLS and proxy flags of a run.
#[derive(Debug, Clone, Default, Args)]
pub struct NetworkArgs {
    /// PEM bundle of the CA(s) to trust for https (replaces the system store, SSL_CERT_FILE and
    /// SSL_CERT_DIR, as curl's --cacert does).
    #[arg(long, value_name = "PATH", help_heading = "Connection")]
    pub cacert: Option<PathBuf>,
    /// Client certificate chain (PEM) for mutual TLS; may also hold the key.
    #[arg(long, value_name = "PATH", help_heading = "Connection")]
    pub client_cert: Option<PathBuf>,
    /// Private key (PEM, unencrypted) of --client-cert.
    #[arg(long, value_name = "PATH", requires = "client_cert", help_heading = "Connection")]
    pub client_key: Option<PathBuf>,
    /// Ignore HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY: always connect directly.
    #[arg(long, help_heading = "Connection")]
    pub no_proxy: bool,
    /// Time response bytes with user-space read times instead of the kernel's receive
    /// timestamps (SO_TIMESTAMPING, Linux; used by default where supported; docs/metrics.md,
    /// "Receive timestamps").
    #[arg(long, help_heading = "Connection")]
    pub no_kernel_timestamps: bool,
    /// Keep the kernel's default scheduler time slice for the client's threads instead of
    /// asking for the shortest one (0.1 ms, Linux 6.12+), with which a thread woken by
    /// arriving bytes preempts other work on its core sooner (docs/metrics.md, "Receive
    /// timestamps").
    #[arg(long, help_heading = "Connection")]
    pub no_short_time_slice: bool,
}

/// HTTPS for the simulator (`servebench sim --tls`, `servebench --sim --sim-tls`).
#[derive(Debug, Clone, Default, Args)]
pub struct SimTlsArgs {
    /// Simulator: serve HTTPS with a certificate generated at start (SANs localhost,
    /// 127.0.0.1, ::1), signed by a fresh CA written to --sim-tls-ca-out.
    #[arg(long, alias = "tls")]
    pub sim_tls: bool,
    /// Simulator: where to write the CA certificate (PEM) of --sim-tls (default: a file in the
    /// temp directory; the path is printed).
    #[arg(long, alias = "tls-ca-out", value_name = "PATH", requires = "sim_tls")]
    pub sim_tls_ca_out: Option<PathBuf>,
    /// Simulator: require client certificates signed by this CA bundle (PEM): mutual TLS.
    #[arg(long, value_name = "PATH", requires = "sim_tls")]
    pub sim_client_ca: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    #[test]
    fn network_flags_parse_and_key_needs_cert() {
        let cli = Cli::try_parse_from([
            "servebench",
            "--cacert",
            "ca.pem",
            "--client-cert",
            "c.pem",
            "--client-key",
            "k.pem",
            "--no-proxy",
        ])
        .unwrap();
        let n = &cli.run.network;
        assert_eq!(n.tls_options().cacert.unwrap().to_str(), Some("ca.pem"));
        assert!(n.proxy_options().disabled);
        assert!(Cli::try_parse_from(["servebench", "--client-key", "k.pem"]).is_err());
    }

    #[test]
    fn sim_tls_flags_parse_with_their_short_aliases() {
        let cli = Cli::try_parse_from(["servebench", "sim", "--tls", "--tls-ca-out", "/tmp/ca.pem"]).unwrap();
        match cli.command {
            Some(Command::Sim(a)) => {
                assert!(a.sim.sim_tls.sim_tls);
                assert_eq!(a.sim.sim_tls.sim_tls_ca_out.unwrap().to_str(), Some("/tmp/ca.pem"));
            }
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["servebench", "sim", "--sim-client-ca", "x.pem"]).is_err());
    }
}
