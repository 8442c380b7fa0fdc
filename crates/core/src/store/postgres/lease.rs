//! The lease: a heartbeat every [`cluster::HEARTBEAT`] on a connection of its own, what
//! `health` and [`crate::store::Cluster::leased`] read, and registering again when another
//! gateway declared this one stopped (`cluster.rs` has the rules).

use std::sync::Arc;

use super::db::Conn;
use super::{Inner, cluster};
use crate::store::StoreError;

/// Says the gateway is alive every [`cluster::HEARTBEAT`] until the store closes.
/// On a connection of its own (a busy pool must not delay it past the lease), made again
/// when it breaks. A beat that finds this start's row gone (another gateway declared it
/// stopped) registers a new epoch: the work held under the old one is the other gateway's now.
pub(super) async fn heartbeats(inner: Arc<Inner>) {
    let mut own: Option<Conn> = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep(cluster::HEARTBEAT) => {}
            () = inner.stop.cancelled() => return,
        }
        if own.as_ref().is_none_or(Conn::is_closed) {
            own = inner.pool.connect().await.ok();
        }
        let sent = std::time::Instant::now();
        let beat = match &own {
            Some(conn) => {
                let epoch = inner.pool.epoch();
                conn.query(&cluster::heartbeat_sql(), &[&inner.pool.gateway(), &epoch])
                    .await
            }
            None => Err(StoreError::Unreachable(
                "no connection to the database".into(),
            )),
        };
        match beat.map(|rows| rows.first().map(|row| row.try_get::<_, bool>(0))) {
            Ok(None) => rejoin(&inner, sent).await,
            Ok(Some(others)) => {
                inner.peers.set_others(others.unwrap_or(true));
                if let Ok(mut renewed) = inner.renewed.lock() {
                    *renewed = sent;
                }
                if let Ok(mut last) = inner.last_error.lock() {
                    *last = None;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not renew this gateway's lease; it starts no new run until it can");
                if let Ok(mut last) = inner.last_error.lock() {
                    *last = Some(e.to_string());
                }
                own = None;
            }
        }
    }
}

/// This start was declared stopped: registers a new epoch, so new work can be held again.
async fn rejoin(inner: &Inner, sent: std::time::Instant) {
    let old = inner.pool.epoch();
    let registered = async {
        let mut conn = inner.pool.get().await?.uncounted();
        cluster::register(&conn.db()?).await
    };
    match registered.await {
        Ok((epoch, others)) => {
            inner.pool.set_epoch(epoch);
            inner.peers.set_others(others);
            if let Ok(mut renewed) = inner.renewed.lock() {
                *renewed = sent;
            }
            tracing::error!(
                old_epoch = old,
                epoch,
                "this gateway lost its lease: another gateway declared it stopped and took up its \
                 work; nothing held under the old epoch is written from here"
            );
        }
        Err(e) => tracing::warn!(error = %e, "could not register this gateway again"),
    }
}
