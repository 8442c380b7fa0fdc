//! `sessions.usage`, `sessions.usage.timeseries`, `sessions.usage.logs`, `usage.cost` and
//! `usage.status`, counted from the transcripts: every assistant message records its model
//! call's tokens and price (priced with the model that answered, when prices are configured).
//! A window's messages are read in one query (`SessionReads::messages_between`), archived
//! transcripts included: a reset or deleted session's calls still cost what they cost.

mod tally;
mod window;

use std::collections::BTreeMap;

use switchboard_protocol::message::ContentBlock;
use switchboard_protocol::usage::{
    AgentUsage, ChannelUsage, CostTotals, CreatorOption, DailyCost, SessionCostSummary,
    SessionUsageDetailParams, SessionUsageRow, SessionsUsageParams, SessionsUsageResult,
    UsageAggregates, UsageCostParams, UsageCostResult, UsageLogEntry, UsageLogs, UsagePoint,
    UsageTimeseries,
};

use self::tally::{Call, Tally};
pub(crate) use self::window::Window;
use super::Sessions;
use crate::error::{CoreError, CoreResult};
use crate::keys::SessionKey;
use crate::store::{DatedMessage, SessionEntry};

/// Sessions answered by `sessions.usage` without a `limit`, and the most it answers.
const DEFAULT_ROWS: i64 = 50;
const MAX_ROWS: i64 = 1_000;
/// Messages of one session read for its timeseries and log.
const DETAIL_MESSAGES: usize = 1_000;
/// Points of a timeseries, and characters of a log entry.
const MAX_POINTS: usize = 200;
const LOG_TEXT: usize = 2_000;
/// The one creator of every session (the reference's creator filter).
const CREATOR: &str = "[\"unknown\"]";

/// Which messages a read counts.
struct Filter {
    agent: Option<String>,
    key: Option<String>,
}

impl Filter {
    fn takes(&self, m: &DatedMessage) -> bool {
        self.agent.as_ref().is_none_or(|a| *a == m.agent_id)
            && self.key.as_ref().is_none_or(|k| *k == m.session_key)
    }
}

/// One session's part of a window.
#[derive(Default)]
struct SessionTally {
    agent: String,
    /// The newest transcript of the window.
    session_id: String,
    tally: Tally,
}

impl Sessions {
    /// `sessions.usage`: the window's calls summed in every cut, and its busiest sessions.
    pub async fn sessions_usage(&self, p: SessionsUsageParams) -> CoreResult<SessionsUsageResult> {
        let window = Window::of(&p.window(), self.clock.now_ms()).map_err(CoreError::Invalid)?;
        let filter = self.filter(
            p.agent_id.as_deref(),
            p.agent_scope.as_deref(),
            p.key.as_deref(),
        )?;
        let limit = p.limit.unwrap_or(DEFAULT_ROWS);
        if !(1..=MAX_ROWS).contains(&limit) {
            return Err(CoreError::Invalid(format!(
                "limit: {limit} is out of range; 1 to {MAX_ROWS}"
            )));
        }
        let (from, to) = window.bounds();
        let mut all = Tally::default();
        let mut sessions: BTreeMap<String, SessionTally> = BTreeMap::new();
        let (mut by_agent, mut by_channel) = (BTreeMap::new(), BTreeMap::new());
        for m in self.store.messages_between(from, to).await? {
            if !filter.takes(&m) {
                continue;
            }
            let date = window.date_of(m.ts);
            let call = (m.role == "assistant").then(|| Call::of(&m.body)).flatten();
            all.add(&m.role, m.ts, &date, call.as_ref());
            let session = sessions.entry(m.session_key.clone()).or_default();
            session.tally.add(&m.role, m.ts, &date, call.as_ref());
            session.session_id = m.session_id;
            session.agent = m.agent_id.clone();
            if let Some(call) = &call {
                let agent: &mut CostTotals = by_agent.entry(m.agent_id).or_default();
                agent.add(&call.totals);
                let channel: &mut CostTotals =
                    by_channel.entry(channel_of(&m.session_key)).or_default();
                channel.add(&call.totals);
            }
        }
        let aggregates = UsageAggregates {
            session_count: sessions.len() as u64,
            messages: all.messages,
            tools: all.tool_usage(),
            by_model: all.by_model(),
            by_provider: all.by_provider(),
            by_agent: (by_agent.into_iter())
                .map(|(agent_id, totals)| AgentUsage { agent_id, totals })
                .collect(),
            by_channel: (by_channel.into_iter())
                .map(|(channel, totals)| ChannelUsage { channel, totals })
                .collect(),
            cost_daily: all.cost_daily(),
            model_daily: all.model_daily(),
            daily: all.daily(),
            ..UsageAggregates::default()
        };
        Ok(SessionsUsageResult {
            updated_at: self.clock.now_ms(),
            start_date: window.start_date(),
            end_date: window.end_date(),
            sessions: self.usage_rows(sessions, limit as usize).await?,
            totals: all.totals,
            aggregates,
            creator_options: vec![CreatorOption {
                key: CREATOR.into(),
            }],
        })
    }

