//! HTTPS for the simulator (`servebench sim --tls`, `--sim --sim-tls`): a private CA and a
//! server certificate generated at start with `rcgen` (SANs `localhost`, `127.0.0.1`, `::1`),
//! and, with a client CA, mutual TLS (client certificates required and verified). The CA
//! certificate is handed out as PEM so clients can trust it (`--cacert`, `SSL_CERT_FILE`).
//!
//! [`SimCa`] is public so tests can also issue client certificates and certificates of other
//! CAs (the "wrong CA" case).

use std::path::Path;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use servebench_core::{BenchError, Result};
use tokio_rustls::TlsAcceptor;

/// Names the simulator's server certificate is valid for.
pub const SERVER_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

fn gen_err(e: rcgen::Error) -> BenchError {
    BenchError::transport_from("generating the simulator's TLS certificate", e)
}

/// A certificate authority generated in memory.
pub struct SimCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

impl std::fmt::Debug for SimCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimCa").finish_non_exhaustive()
    }
}

/// A certificate and its private key, both PEM.
#[derive(Debug, Clone)]
pub struct IssuedCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl SimCa {
    /// A new CA named `name`.
    pub fn generate(name: &str) -> Result<SimCa> {
        let key = KeyPair::generate().map_err(gen_err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(gen_err)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let pem = params.self_signed(&key).map_err(gen_err)?.pem();
        Ok(SimCa { issuer: Issuer::new(params, key), pem })
    }

    /// The CA certificate (PEM), for a client's trust store.
    pub fn cert_pem(&self) -> &str {
        &self.pem
    }

    /// A server certificate for `names` (DNS names or IP addresses).
    pub fn issue_server(&self, names: &[&str]) -> Result<IssuedCert> {
        self.issue(names, "servebench sim", ExtendedKeyUsagePurpose::ServerAuth)
    }

    /// A client certificate (for mutual TLS) with common name `name`.
    pub fn issue_client(&self, name: &str) -> Result<IssuedCert> {
        self.issue(&[], name, ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn issue(&self, names: &[&str], cn: &str, eku: ExtendedKeyUsagePurpose) -> Result<IssuedCert> {
        let key = KeyPair::generate().map_err(gen_err)?;
        let sans: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).map_err(gen_err)?;
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![eku];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let cert = params.signed_by(&key, &self.issuer).map_err(gen_err)?;
        Ok(IssuedCert { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
    }
}

/// The simulator's TLS setup: a fresh CA, a server certificate it signed, and the acceptor.
#[derive(Clone)]
pub struct SimTls {
    pub(crate) acceptor: TlsAcceptor,
    ca_pem: String,
    mutual: bool,
}

impl std::fmt::Debug for SimTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimTls").field("mutual", &self.mutual).finish_non_exhaustive()
    }
}

impl SimTls {
    /// Generates a CA and a server certificate for [`SERVER_NAMES`]. With `client_ca` (a PEM
    /// bundle), clients must present a certificate that CA signed.
    pub fn generate(client_ca: Option<&Path>) -> Result<SimTls> {
        let ca = SimCa::generate("servebench sim CA")?;
        let server = ca.issue_server(&SERVER_NAMES)?;
        SimTls::from_parts(ca.cert_pem(), &server, client_ca)
    }

    /// A setup serving `server` (issued by the CA `ca_pem`), optionally requiring client
    /// certificates signed by `client_ca`.
    pub fn from_parts(ca_pem: &str, server: &IssuedCert, client_ca: Option<&Path>) -> Result<SimTls> {
        let bad = |detail: String| BenchError::transport("simulator TLS setup", detail);
        let chain = vec![
            CertificateDer::from_pem_slice(server.cert_pem.as_bytes()).map_err(|e| bad(format!("{e:?}")))?,
            CertificateDer::from_pem_slice(ca_pem.as_bytes()).map_err(|e| bad(format!("{e:?}")))?,
        ];
        let key = PrivateKeyDer::Pkcs8(
            PrivatePkcs8KeyDer::from_pem_slice(server.key_pem.as_bytes())
                .map_err(|e| bad(format!("{e:?}")))?,
        );
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(e.to_string()))?;
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(path) => {
                let roots = client_roots(path)?;
                let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|e| bad(e.to_string()))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder.with_single_cert(chain, key).map_err(|e| bad(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(SimTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            ca_pem: ca_pem.to_owned(),
            mutual: client_ca.is_some(),
        })
    }

    /// The CA certificate clients must trust (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Whether client certificates are required.
    pub fn is_mutual(&self) -> bool {
        self.mutual
    }
}

/// The client CA bundle of `--sim-client-ca`; unreadable or empty: SB311 naming the file.
fn client_roots(path: &Path) -> Result<rustls::RootCertStore> {
    let file_err = |detail: String| BenchError::TlsFile {
        what: "--sim-client-ca".into(),
        path: path.display().to_string(),
        detail,
        fix: "point it at a PEM bundle of the CA that signs client certificates".into(),
        source: None,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_err(format!("{e:?}")))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| file_err(format!("not a valid PEM file ({e:?})")))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(file_err("holds no PEM certificate".into()));
    }
    Ok(roots)
}
