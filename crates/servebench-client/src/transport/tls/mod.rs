//! TLS as users expect it from curl and Python: which roots are trusted, the client identity
//! for mutual TLS, and which handshake failures are certificate failures (permanent).
//!
//! Trust, in order: `--cacert PATH` alone (it replaces every other root, as curl's `--cacert`
//! does); else `SSL_CERT_FILE` / `SSL_CERT_DIR` when either is set (they replace the system store,
//! as `rustls-native-certs` reads them); else the system store (`rustls-native-certs`); else,
//! when the system has no certificate at all, the built-in Mozilla roots (`webpki-roots`).
//! The environment is passed in ([`TrustEnv`]), never read here, so tests stay pure.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::kstamp::StampedTcp;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};
use servebench_core::{BenchError, Result};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::error::TlsConnectError;
use super::failure::{ConnectFailure, FailureLatch};

/// The fix named when the server's certificate is not trusted.
pub(crate) const FIX_SERVER_CERT: &str =
    "pass --cacert /path/to/ca.pem (the CA that signed the server's certificate), or --insecure to skip verification";
/// The fix named when the server rejected (or wanted) our client certificate.
/// The fix of a client certificate a server or gateway wanted and did not get (SB310).
pub const FIX_CLIENT_CERT: &str =
    "pass --client-cert PATH --client-key PATH with a certificate the server's client CA signed (server trust: --cacert or --insecure)";

/// `SSL_CERT_FILE` and `SSL_CERT_DIR` as read from the environment (empty values count as unset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustEnv {
    pub ssl_cert_file: Option<PathBuf>,
    /// Colon-separated directories, as OpenSSL reads it.
    pub ssl_cert_dir: Option<OsString>,
}

impl TrustEnv {
    /// Reads `SSL_CERT_FILE` and `SSL_CERT_DIR` from this process's environment.
    pub fn from_process() -> TrustEnv {
        let get = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        TrustEnv { ssl_cert_file: get("SSL_CERT_FILE").map(PathBuf::from), ssl_cert_dir: get("SSL_CERT_DIR") }
    }
}

/// TLS settings of a client beyond `--insecure`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// `--cacert PATH`: PEM bundle; replaces every other root.
    pub cacert: Option<PathBuf>,
    /// `--client-cert PATH`: PEM certificate chain for mutual TLS.
    pub client_cert: Option<PathBuf>,
    /// `--client-key PATH`: PEM private key (defaults to a key inside `client_cert`).
    pub client_key: Option<PathBuf>,
    pub env: TrustEnv,
}

impl TlsOptions {
    /// Whether any file was named explicitly (they are checked even for `http://` URLs).
    pub(crate) fn names_files(&self) -> bool {
        self.cacert.is_some() || self.client_cert.is_some() || self.client_key.is_some()
    }
}

