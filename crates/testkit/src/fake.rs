//! The scaffolding every fake server of this crate shares, written once, so that a fake is only
//! its state, its routes and its handlers.
//!
//! - [`FakeServer::start`] binds `127.0.0.1:0`, builds the [`Shared`] part its handlers see
//!   (the fake's fixed settings, its address, its state), serves the routes with it, and stops
//!   the server on [`FakeServer::stop`] or, signalled only, on drop.
//! - [`Shared`] keeps the state behind a lock that a panicking test leaves usable, and a counter
//!   bumped on every change that tests wait on ([`Shared::wait`]).
//! - A [`Link`] is one open connection's view of its fake (a long poll, an event stream, a
//!   WebSocket): it wakes on every change and is over once the fake stops or
//!   [`Shared::cut`] ends the connections open at the time. [`converse`] drives a WebSocket on
//!   it.
//!
//! Invariant: a cut and what the test does after it are never seen apart. [`Shared::cut`] takes
//! the state's lock, and a connection reads the state with [`Shared::lock_live`], which checks
//! the cut under that lock: what a test queues after cutting waits for the next connection.

use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{CloseFrame, Message, WebSocket};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A listener on `addr` (port 0: a free one) and its address.
///
/// # Panics
/// If `addr` cannot be bound (a broken test environment, or a port taken meanwhile).
pub(crate) async fn bind(name: &str, addr: SocketAddr) -> (tokio::net::TcpListener, SocketAddr) {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(e) => panic!("{name}: cannot bind {addr}: {e}"),
    };
    match listener.local_addr() {
        Ok(addr) => (listener, addr),
        Err(e) => panic!("{name}: no local address: {e}"),
    }
}

/// Serves `app` on `listener` until `stopped` turns true.
fn serve(
    name: &'static str,
    listener: tokio::net::TcpListener,
    app: Router,
    mut stopped: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        // Handlers may read the peer's address (`ConnectInfo`): which connection a request
        // came over.
        let app = app.into_make_service_with_connect_info::<SocketAddr>();
        let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
            let _ = stopped.wait_for(|s| *s).await;
        });
        if let Err(e) = serve.await {
            eprintln!("{name}: server error: {e}");
        }
    })
}

/// What a fake's handlers and its handle share: fixed settings `C` (a token, say), the address,
/// and the state `T` with its change counter.
pub(crate) struct Shared<C, T> {
    pub(crate) config: C,
    pub(crate) addr: SocketAddr,
    state: Mutex<T>,
    /// Bumped on each change; waiters and links watch it.
    changes: watch::Sender<u64>,
    /// Bumped to end every open link ([`Shared::cut`]).
    cuts: watch::Sender<u64>,
    /// Turns true when the fake stops.
    stopped: watch::Receiver<bool>,
}

impl<C, T> Shared<C, T> {
    /// The state (a test that panicked while holding it leaves it as it was).
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tells the waiters and links that something changed.
    pub(crate) fn bump(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    /// Waits until `ready` holds: checked now and after each change.
    pub(crate) async fn wait(&self, mut ready: impl FnMut() -> bool) {
        let mut changes = self.changes.subscribe();
        while !ready() {
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// [`Shared::wait`] for at most `bound`: whether `ready` came to hold in time.
    pub(crate) async fn wait_at_most(&self, bound: Duration, ready: impl FnMut() -> bool) -> bool {
        tokio::time::timeout(bound, self.wait(ready)).await.is_ok()
    }

    /// Ends every link open now (the connections they serve end); later ones are not touched.
    pub(crate) fn cut(&self) {
        let _state = self.lock();
        self.cuts.send_modify(|n| *n += 1);
    }

    /// A link for a connection opening now.
    pub(crate) fn link(&self) -> Link {
        let cuts = self.cuts.subscribe();
        let generation = *cuts.borrow();
        Link {
            generation,
            changes: self.changes.subscribe(),
            cuts,
            stopped: self.stopped.clone(),
        }
    }

    /// The state for `link`'s connection, or `None` once the link is over (checked under the
    /// lock; see the module doc).
    pub(crate) fn lock_live(&self, link: &Link) -> Option<MutexGuard<'_, T>> {
        let state = self.lock();
        (!link.over()).then_some(state)
    }

    /// The stop signal: it turns true when the fake stops.
    pub(crate) fn stopped(&self) -> watch::Receiver<bool> {
        self.stopped.clone()
    }
}

/// One open connection's view of its fake (see the module doc).
pub(crate) struct Link {
    generation: u64,
    changes: watch::Receiver<u64>,
    cuts: watch::Receiver<u64>,
    stopped: watch::Receiver<bool>,
}

impl Link {
    /// Whether the connection is over: the fake stopped, or was cut since the link was made.
    pub(crate) fn over(&self) -> bool {
        *self.stopped.borrow() || *self.cuts.borrow() != self.generation
    }

    /// Waits for the next change; `false` once the connection is over.
    pub(crate) async fn next(&mut self) -> bool {
        if self.over() {
            return false;
        }
        tokio::select! {
            _ = self.changes.changed() => {}
            _ = self.cuts.changed() => {}
            _ = self.stopped.changed() => {}
        }
        !self.over()
    }
}

/// A running fake: what its handlers share and its server. Stopped by [`FakeServer::stop`], or
/// signalled to stop when dropped (its connections end; the server finishes on its own).
pub(crate) struct FakeServer<C, T> {
    shared: Arc<Shared<C, T>>,
    shutdown: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
}

impl<C: Send + Sync + 'static, T: Send + 'static> FakeServer<C, T> {
    /// Serves `routes` on `127.0.0.1:0` with a [`Shared`] of `config` and `state`.
    ///
    /// # Panics
    /// If the loopback listener cannot be bound.
    pub(crate) async fn start(
        name: &'static str,
        config: C,
        state: T,
        routes: Router<Arc<Shared<C, T>>>,
    ) -> Self {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        Self::start_on(name, bind(name, loopback).await, config, state, routes)
    }

    /// [`FakeServer::start`] on a listener bound already ([`bind`]), and its address.
    pub(crate) fn start_on(
        name: &'static str,
        (listener, addr): (tokio::net::TcpListener, SocketAddr),
        config: C,
        state: T,
        routes: Router<Arc<Shared<C, T>>>,
    ) -> Self {
        let (shutdown, stopped) = watch::channel(false);
        let shared = Arc::new(Shared {
            config,
            addr,
            state: Mutex::new(state),
            changes: watch::channel(0).0,
            cuts: watch::channel(0).0,
            stopped,
        });
        let app = routes.with_state(shared.clone());
        let server = serve(name, listener, app, shared.stopped());
        Self {
            shared,
            shutdown,
            server: Some(server),
        }
    }
}

impl<C, T> FakeServer<C, T> {
    /// Stops the server and every connection, and waits for it.
    pub(crate) async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }

    /// Stops as [`FakeServer::stop`] does, but aborts the server if it has not finished within
    /// `bound` (graceful shutdown waits for open connections, and a client that never reads
    /// must not hang the test).
    pub(crate) async fn stop_within(mut self, bound: Duration) {
        let _ = self.shutdown.send(true);
        if let Some(mut server) = self.server.take()
            && tokio::time::timeout(bound, &mut server).await.is_err()
        {
            server.abort();
        }
    }
}

impl<C, T> Deref for FakeServer<C, T> {
    type Target = Shared<C, T>;

