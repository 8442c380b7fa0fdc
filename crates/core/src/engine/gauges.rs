//! The gauges that mirror state instead of counting events (the counters and histograms are
//! `crate::measure`'s): read from the engine's parts when the gateway is scraped, so they are
//! right after a restart and, in a cluster, about the shared store (the outbox is the
//! cluster's; the lease is this gateway's). Labels are bounded names: lanes, channels, states.

use std::collections::BTreeMap;

use crate::channel::ChannelStatus;
use crate::config::Config;
use crate::runtime::Runtime;
use crate::runtime::lanes::Lanes;
use crate::store::{Store, StoreState};

/// The gauges' names.
pub mod mirrored {
    /// Deliveries waiting in the outbox, by channel (counted by the store).
    pub const OUTBOX_PENDING: &str = "switchboard_outbox_pending";
    /// Open WebSocket connections (the server's own count).
    pub const WEBSOCKET_CLIENTS: &str = "switchboard_websocket_clients";
    /// Configured channel accounts, by channel and state (`off`, `starting`, `failed`, the
    /// word of a running one such as `polling`; `enabled`/`disabled` for a channel without
    /// connections).
    pub const CHANNEL_ACCOUNTS: &str = "switchboard_channel_accounts";
    /// Slots of each lane (its configured size), by lane.
    pub const LANE_SLOTS: &str = "switchboard_lane_slots";
    /// Sessions with a run active (executing or waiting for a lane slot).
    pub const SESSIONS_ACTIVE: &str = "switchboard_sessions_active";
    /// Runs queued behind their session's active run (runs of a session never overlap).
    pub const SESSION_QUEUED: &str = "switchboard_session_queued_runs";
    /// Gateways sharing the store (1 alone).
    pub const CLUSTER_MEMBERS: &str = "switchboard_cluster_members";
    /// 1 while this gateway holds its lease (may start new work), else 0.
    pub const CLUSTER_LEASE_HELD: &str = "switchboard_cluster_lease_held";
}

/// One gauge's value with its labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub name: &'static str,
    /// The gauge's help text.
    pub help: &'static str,
    /// Bounded names only (lanes, channels, states).
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

impl Reading {
    fn new(name: &'static str, help: &'static str, value: f64) -> Self {
        Self {
            name,
            help,
            labels: Vec::new(),
            value,
        }
    }

    fn with(mut self, key: &'static str, value: impl Into<String>) -> Self {
        self.labels.push((key, value.into()));
        self
    }
}

/// Every mirrored gauge. The store is not read while it is unreachable (the scrape would wait
/// for it): the outbox and cluster gauges are left out then.
pub async fn read(
    store: &dyn Store,
    config: &Config,
    runtime: &Runtime,
    channels: &[ChannelStatus],
) -> Vec<Reading> {
    let mut readings = lane_slots(config);
    let (active, queued) = runtime.queue_depth();
    readings.push(Reading::new(
        mirrored::SESSIONS_ACTIVE,
        "Sessions with a run active (executing or waiting for a lane slot).",
        active as f64,
    ));
    readings.push(Reading::new(
        mirrored::SESSION_QUEUED,
        "Runs queued behind their session's active run.",
        queued as f64,
    ));
    readings.extend(channel_accounts(channels));
    if store.health().state != StoreState::Unreachable {
        readings.extend(stored(store).await);
    }
    readings
}

fn lane_slots(config: &Config) -> Vec<Reading> {
    let help = "Slots of each lane (its configured size).";
    Lanes::sizes(config)
        .into_iter()
        .map(|(lane, slots)| {
            Reading::new(mirrored::LANE_SLOTS, help, slots as f64).with("lane", lane.as_str())
        })
        .collect()
}

/// Configured accounts by channel and state: a connection's state where the channel keeps
/// one per account, else `enabled` or `disabled`.
fn channel_accounts(channels: &[ChannelStatus]) -> Vec<Reading> {
    let mut counts: BTreeMap<(&'static str, &'static str), u64> = BTreeMap::new();
    for channel in channels {
        for account in &channel.accounts {
            let state = match (&account.link, channel.enabled && account.enabled) {
                (Some(link), _) => link.as_str(),
                (None, true) => "enabled",
                (None, false) => "disabled",
            };
            *counts.entry((channel.name, state)).or_default() += 1;
        }
    }
    let help = "Configured channel accounts, by channel and state.";
    counts
        .into_iter()
        .map(|((channel, state), n)| {
            Reading::new(mirrored::CHANNEL_ACCOUNTS, help, n as f64)
                .with("channel", channel)
                .with("state", state)
        })
        .collect()
}

async fn stored(store: &dyn Store) -> Vec<Reading> {
    let lease = f64::from(u8::from(store.cluster().leased()));
    let mut readings = vec![Reading::new(
        mirrored::CLUSTER_LEASE_HELD,
        "1 while this gateway holds its lease (may start new work), else 0.",
        lease,
    )];
    match store.members().await {
        Ok(n) => readings.push(Reading::new(
            mirrored::CLUSTER_MEMBERS,
            "Gateways sharing the store.",
            n as f64,
        )),
        Err(e) => tracing::debug!(error = %e, "metrics: could not count the cluster's members"),
    }
    match store.pending_by_channel().await {
        Ok(counts) => {
            let help = "Deliveries waiting in the outbox, by channel.";
            readings.extend(counts.into_iter().map(|(channel, n)| {
                Reading::new(mirrored::OUTBOX_PENDING, help, n as f64).with("channel", channel)
            }));
        }
        Err(e) => tracing::debug!(error = %e, "metrics: could not count the pending deliveries"),
    }
    readings
}