    /// `usage.cost`: each day of the window (zero where nothing was called) and the totals.
    pub async fn usage_cost(&self, p: UsageCostParams) -> CoreResult<UsageCostResult> {
        let window = Window::of(&p.window(), self.clock.now_ms()).map_err(CoreError::Invalid)?;
        let filter = self.filter(p.agent_id.as_deref(), p.agent_scope.as_deref(), None)?;
        let (from, to) = window.bounds();
        let mut all = Tally::default();
        for m in self.store.messages_between(from, to).await? {
            if filter.takes(&m) && m.role == "assistant" {
                let call = Call::of(&m.body);
                all.add(&m.role, m.ts, &window.date_of(m.ts), call.as_ref());
            }
        }
        let mut days: BTreeMap<String, CostTotals> = (all.cost_daily().into_iter())
            .map(|d| (d.date, d.totals))
            .collect();
        Ok(UsageCostResult {
            updated_at: self.clock.now_ms(),
            days: window.days(),
            daily: (window.dates())
                .map(|date| DailyCost {
                    totals: days.remove(&date).unwrap_or_default(),
                    date,
                })
                .collect(),
            totals: all.totals,
            by_model: all.per_model_ref(),
        })
    }

    /// `sessions.usage.timeseries`: the session's model calls, the newest 200, with running sums.
    pub async fn usage_timeseries(
        &self,
        p: SessionUsageDetailParams,
    ) -> CoreResult<UsageTimeseries> {
        let (entry, messages) = self.detail(&p).await?;
        let mut points: Vec<UsagePoint> = Vec::new();
        let (mut tokens, mut cost) = (0, 0.0);
        for (ts, call) in messages.iter().filter_map(|(ts, role, _, call)| {
            (role == "assistant").then_some((*ts, call.as_ref()?))
        }) {
            let t = &call.totals;
            tokens += t.total_tokens;
            cost += t.total_cost;
            points.push(UsagePoint {
                timestamp: ts,
                input: t.input,
                output: t.output,
                cache_read: t.cache_read,
                cache_write: t.cache_write,
                total_tokens: t.total_tokens,
                cost: t.total_cost,
                cumulative_tokens: tokens,
                cumulative_cost: cost,
            });
        }
        let skip = points.len().saturating_sub(MAX_POINTS);
        Ok(UsageTimeseries {
            session_id: entry.session_id,
            points: points.split_off(skip),
        })
    }

    /// `sessions.usage.logs`: the session's messages, newest `limit` (200 by default), each
    /// with its text and, for a model's reply, its tokens and cost.
    pub async fn usage_logs(&self, p: SessionUsageDetailParams) -> CoreResult<UsageLogs> {
        let limit = p.limit.unwrap_or(200);
        if !(1..=DETAIL_MESSAGES as i64).contains(&limit) {
            return Err(CoreError::Invalid(format!(
                "limit: {limit} is out of range; 1 to {DETAIL_MESSAGES}"
            )));
        }
        let (_, messages) = self.detail(&p).await?;
        let skip = messages.len().saturating_sub(limit as usize);
        let logs = (messages.into_iter().skip(skip))
            .map(|(timestamp, role, content, call)| UsageLogEntry {
                timestamp,
                role,
                content,
                tokens: call.as_ref().map(|c| c.totals.total_tokens),
                cost: call.as_ref().map(|c| c.totals.total_cost),
            })
            .collect();
        Ok(UsageLogs { logs })
    }

    /// The session of a detail read and its newest messages: time, role, text and model call.
    async fn detail(
        &self,
        p: &SessionUsageDetailParams,
    ) -> CoreResult<(SessionEntry, Vec<(i64, String, String, Option<Call>)>)> {
        let key = self.resolver.caller_key(&p.key, p.agent_id.as_deref())?;
        let entry = self.store.get(&key).await?.ok_or_else(|| {
            CoreError::NotFound(format!(
                "no transcript found for session {} (sessions.list shows the sessions)",
                key.display()
            ))
        })?;
        let page = (self.store)
            .history_text(&entry.session_id, DETAIL_MESSAGES, None)
            .await?;
        let mut out = Vec::with_capacity(page.messages.len());
        for text in page.messages {
            let stored = text.into_stored()?;
            let message = &stored.message;
            let role = message["role"].as_str().unwrap_or("").to_string();
            let ts = message["timestamp"].as_i64().unwrap_or(0);
            // A model call is read from an assistant's message alone (from its decoded JSON).
            let call = (role == "assistant")
                .then(|| Call::of_value(message))
                .flatten();
            out.push((ts, role, text_of(message), call));
        }
        Ok((entry, out))
    }