/// Where the trusted roots came from (for the run header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustSource {
    /// `--insecure`: no verification.
    Insecure,
    /// `--cacert`.
    CaCert { path: PathBuf, certs: usize },
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR`.
    Env { vars: String, certs: usize },
    /// The system trust store.
    System { certs: usize },
    /// The built-in Mozilla roots (no system store found).
    BuiltIn,
}

impl std::fmt::Display for TrustSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrustSource::Insecure => f.write_str("none (--insecure: certificates are not verified)"),
            TrustSource::CaCert { path, certs } => {
                write!(f, "--cacert {} ({certs} certificates)", path.display())
            }
            TrustSource::Env { vars, certs } => write!(f, "{vars} ({certs} certificates)"),
            TrustSource::System { certs } => write!(f, "system trust store ({certs} certificates)"),
            TrustSource::BuiltIn => f.write_str("built-in Mozilla roots (no system trust store found)"),
        }
    }
}

/// A built TLS client setup.
pub(crate) struct TlsSetup {
    pub connector: TlsConnector,
    pub trust: TrustSource,
}

/// Builds the client TLS configuration: roots (or none with `insecure`) and client identity.
pub(crate) fn setup(insecure: bool, opts: &TlsOptions) -> Result<TlsSetup> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| BenchError::transport_from("TLS setup", e))?;
    let (builder, trust) = if insecure {
        // Explicit files are still checked: a typo should not go unnoticed.
        if let Some(p) = &opts.cacert {
            load_certs("--cacert", p)?;
        }
        let verifier = Arc::new(AcceptAnyCert { provider });
        (builder.dangerous().with_custom_certificate_verifier(verifier), TrustSource::Insecure)
    } else {
        let (roots, trust) = roots(opts)?;
        (builder.with_root_certificates(roots), trust)
    };
    let mut config = match (&opts.client_cert, &opts.client_key) {
        (None, None) => builder.with_no_client_auth(),
        (None, Some(k)) => {
            return Err(tls_file("--client-key", k, "given without --client-cert", "pass --client-cert too"))
        }
        (Some(c), key) => {
            let chain = load_certs("--client-cert", c)?;
            let key = load_key(key.as_deref().unwrap_or(c), key.is_none())?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                let path = opts.client_key.as_deref().unwrap_or(c);
                tls_file("--client-key", path, &e.to_string(), "pass the key that belongs to --client-cert")
            })?
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsSetup { connector: TlsConnector::from(Arc::new(config)), trust })
}

fn tls_file(what: &str, path: &Path, detail: &str, fix: &str) -> BenchError {
    BenchError::TlsFile {
        what: what.to_owned(),
        path: path.display().to_string(),
        detail: detail.to_owned(),
        fix: fix.to_owned(),
        source: None,
    }
}

/// [`tls_file`] for an I/O error, kept as the source.
fn tls_file_io(what: &str, path: &Path, e: std::io::Error, fix: &str) -> BenchError {
    match tls_file(what, path, &e.to_string(), fix) {
        BenchError::TlsFile { what, path, detail, fix, .. } => {
            BenchError::TlsFile { what, path, detail, fix, source: Some(Box::new(e)) }
        }
        other => other,
    }
}

const PEM_FIX: &str = "point it at a readable PEM file (-----BEGIN CERTIFICATE----- blocks)";

/// Every certificate of a PEM file; an unreadable file, a malformed block or no certificate at
/// all is an SB311 error naming the file.
fn load_certs(what: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let iter =
        CertificateDer::pem_file_iter(path).map_err(|e| tls_file(what, path, &pem_detail(&e), PEM_FIX))?;
    let certs: Vec<_> = iter
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| tls_file(what, path, &pem_detail(&e), PEM_FIX))?;
    if certs.is_empty() {
        return Err(tls_file(what, path, "holds no PEM certificate", PEM_FIX));
    }
    Ok(certs)
}

fn pem_detail(e: &rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => io.to_string(),
        other => format!("not a valid PEM file ({other:?})"),
    }
}

/// The private key of `path` (`in_cert`: it is the certificate file, `--client-key` not given).
fn load_key(path: &Path, in_cert: bool) -> Result<PrivateKeyDer<'static>> {
    let what = if in_cert { "--client-cert" } else { "--client-key" };
    let text = std::fs::read(path).map_err(|e| tls_file_io(what, path, e, PEM_FIX))?;
    if memchr::memmem::find(&text, b"ENCRYPTED PRIVATE KEY").is_some() {
        let fix = "decrypt it: openssl pkey -in KEY -out plain.pem";
        return Err(tls_file(what, path, "the private key is encrypted", fix));
    }
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| {
        let detail = match e {
            rustls::pki_types::pem::Error::NoItemsFound if in_cert => {
                "holds no private key (pass --client-key)".to_owned()
            }
            rustls::pki_types::pem::Error::NoItemsFound => "holds no PEM private key".to_owned(),
            other => pem_detail(&other),
        };
        tls_file(what, path, &detail, "pass an unencrypted PKCS#8, PKCS#1 or SEC1 PEM key")
    })
}

/// The root store and where it came from.
fn roots(opts: &TlsOptions) -> Result<(rustls::RootCertStore, TrustSource)> {
    let mut store = rustls::RootCertStore::empty();
    if let Some(path) = &opts.cacert {
        let certs = load_certs("--cacert", path)?;
        let (added, _) = store.add_parsable_certificates(certs);
        if added == 0 {
            return Err(tls_file("--cacert", path, "holds no usable CA certificate", PEM_FIX));
        }
        return Ok((store, TrustSource::CaCert { path: path.clone(), certs: added }));
    }
    if opts.env.ssl_cert_file.is_some() || opts.env.ssl_cert_dir.is_some() {
        let (certs, vars) = env_certs(&opts.env)?;
        let (added, _) = store.add_parsable_certificates(certs);
        return Ok((store, TrustSource::Env { vars, certs: added }));
    }
    let native = rustls_native_certs::load_native_certs();
    let (added, _) = store.add_parsable_certificates(native.certs);
    if added > 0 {
        return Ok((store, TrustSource::System { certs: added }));
    }
    store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    Ok((store, TrustSource::BuiltIn))
}

/// Certificates of `SSL_CERT_FILE` and the `SSL_CERT_DIR` directories (hashed `openssl rehash`
/// directories and plain directories of PEM files alike: every file is read once).
fn env_certs(env: &TrustEnv) -> Result<(Vec<CertificateDer<'static>>, String)> {
    let mut certs = Vec::new();
    let mut vars = Vec::new();
    if let Some(file) = &env.ssl_cert_file {
        vars.push(format!("SSL_CERT_FILE={}", file.display()));
        certs.extend(load_certs("SSL_CERT_FILE", file)?);
    }
    if let Some(dirs) = &env.ssl_cert_dir {
        vars.push(format!("SSL_CERT_DIR={}", dirs.to_string_lossy()));
        for dir in std::env::split_paths(dirs).filter(|d| !d.as_os_str().is_empty()) {
            if let Err(e) = std::fs::read_dir(&dir) {
                let fix = "point SSL_CERT_DIR at a directory of PEM certificates, or unset it";
                return Err(tls_file_io("SSL_CERT_DIR", &dir, e, fix));
            }
            // Files that are not certificates are skipped, as OpenSSL skips them.
            certs.extend(rustls_native_certs::load_certs_from_paths(None, Some(&dir)).certs);
        }
    }
    // A bundle file and the directory it was split into hold the same certificates.
    certs.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
    certs.dedup();
    if certs.is_empty() {
        let fix = "point SSL_CERT_FILE / SSL_CERT_DIR at PEM certificates, or unset them";
        return Err(BenchError::TlsFile {
            what: "trust store".into(),
            path: vars.join(" "),
            detail: "holds no PEM certificate".into(),
            fix: fix.into(),
            source: None,
        });
    }
    Ok((certs, vars.join(" ")))
}

/// Whether a TLS failure is a certificate failure (permanent), and how to say it.
pub(crate) fn classify(e: &io::Error) -> Option<ConnectFailure> {
    let err = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    match err {
        rustls::Error::InvalidCertificate(c) => Some(ConnectFailure::Certificate {
            detail: format!("the server's certificate is not trusted: {}", describe(c)),
            fix: FIX_SERVER_CERT,
        }),
        rustls::Error::AlertReceived(a) if client_cert_alert(*a) => Some(ConnectFailure::Certificate {
            detail: format!("the server rejected the client certificate (TLS alert {a:?})"),
            fix: FIX_CLIENT_CERT,
        }),
        _ => None,
    }
}

fn client_cert_alert(a: AlertDescription) -> bool {
    matches!(
        a,
        AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateRequired
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateRevoked
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::AccessDenied
    )
}

fn describe(c: &CertificateError) -> String {
    match c {
        CertificateError::UnknownIssuer => "it is signed by an unknown certificate authority".into(),
        CertificateError::NotValidForName => "it does not name this host".into(),
        CertificateError::NotValidForNameContext { expected, presented } => {
            format!("it does not name {expected:?} (it names {})", presented.join(", "))
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => "it has expired".into(),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "it is not valid yet".into()
        }
        other => format!("{other:?}"),
    }
}

/// A client TLS session that notes certificate failures (handshake or alerts on read) in the
/// client's [`FailureLatch`], so the readiness check can tell a permanent failure by its type.
#[derive(Debug)]
pub(crate) struct TlsIo {
    inner: TlsStream<StampedTcp>,
    latch: Arc<FailureLatch>,
}

impl TlsIo {
    /// The socket under the TLS session.
    pub(crate) fn tcp(&self) -> &StampedTcp {
        self.inner.get_ref().0
    }

    fn note<T>(&self, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(e)) = &r {
            if let Some(f) = classify(e) {
                self.latch.set(f);
            }
        }
        r
    }
}

impl AsyncRead for TlsIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        this.note(r)
    }
}

impl AsyncWrite for TlsIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.note(r)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.note(r)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Opens a TLS session over `tcp` to `host` (a DNS name gets SNI; an IP address is checked
/// against the certificate's IP SANs and sends no SNI). A certificate failure is noted in `latch`.
pub(crate) async fn connect(
    connector: &TlsConnector,
    host: &str,
    tcp: StampedTcp,
    latch: &Arc<FailureLatch>,
) -> std::result::Result<TlsIo, TlsConnectError> {
    let name = ServerName::try_from(host.to_owned()).map_err(TlsConnectError::ServerName)?;
    match connector.connect(name, tcp).await {
        Ok(s) => Ok(TlsIo { inner: s, latch: latch.clone() }),
        Err(source) => match classify(&source) {
            Some(failure) => {
                latch.set(failure.clone());
                Err(TlsConnectError::Certificate { failure, source })
            }
            None => Err(TlsConnectError::Handshake(source)),
        },
    }
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
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
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
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
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
mod tests;
