//! The simulator's HTTPS setup from `--sim-tls`, `--sim-tls-ca-out` and `--sim-client-ca`: a
//! fresh CA and server certificate, with the CA certificate written where clients can find it.

use crate::cli::network::SimTlsArgs;
use servebench_core::BenchError;
use servebench_sim::SimTls;
use std::path::PathBuf;

/// A generated TLS setup and the file holding its CA certificate.
#[derive(Debug)]
pub struct SimTlsSetup {
    pub tls: SimTls,
    /// Where the CA certificate (PEM) was written.
    pub ca_path: PathBuf,
    /// The file is ours (default temp path): removed when the simulator stops.
    owned: bool,
}

impl SimTlsSetup {
    /// `None` without `--sim-tls`.
    pub fn new(args: &SimTlsArgs) -> anyhow::Result<Option<SimTlsSetup>> {
        if !args.sim_tls {
            return Ok(None);
        }
        let tls = SimTls::generate(args.sim_client_ca.as_deref())?;
        let (ca_path, owned) = match &args.sim_tls_ca_out {
            Some(p) => (p.clone(), false),
            None => {
                let name = format!("servebench-sim-ca-{}-{}.pem", std::process::id(), unique());
                (std::env::temp_dir().join(name), true)
            }
        };
        std::fs::write(&ca_path, tls.ca_pem()).map_err(|e| BenchError::io(ca_path.display(), e))?;
        Ok(Some(SimTlsSetup { tls, ca_path, owned }))
    }

    /// One line for the console: where the CA is and whether client certificates are required.
    pub fn describe(&self) -> String {
        let mtls = if self.tls.is_mutual() { "; client certificates required (mutual TLS)" } else { "" };
        format!(
            "HTTPS with a generated certificate (localhost, 127.0.0.1, ::1); CA certificate written to {} \
             (pass it to clients with --cacert or SSL_CERT_FILE){mtls}",
            self.ca_path.display()
        )
    }
}

impl Drop for SimTlsSetup {
    fn drop(&mut self) {
        if self.owned {
            let _ = std::fs::remove_file(&self.ca_path);
        }
    }
}

/// A per-process counter, so two simulators of one process get two files.
fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
