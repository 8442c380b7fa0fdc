//! `sessions.list`: filters first, then the page (SPEC §7.1; deliberate change: the reference
//! limited first and returned short pages).

use switchboard_protocol::lenient::clamp_or;
use switchboard_protocol::message::HistoryMessage;
use switchboard_protocol::sessions::{SessionsListParams, SessionsListResult};

use super::Sessions;
use super::history::history_message;
use crate::error::{CoreError, CoreResult};
use crate::keys::{self, KindsFilter, Scope};
use crate::store::{Cursor, ListQuery};

pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 1000;
pub const MAX_MESSAGE_LIMIT: i64 = 20;

/// What a `sessions.list` request asks the store for, and what its answer shows beside the
/// rows.
pub(super) struct ListRequest {
    pub(super) query: ListQuery,
    /// How many of each session's last messages its row shows (0: none).
    pub(super) message_limit: usize,
    /// Something in the request was ignored (an unknown kind).
    pub(super) warning: Option<String>,
    /// Count the sessions over all pages even when more pages follow (`includeTotal`).
    pub(super) count: bool,
}

impl Sessions {
    /// `sessions.list`: every filter, then the page.
    pub async fn list(&self, p: SessionsListParams) -> CoreResult<SessionsListResult> {
        let ListRequest {
            query,
            message_limit,
            warning,
            count,
        } = self.list_request(p)?;
        let page = self.store.list(query.clone()).await?;
        let more = page.next_cursor.is_some();
        let total = (self.total(&query, (page.entries.len(), more), count)).await?;
        let ids: Vec<String> = match message_limit {
            0 => Vec::new(),
            _ => page.entries.iter().map(|e| e.session_id.clone()).collect(),
        };
        let mut sessions = self.rows(page.entries).await?;
        if message_limit > 0 {
            let messages = self.last_messages(ids, message_limit).await?;
            for (row, messages) in sessions.iter_mut().zip(messages) {
                row.messages = Some(messages);
            }
        }
        let count = sessions.len();
        Ok(SessionsListResult {
            count,
            sessions,
            next_cursor: page.next_cursor.map(|c| c.encode()),
            total_count: total,
            has_more: Some(more),
            next_offset: more.then_some((query.offset + count) as u64),
            warning,
            defaults: Some(self.defaults()),
        })
    }

    /// How many sessions `query` lists over all its pages, having read a page of `rows` from
    /// it: known when the page reached the end; counted by the store (a read of every matching
    /// row) only when `count` asks, else unknown.
    pub(super) async fn total(
        &self,
        query: &ListQuery,
        (rows, more): (usize, bool),
        count: bool,
    ) -> CoreResult<Option<u64>> {
        if !more && query.cursor.is_none() && (rows > 0 || query.offset == 0) {
            return Ok(Some((query.offset + rows) as u64));
        }
        match count {
            true => Ok(Some(self.store.count_listed(query.clone()).await?)),
            false => Ok(None),
        }
    }

    /// The last `limit` messages of each transcript, as rows show them (one store read).
    pub(super) async fn last_messages(
        &self,
        session_ids: Vec<String>,
        limit: usize,
    ) -> CoreResult<Vec<Vec<HistoryMessage>>> {
        let messages = self.store.last_messages(session_ids, limit).await?;
        Ok(messages
            .into_iter()
            .map(|(session_id, messages)| {
                messages
                    .into_iter()
                    .map(|m| history_message(&session_id, m))
                    .collect()
            })
            .collect())
    }

    /// The store's query of a `sessions.list` request: every filter, the cursor and the limit.
    pub(super) fn list_request(&self, p: SessionsListParams) -> CoreResult<ListRequest> {
        let limit = clamp_or(p.limit, DEFAULT_LIMIT, 1, MAX_LIMIT) as usize;
        let message_limit = clamp_or(p.message_limit, 0, 0, MAX_MESSAGE_LIMIT) as usize;
        let cursor = match p.cursor.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => Some(Cursor::decode(c).ok_or_else(|| {
            CoreError::invalid(format!(
                "cursor: {c:?} is not a cursor; pass the nextCursor of a previous sessions.list page"
            ))
        })?),
        None => None,
    };
        let words = p.kinds.map(|k| k.into_vec()).unwrap_or_default();
        let filter = KindsFilter::parse(words.iter().map(String::as_str))
            .map_err(|e| CoreError::invalid(format!("sessions.list: {e}")))?;
        let mut exclude_keys = vec!["unknown".to_string()];
        if self.config.scope() == Scope::PerSender {
            exclude_keys.push("global".to_string());
        }
        let spawned_by = match p.spawned_by.as_deref() {
            Some(parent) => Some(self.resolver.canonical(parent, p.agent_id.as_deref())?),
            None => None,
        };
        let query = ListQuery {
            agent_id: p.agent_id.as_deref().map(keys::normalize_agent_id),
            kinds: filter.kinds,
            updated_since: p
                .active_minutes
                .filter(|m| *m >= 1)
                .map(|m| self.clock.now_ms() - m.saturating_mul(60_000)),
            search: p.search.filter(|s| !s.trim().is_empty()),
            spawned_by,
            label: p.label,
            include_archived: p.include_archived.unwrap_or(false),
            exclude_keys,
            cursor,
            offset: p.offset.unwrap_or(0).max(0) as usize,
            limit,
            rows: Vec::new(),
        };
        Ok(ListRequest {
            query,
            message_limit,
            warning: filter.warning,
            count: p.include_total.unwrap_or(false),
        })
    }
}
