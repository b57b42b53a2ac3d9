//! TLS for deployments without an ingress (`[tls] cert_file`, `key_file`): rustls with
//! the aws-lc-rs provider (the upstream client's), TLS 1.2 and 1.3, ALPN `h2` and
//! `http/1.1`. The certificate and key are read at start (a start with a bad pair
//! stops, saying which file and why) and again on `SIGHUP`: connections opened after
//! a good reload are served with the new pair, those already open keep theirs, and a
//! reload that fails keeps the pair in use (docs/deployment.md, "TLS").

use std::sync::{Arc, RwLock};

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::aws_lc_rs;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::server::TlsFiles;

/// The pair in use and where it is read from.
pub struct Tls {
    files: TlsFiles,
    acceptor: RwLock<TlsAcceptor>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// Reads the certificate chain and key of `files`.
    pub fn load(files: &TlsFiles) -> Result<Self, String> {
        let config = server_config(files)?;
        Ok(Self {
            files: files.clone(),
            acceptor: RwLock::new(TlsAcceptor::from(Arc::new(config))),
        })
    }

    /// What a new connection's handshake uses: the pair of the last good read.
    pub fn acceptor(&self) -> TlsAcceptor {
        match self.acceptor.read() {
            Ok(acceptor) => acceptor.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Reads the files again (`SIGHUP`); on an error the pair in use stays, and the
    /// error says which file and why.
    pub fn reload(&self) -> Result<(), String> {
        let acceptor = TlsAcceptor::from(Arc::new(server_config(&self.files)?));
        match self.acceptor.write() {
            Ok(mut current) => *current = acceptor,
            Err(poisoned) => *poisoned.into_inner() = acceptor,
        }
        Ok(())
    }

    /// The files read.
    pub fn files(&self) -> &TlsFiles {
        &self.files
    }
}

/// A server config of the PEM files: every certificate of `cert_file` (the leaf first,
/// then its intermediates) and the private key of `key_file` (PKCS#8, PKCS#1 or SEC1),
/// which must be the leaf's.
fn server_config(files: &TlsFiles) -> Result<ServerConfig, String> {
    let cert_path = files.cert_file.display();
    let key_path = files.key_file.display();
    let certs_pem = std::fs::read(&files.cert_file)
        .map_err(|e| format!("[tls] cert_file `{cert_path}` cannot be read: {e}"))?;
    let certs = CertificateDer::pem_slice_iter(&certs_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("[tls] cert_file `{cert_path}` is not PEM certificates: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "[tls] cert_file `{cert_path}` holds no `BEGIN CERTIFICATE` block: give the certificate chain in PEM, the leaf first"
        ));
    }
    let key_pem = std::fs::read(&files.key_file)
        .map_err(|e| format!("[tls] key_file `{key_path}` cannot be read: {e}"))?;
    // The error says what was missing, never what the file holds.
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        format!(
            "[tls] key_file `{key_path}` holds no private key in PEM (PKCS#8, PKCS#1 or SEC1): {e}"
        )
    })?;
    let mut config = ServerConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("[tls] the TLS provider: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            format!("[tls] the key of `{key_path}` and the certificate of `{cert_path}` do not make a pair: {e}")
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}
