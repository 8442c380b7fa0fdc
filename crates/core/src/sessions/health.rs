//! What `health` says of sessions, agents and channels, in the reference's shape (its
//! `openclaw health` prints it): per agent the session count, the index path and the five most
//! recently updated sessions; the channels as configured.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use switchboard_protocol::agents::{HealthAgent, HealthSessions, RecentSession};

use super::Sessions;
use crate::channels::telegram::{Status, Telegram};
use crate::config::Config;
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

/// The `channels`, `channelOrder` and `channelLabels` of `health`, from the config and the
/// Telegram bots' states.
pub fn channel_health(
    config: &Config,
    telegram: &Telegram,
) -> (Map<String, Value>, Vec<String>, BTreeMap<String, String>) {
    let webhook = &config.channels.webhook;
    let accounts: Map<String, Value> = webhook
        .accounts
        .keys()
        .map(|id| {
            let account = json!({"accountId": id, "configured": true, "enabled": webhook.enabled});
            (id.clone(), account)
        })
        .collect();
    let mut channels = Map::new();
    channels.insert(
        "webhook".into(),
        json!({"configured": !accounts.is_empty(), "enabled": webhook.enabled, "accounts": accounts}),
    );
    let bot = |id: &str, status: &Status| {
        let last_error = match status {
            Status::Failed(why) => Some(why.clone()),
            _ => None,
        };
        json!({
            "accountId": id, "configured": true, "enabled": true,
            "running": *status == Status::Polling, "state": status.as_str(), "lastError": last_error,
        })
    };
    let bots: Map<String, Value> = telegram
        .statuses()
        .iter()
        .map(|(id, status)| (id.clone(), bot(id, status)))
        .collect();
    let mut summary = bot(crate::config::TELEGRAM_DEFAULT_ACCOUNT, &telegram.status());
    summary["configured"] = json!(!bots.is_empty());
    summary["enabled"] = json!(config.channels.telegram.enabled);
    summary["accounts"] = Value::Object(bots);
    channels.insert("telegram".into(), summary);
    let labels = BTreeMap::from([
        ("webhook".to_string(), "Webhook".to_string()),
        ("telegram".to_string(), "Telegram".to_string()),
    ]);
    (channels, vec!["webhook".into(), "telegram".into()], labels)
}
