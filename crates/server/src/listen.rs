//! Accepting connections: HTTP/1.1 with the timeouts and the cap that keep clients which never
//! finish a request from holding the gateway (SPEC §12).
//!
//! - A request's head must arrive within [`Limits::header_timeout`] — counted from the moment
//!   the connection is waiting for one, so it is also the idle timeout of a keep-alive
//!   connection and the time a connection that sends nothing is kept (hyper's
//!   `header_read_timeout`).
//! - A body must arrive within [`Limits::body_timeout`] once the route reads it, which it does
//!   only after the caller was authenticated (`crate::body`).
//! - At most [`Limits::max_unauthenticated`] connections may be open before their first
//!   authenticated request: each holds a permit ([`Pending`]) until a door accepts its token
//!   (or, for a WebSocket, until `hello-ok`). One over the cap is answered 503 and closed before
//!   anything is read; authenticated connections are not counted.
//!
//! Shutdown: when `shutdown` resolves the loop stops accepting, each connection finishes the
//! request it is serving and closes (hyper's graceful shutdown), and `serve` returns once they
//! have. WebSocket connections live on their own tasks (`ServerState::finish` waits for them).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::ServerState;

/// The bounds every connection is held to. Defaults: 15 s for a request's head (and a
/// keep-alive connection's idle time), 30 s for a body, 256 connections not yet authenticated.
#[derive(Debug, Clone)]
pub struct Limits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub max_unauthenticated: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(15),
            body_timeout: Duration::from_secs(30),
            max_unauthenticated: 256,
        }
    }
}

/// A connection's place among the unauthenticated ones, held until it authenticates. Handed to
/// every request of the connection as an extension; the door that accepts a token calls
/// [`Pending::authenticated`].
#[derive(Clone)]
pub struct Pending(Arc<std::sync::Mutex<Option<OwnedSemaphorePermit>>>);

impl Pending {
    fn new(permit: OwnedSemaphorePermit) -> Self {
        Self(Arc::new(std::sync::Mutex::new(Some(permit))))
    }

    /// The connection proved who it is: it no longer counts against the cap.
    pub fn authenticated(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// Releases the connection's permit, if the request came through [`serve`].
pub(crate) fn authenticated(pending: Option<&axum::Extension<Pending>>) {
    if let Some(axum::Extension(pending)) = pending {
        pending.authenticated();
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains the connections.
pub(crate) async fn serve(
    state: Arc<ServerState>,
    listener: TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.limits.clone();
    let permits = Arc::new(Semaphore::new(limits.max_unauthenticated));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let connections = TaskTracker::new();
    let closing = CancellationToken::new();
    let refusals = Throttle::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of file descriptors, most likely: wait for some to close.
                    tracing::error!(error = %e, "accepting a connection failed; retrying in 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Without TCP_NODELAY every small frame after another (a response, then run events)
        // waits for the client's delayed ACK: 40 ms per turn.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            if refusals.due(state.engine.now_ms()) {
                tracing::warn!(
                    cap = limits.max_unauthenticated,
                    "too many connections that have not authenticated; refusing new ones (503)"
                );
            }
            connections.spawn(refuse_busy(tcp));
            continue;
        };
        let pending = Pending::new(permit);
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(pending.clone());
            let mut router = router.clone();
            tower_service::Service::call(&mut router, request.map(Body::new))
        });
        let connection = http
            .serve_connection(TokioIo::new(tcp), service)
            .with_upgrades();
        let closing = closing.clone();
        connections.spawn(async move {
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                () = closing.cancelled() => {}
            }
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        });
    }
    closing.cancel();
    connections.close();
    connections.wait().await;
    Ok(())
}

/// Answers a connection over the cap with a 503 in the gateway's error shape, without reading
/// its request, then closes it (reading a little first, so the client sees the answer rather
/// than a reset).
async fn refuse_busy(mut tcp: TcpStream) {
    let body = json!({"ok": false, "error": {"code": "UNAVAILABLE", "message":
        "too many connections are waiting to authenticate; retry shortly"}})
    .to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = async {
        tcp.write_all(response.as_bytes()).await?;
        tcp.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut drained = 0;
        while drained < 64 * 1024 {
            match tcp.read(&mut sink).await? {
                0 => break,
                n => drained += n,
            }
        }
        std::io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), answer).await;
}

/// At most one warning every ten seconds, however many refusals.
#[derive(Default)]
struct Throttle(AtomicI64);

impl Throttle {
    fn due(&self, now_ms: i64) -> bool {
        let last = self.0.load(Ordering::Relaxed);
        now_ms - last >= 10_000
            && self
                .0
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}