    fn deref(&self) -> &Shared<C, T> {
        &self.shared
    }
}

impl<C, T> Drop for FakeServer<C, T> {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

/// What a WebSocket fake answers a text frame from its client.
pub(crate) enum Reply {
    /// These frames (none, often).
    Frames(Vec<Value>),
    /// A close frame with this code and reason; the connection ends.
    Close(u16, &'static str),
}

/// One WebSocket connection's side of a fake's protocol, driven by [`converse`].
pub(crate) trait Conversation<C, T> {
    /// The frames due after a change (called with the state, while the link is live).
    fn due(&mut self, state: &mut T) -> Vec<Value>;

    /// The answer to a text frame from the client.
    fn take(&mut self, shared: &Shared<C, T>, text: &str) -> Reply;
}

/// Serves one WebSocket connection: sends `hello`, then, until the client goes, the link is
/// over or `talk` closes it, the frames `talk` finds due after each change, and `talk`'s answer
/// to each text frame the client sends (other frames are ignored).
pub(crate) async fn converse<C, T>(
    shared: &Shared<C, T>,
    mut link: Link,
    mut socket: WebSocket,
    hello: Value,
    mut talk: impl Conversation<C, T>,
) {
    if !send_frames(&mut socket, vec![hello]).await {
        return;
    }
    loop {
        let due = match shared.lock_live(&link) {
            Some(mut state) => talk.due(&mut state),
            None => return,
        };
        if !send_frames(&mut socket, due).await {
            return;
        }
        tokio::select! {
            frame = socket.recv() => {
                let Some(Ok(frame)) = frame else { return };
                let Message::Text(text) = frame else { continue };
                match talk.take(shared, text.as_str()) {
                    Reply::Frames(frames) => {
                        if !send_frames(&mut socket, frames).await {
                            return;
                        }
                    }
                    Reply::Close(code, reason) => {
                        let close = CloseFrame { code, reason: reason.into() };
                        let _ = socket.send(Message::Close(Some(close))).await;
                        return;
                    }
                }
            }
            live = link.next() => if !live { return },
        }
    }
}

/// Sends each JSON frame as a text message; false once the socket is gone.
async fn send_frames(socket: &mut WebSocket, frames: Vec<Value>) -> bool {
    for frame in frames {
        if socket
            .send(Message::Text(frame.to_string().into()))
            .await
            .is_err()
        {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn fake() -> FakeServer<(), u64> {
        FakeServer::start("test fake", (), 0, Router::new()).await
    }

    #[tokio::test]
    async fn a_cut_ends_the_links_open_then_and_not_later_ones() {
        let fake = fake().await;
        let mut before = fake.link();
        fake.cut();
        let after = fake.link();
        assert!(before.over() && !before.next().await);
        assert!(!after.over() && fake.lock_live(&after).is_some());
        assert!(fake.lock_live(&before).is_none());
        fake.stop().await;
    }

    #[tokio::test]
    async fn a_link_wakes_on_a_change_and_ends_when_the_fake_is_dropped() {
        let fake = fake().await;
        let mut link = fake.link();
        *fake.lock() += 1;
        fake.bump();
        assert!(link.next().await);
        drop(fake);
        assert!(!link.next().await);
    }

    #[tokio::test]
    async fn wait_returns_once_the_state_is_ready() {
        let fake = Arc::new(fake().await);
        let bumper = fake.clone();
        let task = tokio::spawn(async move {
            for _ in 0..3 {
                *bumper.lock() += 1;
                bumper.bump();
                tokio::task::yield_now().await;
            }
        });
        fake.wait(|| *fake.lock() >= 3).await;
        task.await.unwrap();
        let quick = fake.wait_at_most(Duration::from_millis(1), || *fake.lock() > 3);
        assert!(!quick.await);
    }
}
