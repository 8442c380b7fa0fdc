//! The gateways sharing a store, as this one sees them (SPEC §4.3). The runtime, the outbox,
//! cron and the engine ask it what to do about the others, instead of asking which store runs.
//!
//! A store of one gateway (SQLite) is [`Alone`]: nobody else's work to take up, nothing to
//! look for that another gateway added, a lease that never lapses. PostgreSQL's is the
//! membership of `postgres/cluster.rs`: epochs, heartbeats and fenced writes.

use std::time::Duration;

/// Membership of the gateways sharing a store.
pub trait Cluster: Send + Sync {
    /// Whether other gateways may share the store: then their stopped work is taken up here,
    /// runs of a session wait for each other across gateways, and run events travel on the bus.
    fn shared(&self) -> bool;
    /// The epoch this gateway holds new work under now; `0` alone.
    fn epoch(&self) -> i64;
    /// Whether this gateway's lease is renewed, so it may start new work (always, alone). A
    /// gateway that cannot renew it waits: another may be about to take its work.
    fn leased(&self) -> bool;
    /// How often to look for work another gateway added (due deliveries, cron jobs, stopped
    /// gateways' work); `None` alone, where every change is made here and wakes what waits.
    fn poll_every(&self) -> Option<Duration> {
        self.shared().then_some(Duration::from_secs(2))
    }
}

/// One gateway alone on its store.
#[derive(Debug, Clone, Copy, Default)]
pub struct Alone;

impl Cluster for Alone {
    fn shared(&self) -> bool {
        false
    }

    fn epoch(&self) -> i64 {
        0
    }

    fn leased(&self) -> bool {
        true
    }
}
