//! The TLS settings the gateway's HTTP clients share ([`super::client_builder`]): a client built
//! on them still verifies the server and offers what reqwest's own settings offered, and the
//! WebSockets' settings offer no protocol. Against a real rustls server on loopback, with a
//! certificate `openssl` makes for the test (no system root signs it).

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// A self-signed certificate for `localhost` and its key, in `dir`; `None` without `openssl`.
fn self_signed(dir: &Path) -> Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    // A server's certificate (not a CA's, which a verifier refuses for that alone).
    let config = "[req]\ndistinguished_name = dn\nx509_extensions = ext\nprompt = no\n\
                  [dn]\nCN = localhost\n[ext]\nbasicConstraints = critical, CA:FALSE\n\
                  subjectAltName = DNS:localhost\nextendedKeyUsage = serverAuth\n";
    std::fs::write(dir.join("req.cnf"), config).expect("openssl's settings");
    let made = Command::new("openssl")
        .current_dir(dir)
        .args([
            "req", "-x509", "-config", "req.cnf", "-newkey", "ec", "-pkeyopt",
        ])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args(["-keyout", "key.pem", "-out", "cert.pem"])
        .output()
        .ok()?;
    assert!(made.status.success(), "openssl: {made:?}");
    let certs = CertificateDer::pem_file_iter(dir.join("cert.pem"))
        .expect("the certificate")
        .collect::<Result<Vec<_>, _>>()
        .expect("the certificate");
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).expect("the key");
    Some((certs, key))
}

/// Says the test cannot run here (fails it under `CI=true`).
fn not_run(test: &str) {
    switchboard_testkit::not_run(&format!(
        "TLS test {test} NOT RUN: openssl makes its certificate (apt-get install openssl)"
    ));
}

/// The protocols a client offered, and whether its handshake completed.
type Handshake = std::thread::JoinHandle<(Vec<Vec<u8>>, bool)>;

/// Serves one TLS handshake on a thread, on the port answered.
fn serve_once(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> (u16, Handshake) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("the server's certificate");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("its address").port();
    let server = std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().expect("a connection");
        let mut acceptor = rustls::server::Acceptor::default();
        let accepted = loop {
            acceptor.read_tls(&mut socket).expect("the client hello");
            if let Some(accepted) = acceptor.accept().expect("a client hello") {
                break accepted;
            }
        };
        let offered: Vec<Vec<u8>> = (accepted.client_hello().alpn())
            .map(|protocols| protocols.map(<[u8]>::to_vec).collect())
            .unwrap_or_default();
        let mut conn = accepted
            .into_connection(Arc::new(config))
            .expect("a session");
        let done = conn.complete_io(&mut socket).is_ok() && !conn.is_handshaking();
        (offered, done)
    });
    (port, server)
}

#[tokio::test]
async fn a_client_on_the_shared_settings_refuses_a_server_no_system_root_vouches_for() {
    let dir = tempfile::tempdir().expect("a directory");
    let Some((certs, key)) = self_signed(dir.path()) else {
        not_run("a_client_on_the_shared_settings_refuses_a_server_no_system_root_vouches_for");
        return;
    };
    let (port, server) = serve_once(certs, key);
    let client = super::client_builder().build().expect("a client");
    let refused = client
        .get(format!("https://localhost:{port}/"))
        .send()
        .await
        .expect_err("a self-signed certificate is not trusted");
    let (offered, done) = server.join().expect("the server");
    let mut causes = Vec::new();
    let mut cause: Option<&dyn std::error::Error> = Some(&refused);
    while let Some(c) = cause {
        causes.push(c.to_string());
        cause = c.source();
    }
    assert!(
        causes
            .iter()
            .any(|c| c.contains("invalid peer certificate")),
        "refused for its certificate: {causes:?}"
    );
    assert!(!done, "the handshake did not complete");
    assert_eq!(
        offered,
        [b"h2".to_vec(), b"http/1.1".to_vec()],
        "as reqwest offered"
    );
}

#[test]
fn a_websocket_on_the_shared_settings_offers_no_protocol_and_verifies_too() {
    let dir = tempfile::tempdir().expect("a directory");
    let Some((certs, key)) = self_signed(dir.path()) else {
        not_run("a_websocket_on_the_shared_settings_offers_no_protocol_and_verifies_too");
        return;
    };
    let (port, server) = serve_once(certs, key);
    let tls = super::tls_http1().expect("the shared settings");
    let name = ServerName::try_from("localhost").expect("a name");
    let mut conn = rustls::ClientConnection::new(Arc::new(tls), name).expect("a session");
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connected");
    let refused = conn.complete_io(&mut socket).expect_err("not trusted");
    let (offered, done) = server.join().expect("the server");
    assert!(
        refused.to_string().contains("invalid peer certificate"),
        "refused for its certificate: {refused}"
    );
    assert!(!done, "the handshake did not complete");
    assert!(offered.is_empty(), "no protocol offered: {offered:?}");
}
