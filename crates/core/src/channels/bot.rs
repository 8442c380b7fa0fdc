//! What the channels of bots share below their own wire: a long text sent in parts that a
//! retry resumes ([`InParts`]) and a WebSocket opened with the system's TLS roots ([`connect`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::channel::ChannelError;
use crate::store::{DeliveryRecord, Store, WriteOp};

/// One delivery attempt of a record's text in parts: the parts of at most a channel's limit,
/// those not taken yet ([`InParts::rest`], in order), and each one recorded as taken
/// ([`InParts::took`]) before the next is sent, so that a retry sends only the rest.
pub(crate) struct InParts<'a> {
    store: &'a Arc<dyn Store>,
    record: &'a DeliveryRecord,
    parts: Vec<String>,
}

impl<'a> InParts<'a> {
    pub fn new(store: &'a Arc<dyn Store>, record: &'a DeliveryRecord, limit: usize) -> Self {
        let parts = super::split::parts(&record.text, limit);
        Self {
            store,
            record,
            parts,
        }
    }

    /// The parts not taken yet, with their index, in order.
    pub fn rest(&self) -> impl Iterator<Item = (usize, &str)> {
        let taken = self.record.parts_sent as usize;
        self.parts
            .iter()
            .map(String::as_str)
            .enumerate()
            .skip(taken)
    }

    /// Records part `index` as taken (the last one is the delivery's own `delivered` mark).
    pub async fn took(&self, index: usize) -> Result<(), ChannelError> {
        if index + 1 >= self.parts.len() {
            return Ok(());
        }
        let progress = WriteOp::DeliveryProgress {
            id: self.record.id.clone(),
            parts_sent: (index + 1) as u32,
        };
        self.store
            .write_batch(vec![progress])
            .await
            .map(|_| ())
            .map_err(|e| ChannelError::Retry(e.to_string()))
    }
}

/// A WebSocket to a platform's event stream.
pub(crate) type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens the WebSocket at `url` (TLS for `wss://`, with the system's roots), within 30 s.
pub(crate) async fn connect(url: &str) -> Result<Socket, String> {
    let connector = if url.starts_with("wss://") {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Some(tokio_tungstenite::Connector::Rustls(Arc::new(tls)))
    } else {
        None
    };
    let connecting = tokio_tungstenite::connect_async_tls_with_config(url, None, false, connector);
    match tokio::time::timeout(Duration::from_secs(30), connecting).await {
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".into()),
    }
}
