//! Pure tests of trust-store and client-identity loading (no environment is read).

use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn ca_pem() -> (String, rcgen::KeyPair) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    (params.self_signed(&key).unwrap().pem(), key)
}

fn code(r: Result<TlsSetup>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => format!("{} {e}", e.code()),
    }
}

#[test]
fn cacert_replaces_every_other_root() {
    let dir = tempfile::tempdir().unwrap();
    let (pem, _) = ca_pem();
    let ca = write(dir.path(), "ca.pem", &format!("# comment\n{pem}"));
    let opts = TlsOptions { cacert: Some(ca.clone()), ..TlsOptions::default() };
    let s = setup(false, &opts).unwrap();
    assert_eq!(s.trust, TrustSource::CaCert { path: ca, certs: 1 });
}

#[test]
fn ssl_cert_file_and_dir_replace_the_system_store() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = ca_pem();
    let (b, _) = ca_pem();
    let file = write(dir.path(), "bundle.pem", &a);
    let certs = tempfile::tempdir().unwrap();
    write(certs.path(), "b.pem", &b);
    // The bundle's certificate again (counted once), and a file that is no certificate.
    write(certs.path(), "a-copy.pem", &a);
    write(certs.path(), "README", "-----BEGIN CERTIFICATE-----\n@@\n-----END CERTIFICATE-----\n");
    // `openssl rehash` layout: a hash-named symlink to the same file is read once.
    #[cfg(unix)]
    std::os::unix::fs::symlink(certs.path().join("b.pem"), certs.path().join("1a2b3c4d.0")).unwrap();
    let env = TrustEnv { ssl_cert_file: Some(file), ssl_cert_dir: Some(certs.path().as_os_str().to_owned()) };
    let s = setup(false, &TlsOptions { env, ..TlsOptions::default() }).unwrap();
    match s.trust {
        TrustSource::Env { vars, certs } => {
            assert_eq!(certs, 2, "{vars}");
            assert!(vars.contains("SSL_CERT_FILE=") && vars.contains("SSL_CERT_DIR="), "{vars}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unreadable_or_malformed_files_are_sb311_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.pem");
    let opts = TlsOptions { cacert: Some(missing), ..TlsOptions::default() };
    let e = code(setup(false, &opts));
    assert!(e.starts_with("SB311 --cacert ") && e.contains("nope.pem"), "{e}");

    let empty = write(dir.path(), "empty.pem", "not a certificate\n");
    let e = code(setup(false, &TlsOptions { cacert: Some(empty), ..TlsOptions::default() }));
    assert!(e.starts_with("SB311") && e.contains("empty.pem") && e.contains("no PEM certificate"), "{e}");

    let broken =
        write(dir.path(), "broken.pem", "-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n");
    let e = code(setup(false, &TlsOptions { cacert: Some(broken), ..TlsOptions::default() }));
    assert!(e.starts_with("SB311") && e.contains("broken.pem"), "{e}");

    let env = TrustEnv { ssl_cert_file: Some(dir.path().join("gone.pem")), ssl_cert_dir: None };
    let e = code(setup(false, &TlsOptions { env, ..TlsOptions::default() }));
    assert!(e.starts_with("SB311 SSL_CERT_FILE") && e.contains("gone.pem"), "{e}");
}

#[test]
fn client_identity_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["client".to_string()]).unwrap().self_signed(&key).unwrap();
    let cert_path = write(dir.path(), "client.pem", &cert.pem());
    let key_path = write(dir.path(), "client.key", &key.serialize_pem());
    let ok = TlsOptions {
        client_cert: Some(cert_path.clone()),
        client_key: Some(key_path.clone()),
        ..TlsOptions::default()
    };
    assert_eq!(code(setup(true, &ok)), "ok");
    // Key and certificate in one file, as curl's --cert accepts.
    let both = write(dir.path(), "both.pem", &format!("{}{}", cert.pem(), key.serialize_pem()));
    let one = TlsOptions { client_cert: Some(both), ..TlsOptions::default() };
    assert_eq!(code(setup(true, &one)), "ok");
    // No key anywhere.
    let e = code(setup(true, &TlsOptions { client_cert: Some(cert_path.clone()), ..TlsOptions::default() }));
    assert!(e.starts_with("SB311 --client-cert") && e.contains("no private key"), "{e}");
    // A key of another certificate.
    let other = rcgen::KeyPair::generate().unwrap();
    let wrong = write(dir.path(), "other.key", &other.serialize_pem());
    let mismatch =
        TlsOptions { client_cert: Some(cert_path), client_key: Some(wrong), ..TlsOptions::default() };
    let e = code(setup(true, &mismatch));
    assert!(e.starts_with("SB311 --client-key") && e.contains("other.key"), "{e}");
    let enc = write(
        dir.path(),
        "enc.key",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
    );
    let e = code(setup(
        true,
        &TlsOptions { client_cert: Some(cert_path_of(&dir)), client_key: Some(enc), ..TlsOptions::default() },
    ));
    assert!(e.starts_with("SB311") && e.contains("encrypted"), "{e}");
    let lonely = TlsOptions { client_key: Some(key_path), ..TlsOptions::default() };
    assert!(code(setup(true, &lonely)).starts_with("SB311 --client-key"));
}

fn cert_path_of(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("client.pem")
}

#[test]
fn insecure_and_default_configs_build() {
    assert_eq!(setup(true, &TlsOptions::default()).unwrap().trust, TrustSource::Insecure);
    // The system store or, without one, the built-in roots: either way a usable config.
    let t = setup(false, &TlsOptions::default()).unwrap().trust;
    assert!(matches!(t, TrustSource::System { .. } | TrustSource::BuiltIn), "{t:?}");
}
