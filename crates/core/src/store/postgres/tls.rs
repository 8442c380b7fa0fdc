//! TLS to PostgreSQL, set as libpq sets it: `sslmode` and `sslrootcert` in the URL's query
//! (`postgres://u:p@db:5432/app?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem`).
//!
//! - `disable`: never TLS. `prefer` (the default, as libpq's): TLS when the server offers it,
//!   its certificate not checked. `require`: TLS or no connection, the certificate not checked
//!   (encryption against a passive listener only).
//! - `verify-ca`: TLS, the certificate must chain to a trusted root. `verify-full`: that, and
//!   it must name the host connected to.
//! - The roots: the file `sslrootcert` names (PEM), or the system's (`sslrootcert=system`, or
//!   no `sslrootcert`).
//!
//! tokio-postgres knows neither `verify-*` nor `sslrootcert`: both are taken out of the URL
//! here, and the connection is always made through rustls (with `sslmode=disable` it is never
//! used), so every connection has one stream type.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls_pki_types::pem::PemObject;
use tokio_postgres::config::SslMode as PgSslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::store::StoreError;

const MODES: &str = "disable, prefer, require, verify-ca or verify-full";

/// `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// How connections to the database use TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tls {
    pub(super) mode: SslMode,
    /// A PEM file of trusted roots; the system's when `None`.
    pub(super) root_cert: Option<PathBuf>,
}

/// Takes `sslmode` and `sslrootcert` out of the URL's query; answers the URL without them and
/// the TLS they ask for.
pub(super) fn split(url: &str) -> Result<(String, Tls), StoreError> {
    let mut tls = Tls {
        mode: SslMode::Prefer,
        root_cert: None,
    };
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), tls));
    };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => tls.mode = parse_mode(value)?,
            "sslrootcert" if value != "system" => tls.root_cert = Some(PathBuf::from(value)),
            "sslrootcert" => tls.root_cert = None,
            _ => kept.push(pair),
        }
    }
    let url = match kept.is_empty() {
        true => base.to_string(),
        false => format!("{base}?{}", kept.join("&")),
    };
    Ok((url, tls))
}

fn parse_mode(value: &str) -> Result<SslMode, StoreError> {
    Ok(match value {
        "disable" => SslMode::Disable,
        "prefer" | "allow" => SslMode::Prefer,
        "require" => SslMode::Require,
        "verify-ca" => SslMode::VerifyCa,
        "verify-full" => SslMode::VerifyFull,
        other => {
            return Err(StoreError::Backend(format!(
                "the PostgreSQL url's sslmode {other:?} is not one of {MODES}"
            )));
        }
    })
}

impl Tls {
    /// What tokio-postgres is told: whether TLS is tried, required or never used.
    pub(super) fn pg_mode(&self) -> PgSslMode {
        match self.mode {
            SslMode::Disable => PgSslMode::Disable,
            SslMode::Prefer => PgSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => PgSslMode::Require,
        }
    }

    /// The connector every connection is made through.
    pub(super) fn connector(&self) -> Result<MakeRustlsConnect, StoreError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| StoreError::Backend(format!("TLS to PostgreSQL: {e}")))?;
        let config = match self.mode {
            SslMode::Disable | SslMode::Prefer | SslMode::Require => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
                .with_no_client_auth(),
            SslMode::VerifyCa | SslMode::VerifyFull => {
                let roots = Arc::new(self.roots()?);
                let webpki =
                    rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
                        .build()
                        .map_err(|e| StoreError::Backend(format!("TLS to PostgreSQL: {e}")))?;
                let verifier = Verified {
                    webpki,
                    names: self.mode == SslMode::VerifyFull,
                };
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(verifier))
                    .with_no_client_auth()
            }
        };
        Ok(MakeRustlsConnect::new(config))
    }

    /// The trusted roots: `sslrootcert`'s, else the system's.
    fn roots(&self) -> Result<rustls::RootCertStore, StoreError> {
        let mut roots = rustls::RootCertStore::empty();
        let certs: Vec<CertificateDer<'static>> = match &self.root_cert {
            Some(path) => CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<_, _>>())
                .map_err(|e| {
                    StoreError::Backend(format!(
                        "the PostgreSQL url's sslrootcert {} is not a readable PEM file of certificates: {e}",
                        path.display()
                    ))
                })?,
            None => rustls_native_certs::load_native_certs().certs,
        };
        let (added, _) = roots.add_parsable_certificates(certs);
        if added == 0 {
            let whence = self
                .root_cert
                .as_ref()
                .map_or("the system".to_string(), |p| p.display().to_string());
            return Err(StoreError::Backend(format!(
                "TLS to PostgreSQL: no trusted root certificate found in {whence}"
            )));
        }
        Ok(roots)
    }
}

/// `prefer` and `require`: encrypted, the certificate not checked (libpq's meaning). The
/// handshake's signatures are still checked, so the connection is to whoever holds the key.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca` and `verify-full`: the chain must lead to a trusted root; with `names`, the
/// certificate must also name the host.
#[derive(Debug)]
struct Verified {
    webpki: Arc<rustls::client::WebPkiServerVerifier>,
    names: bool,
}

impl ServerCertVerifier for Verified {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verified {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
                if !self.names =>
            {
                Ok(ServerCertVerified::assertion())
            }
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_leave_the_url_and_say_what_tls_is_used() {
        let (url, tls) = split(
            "postgres://u:p@db:5432/app?sslmode=verify-full&sslrootcert=/ca.pem&connect_timeout=3",
        )
        .unwrap();
        assert_eq!(url, "postgres://u:p@db:5432/app?connect_timeout=3");
        assert_eq!(
            tls,
            Tls {
                mode: SslMode::VerifyFull,
                root_cert: Some("/ca.pem".into())
            }
        );
        let (url, tls) = split("postgres://db/app").unwrap();
        assert_eq!(
            (url.as_str(), tls.mode),
            ("postgres://db/app", SslMode::Prefer)
        );
        let (_, tls) = split("postgres://db/app?sslmode=require&sslrootcert=system").unwrap();
        assert_eq!((tls.mode, tls.root_cert), (SslMode::Require, None));
        let error = split("postgres://db/app?sslmode=strict")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "storage failure: the PostgreSQL url's sslmode \"strict\" is not one of disable, prefer, require, verify-ca or verify-full"
        );
    }
}