    /// The messages a read counts: one agent's (`agentId`, which must be configured), every
    /// agent's (`agentScope: "all"`, the default), or one session's.
    fn filter(
        &self,
        agent: Option<&str>,
        scope: Option<&str>,
        key: Option<&str>,
    ) -> CoreResult<Filter> {
        match scope {
            None => {}
            Some("all") if agent.is_none() && key.is_none() => {}
            Some("all") => {
                return Err(CoreError::Invalid(
                    "agentScope \"all\" reads every agent: leave out agentId and key, or leave \
                     out agentScope"
                        .into(),
                ));
            }
            Some(other) => {
                return Err(CoreError::Invalid(format!(
                    "agentScope: {other:?} is not a scope; accepted: all"
                )));
            }
        }
        let agent = agent.map(|a| self.resolver.known_agent(a)).transpose()?;
        let key = key
            .map(|k| self.resolver.caller_key(k, agent.as_deref()))
            .transpose()?;
        Ok(Filter {
            agent,
            key: key.map(SessionKey::into_string),
        })
    }

    /// The `limit` sessions with the most tokens, as rows with their stored names.
    async fn usage_rows(
        &self,
        sessions: BTreeMap<String, SessionTally>,
        limit: usize,
    ) -> CoreResult<Vec<SessionUsageRow>> {
        let mut busiest: Vec<(String, SessionTally)> = sessions.into_iter().collect();
        busiest.sort_by(|(_, a), (_, b)| {
            (b.tally.totals.total_tokens, b.tally.last)
                .cmp(&(a.tally.totals.total_tokens, a.tally.last))
        });
        busiest.truncate(limit);
        let mut rows = Vec::with_capacity(busiest.len());
        for (key, session) in busiest {
            let stored = SessionKey::from_canonical(key.clone());
            let entry = self.store.get(&stored).await?;
            rows.push(usage_row(&stored, session, entry));
        }
        Ok(rows)
    }
}

/// A session's row: its tally, named as it is stored (a deleted session by its key alone).
fn usage_row(key: &SessionKey, s: SessionTally, entry: Option<SessionEntry>) -> SessionUsageRow {
    let t = &s.tally;
    let (first, last) = (t.first, t.last);
    let model = entry
        .as_ref()
        .and_then(|e| e.last_model.clone().or(e.model.clone()));
    let (provider, model) = match model.as_deref().and_then(|m| m.split_once('/')) {
        Some((p, m)) => (Some(p.to_string()), Some(m.to_string())),
        None => (None, model),
    };
    SessionUsageRow {
        key: key.display().to_string(),
        label: entry.as_ref().and_then(|e| e.label.clone()),
        session_id: entry
            .as_ref()
            .map_or(s.session_id.clone(), |e| e.session_id.clone()),
        scope: "instance".into(),
        updated_at: entry.as_ref().map_or(last.unwrap_or(0), |e| e.updated_at),
        agent_id: s.agent.clone(),
        creator_key: CREATOR.into(),
        channel: Some(channel_of(key.as_str())),
        chat_type: entry
            .as_ref()
            .and_then(|e| e.chat_type)
            .map(|c| c.as_str().to_string()),
        model_provider: provider,
        model,
        usage: SessionCostSummary {
            session_id: s.session_id,
            first_activity: first,
            last_activity: last,
            duration_ms: first.zip(last).map(|(f, l)| l - f),
            activity_dates: t.dates(),
            daily_breakdown: t.cost_daily(),
            message_counts: t.messages,
            tool_usage: t.tool_usage(),
            model_usage: t.by_model(),
            totals: t.totals,
        },
        has_context_weight: false,
    }
}

/// The channel a session's messages come through: its key's, or `webchat` for the sessions
/// operators and agents write to (the web page's and the reference's word).
fn channel_of(key: &str) -> String {
    crate::keys::key_channel(key)
        .unwrap_or("webchat")
        .to_string()
}

/// The text of a transcript message, cut to [`LOG_TEXT`] characters.
fn text_of(message: &serde_json::Value) -> String {
    if let Some(text) = message["content"].as_str() {
        return cut(text.to_string());
    }
    let blocks: Vec<ContentBlock> =
        serde_json::from_value(message["content"].clone()).unwrap_or_default();
    let mut text = String::new();
    for block in blocks {
        let part = match block {
            ContentBlock::Text { text } => text,
            ContentBlock::ToolCall { name, .. } => format!("[tool call: {name}]"),
            _ => continue,
        };
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&part);
    }
    cut(text)
}

fn cut(text: String) -> String {
    match text.char_indices().nth(LOG_TEXT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}
