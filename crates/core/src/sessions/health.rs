//! What `health` says of sessions, agents and channels, in the reference's shape (its
//! `openclaw health` prints it): per agent the session count, the index path and the five most
//! recently updated sessions; the channels as their statuses say (the registry's, through the
//! channel seam: this component names no channel).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use switchboard_protocol::agents::{
    ChannelsStatusResult, HealthAgent, HealthSessions, RecentSession,
};

use super::Sessions;
use crate::channel::{AccountStatus, ChannelStatus, LinkState};
use crate::error::CoreResult;
use crate::store::{ListQuery, index_label};

/// Recent sessions listed per agent (the reference lists five too).
const RECENT: usize = 5;
/// How long per-agent session counts are reused: counting walks an index of every session
/// (about 9 ms at 100k), and a health summary a second old is as good.
const COUNTS_FOR_MS: i64 = 1_000;

/// Sessions per agent and when they were counted (ms).
pub(super) type Counts = (i64, Vec<(String, u64)>);

/// The session and agent parts of `health`.
pub struct HealthParts {
    pub default_agent_id: String,
    pub agents: Vec<HealthAgent>,
    pub sessions: HealthSessions,
    pub session_count: u64,
}

impl Sessions {
    /// Sessions per agent, their index files and the most recent ones.
    pub async fn health(&self) -> CoreResult<HealthParts> {
        let now = self.clock.now_ms();
        let counts: BTreeMap<String, u64> = self.counts(now).await?.into_iter().collect();
        let default_agent_id = self.config.default_agent_id();
        let mut ids = self.config.agent_ids();
        ids.sort_by_key(|id| *id != default_agent_id);
        let mut agents = Vec::with_capacity(ids.len());
        let mut recent_all: Vec<RecentSession> = Vec::new();
        for id in ids {
            let recent = self.recent(Some(&id), now).await?;
            recent_all.extend(recent.iter().cloned());
            agents.push(HealthAgent {
                name: self.config.agent(&id).name.clone(),
                is_default: id == default_agent_id,
                heartbeat: json!({"enabled": false, "everyMs": null}),
                sessions: HealthSessions {
                    path: index_label(self.store.as_ref(), &id),
                    count: counts.get(&id).copied().unwrap_or(0),
                    recent,
                },
                agent_id: id,
            });
        }
        recent_all.sort_by_key(|r| std::cmp::Reverse(r.updated_at));
        recent_all.truncate(RECENT);
        let session_count = counts.values().sum();
        let sessions = HealthSessions {
            path: index_label(self.store.as_ref(), &default_agent_id),
            count: session_count,
            recent: recent_all,
        };
        Ok(HealthParts {
            default_agent_id,
            agents,
            sessions,
            session_count,
        })
    }

    /// The parts of `health` when the store cannot be read: the agents, with no counts and
    /// no recent sessions.
    pub fn health_unread(&self) -> HealthParts {
        let default_agent_id = self.config.default_agent_id();
        let empty = |id: &str| HealthSessions {
            path: index_label(self.store.as_ref(), id),
            count: 0,
            recent: Vec::new(),
        };
        let agents = self
            .config
            .agent_ids()
            .into_iter()
            .map(|id| HealthAgent {
                name: self.config.agent(&id).name.clone(),
                is_default: id == default_agent_id,
                heartbeat: json!({"enabled": false, "everyMs": null}),
                sessions: empty(&id),
                agent_id: id,
            })
            .collect();
        HealthParts {
            sessions: empty(&default_agent_id),
            default_agent_id,
            agents,
            session_count: 0,
        }
    }

    /// Sessions per agent, counted at most once per [`COUNTS_FOR_MS`].
    async fn counts(&self, now: i64) -> CoreResult<Vec<(String, u64)>> {
        let cached = self
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some((at, counts)) = cached
            && (0..COUNTS_FOR_MS).contains(&(now - at))
        {
            return Ok(counts);
        }
        let counts = self.store.count_by_agent().await?;
        *self.counts.lock().unwrap_or_else(|p| p.into_inner()) = Some((now, counts.clone()));
        Ok(counts)
    }

    async fn recent(&self, agent_id: Option<&str>, now: i64) -> CoreResult<Vec<RecentSession>> {
        let page = self
            .store
            .list(ListQuery {
                agent_id: agent_id.map(str::to_string),
                include_archived: false,
                ..ListQuery::every(None, RECENT)
            })
            .await?;
        Ok(page
            .entries
            .iter()
            .map(|e| RecentSession {
                key: e.key.display().to_string(),
                updated_at: Some(e.updated_at),
                age: Some(now.saturating_sub(e.updated_at).max(0)),
            })
            .collect())
    }
}

/// The `channels`, `channelOrder` and `channelLabels` of `health`, from the channels'
/// statuses (in the registry's order).
pub fn channel_health(
    statuses: &[ChannelStatus],
) -> (Map<String, Value>, Vec<String>, BTreeMap<String, String>) {
    let mut channels = Map::new();
    for status in statuses {
        let accounts: Map<String, Value> = status
            .accounts
            .iter()
            .map(|a| (a.account_id.clone(), account_health(a)))
            .collect();
        let mut entry = match &status.link {
            Some(link) => link_health(&link.account_id, &link.state),
            None => json!({}),
        };
        entry["configured"] = json!(status.configured());
        entry["enabled"] = json!(status.enabled);
        entry["accounts"] = Value::Object(accounts);
        channels.insert(status.name.into(), entry);
    }
    let labels = statuses
        .iter()
        .map(|s| (s.name.to_string(), s.label.to_string()))
        .collect();
    let order = statuses.iter().map(|s| s.name.to_string()).collect();
    (channels, order, labels)
}

/// `channels.status`: the channels as `health` shows them, and each one's accounts as a list.
pub fn channels_status(statuses: &[ChannelStatus], ts: i64) -> ChannelsStatusResult {
    let (channels, channel_order, channel_labels) = channel_health(statuses);
    let channel_accounts = statuses
        .iter()
        .map(|s| {
            let accounts = s.accounts.iter().map(account_health).collect();
            (s.name.to_string(), accounts)
        })
        .collect();
    let channel_default_account_id = statuses
        .iter()
        .filter_map(|s| {
            let first = s.accounts.first()?;
            Some((s.name.to_string(), first.account_id.clone()))
        })
        .collect();
    ChannelsStatusResult {
        ts,
        channel_order,
        channel_labels,
        channels,
        channel_accounts,
        channel_default_account_id,
        status_issues: Vec::new(),
    }
}

/// One account of a channel.
fn account_health(account: &AccountStatus) -> Value {
    let mut health = match &account.link {
        Some(state) => link_health(&account.account_id, state),
        None => json!({"accountId": account.account_id}),
    };
    health["configured"] = json!(true);
    health["enabled"] = json!(account.enabled);
    health
}

/// A connection's state, as the account `id`'s.
fn link_health(id: &str, state: &LinkState) -> Value {
    json!({
        "accountId": id, "running": state.is_up(), "state": state.as_str(),
        "lastError": state.last_error(),
    })
}
