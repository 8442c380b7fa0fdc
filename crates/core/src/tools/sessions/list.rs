//! `sessions_list` (SPEC §7.1): the sessions the caller may see, most recently updated first.
//!
//! Every filter applies before `limit` (deliberate change: the reference limited first and
//! returned short pages). Visibility is a filter too: what SQL can express is pushed into the
//! query (another agent's rows when cross-agent access is off; for a sandboxed session that only
//! sees what it spawned, and a confined node session, `spawnedBy` = its key — the sessions it
//! spawned, not itself), then every
//! row is asked of
//! `access::decide(.., List)`, and further store pages are read until the page is full or the
//! store is exhausted. So a page is short only at the end, and invisible rows are simply absent.
//! `nextCursor` is the position of the last row returned, which means the same thing whatever
//! filters the next call repeats.

use std::sync::Arc;

use serde_json::Value;
use switchboard_protocol::lenient::clamp_or;
use switchboard_protocol::reading::ReadMessage;
use switchboard_protocol::session_tools::{ListParams, ListResult, ToolFailure};

use super::{Answer, SessionTools, history, store_failure};
use crate::access::{self, Operation, Requester};
use crate::keys::{self, KindsFilter, Scope};
use crate::resolve::target_of;
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::sessions::row;
use crate::store::{Cursor, ListQuery, SessionEntry, StoreError};

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 200;
pub const MAX_MESSAGE_LIMIT: i64 = 20;
/// Store rows read per query at most while filling a page past invisible rows.
const MAX_BATCH: usize = 1_000;

pub struct SessionsList(pub Arc<SessionTools>);

impl TypedTool for SessionsList {
    type Params = ListParams;
    type Output = Answer<ListResult>;

    fn name(&self) -> &'static str {
        "sessions_list"
    }

    fn hints(&self) -> ToolHints {
        ToolHints::READS
    }

    fn description(&self) -> &'static str {
        "List the sessions (conversations) you can see, most recently active first: your main \
         chat (`main`), group chats, cron jobs, hooks, nodes and sub-agents. Use it to find a \
         session's key before sessions_history or sessions_send. Each row has `key` (pass it as \
         sessionKey), `kind`, `channel`, `updatedAt` (ms), `sessionId`, and label, displayName, \
         model and token counts when known; with messageLimit > 0 also its last messages. When \
         `nextCursor` is present there are more: call again with cursor=nextCursor."
    }

    async fn run(&self, ctx: &ToolContext, p: ListParams) -> Self::Output {
        match self.list(ctx, p).await {
            Ok(result) => Answer::Done(result),
            Err(failure) => Answer::Failed(failure),
        }
    }
}

impl SessionsList {
    async fn list(&self, ctx: &ToolContext, p: ListParams) -> Result<ListResult, ToolFailure> {
        let config = &self.0.config;
        let limit = clamp_or(p.limit, DEFAULT_LIMIT, 1, MAX_LIMIT) as usize;
        let message_limit = clamp_or(p.message_limit, 0, 0, MAX_MESSAGE_LIMIT) as usize;
        let cursor = match p.cursor.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
            Some(c) => Some(Cursor::decode(c).ok_or_else(|| {
                ToolFailure::error(format!(
                    "cursor: {c:?} is not a cursor; pass the nextCursor of a previous sessions_list \
                     result, or omit it for the first page"
                ))
            })?),
            None => None,
        };
        let requester = self.0.requester(ctx);
        let filter = kinds(p.kinds.as_ref()).map_err(ToolFailure::error)?;

        let mut exclude_keys = vec![keys::UNKNOWN_KEY.to_string()];
        if config.scope() == Scope::PerSender {
            exclude_keys.push(keys::GLOBAL_KEY.to_string());
        }
        // Necessary conditions of visibility, pushed into SQL; `decide` has the last word.
        let agent_id = (!config.tools.agent_to_agent.enabled).then(|| requester.agent_id.clone());
        let only_spawned = requester.sees_only_spawned();
        let base = ListQuery {
            agent_id,
            kinds: filter.kinds,
            updated_since: p
                .active_minutes
                .filter(|m| *m >= 1)
                .map(|m| ctx.now_ms().saturating_sub(m.saturating_mul(60_000))),
            search: p
                .search
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
            spawned_by: only_spawned.then(|| ctx.caller().session_key.clone()),
            label: None,
            include_archived: false,
            exclude_keys,
            cursor,
            offset: 0,
            limit,
            rows: Vec::new(),
        };
        let (entries, next_cursor) = self
            .visible_page(ctx, &requester, base)
            .await
            .map_err(store_failure)?;

        let mut rows: Vec<_> = entries
            .iter()
            .map(|e| row(e, ctx.store(), config))
            .collect();
        if message_limit > 0 && !entries.is_empty() {
            // One batched query for every row.
            let ids = entries.iter().map(|e| e.session_id.clone()).collect();
            let messages = ctx
                .store()
                .last_messages(ids, message_limit)
                .await
                .map_err(store_failure)?;
            for (row, (session_id, messages)) in rows.iter_mut().zip(messages) {
                row.messages = Some(
                    history::transcript(&session_id, messages)
                        .into_iter()
                        .map(|m| ReadMessage::Trimmed(history::sanitize(m).0))
                        .collect(),
                );
            }
        }
        Ok(ListResult {
            count: rows.len(),
            sessions: rows,
            next_cursor: next_cursor.map(|c| c.encode()),
            // A model pages by cursor; the reference's paging fields are for operators.
            total_count: None,
            has_more: None,
            next_offset: None,
            warning: filter.warning,
            defaults: None,
        })
    }

    /// The first `base.limit` visible entries from `base.cursor` on, and the cursor of the next
    /// page when there is one.
    async fn visible_page(
        &self,
        ctx: &ToolContext,
        requester: &Requester,
        base: ListQuery,
    ) -> Result<(Vec<SessionEntry>, Option<Cursor>), StoreError> {
        let config = &self.0.config;
        let limit = base.limit;
        let visible = |e: &SessionEntry| {
            access::decide(config, requester, target_of(e), Operation::List).is_ok()
        };
        // One row past the page tells whether a next page exists without promising an empty one.
        let mut out: Vec<SessionEntry> = Vec::with_capacity(limit + 1);
        let mut cursor = base.cursor.clone();
        let mut batch = limit + 1;
        'scan: loop {
            let query = ListQuery {
                cursor: cursor.clone(),
                limit: batch,
                ..base.clone()
            };
            let page = ctx.store().list(query).await?;
            let more = page.next_cursor.is_some();
            for entry in page.entries {
                cursor = Some(Cursor {
                    updated_at: entry.updated_at,
                    key: entry.key.clone(),
                });
                if visible(&entry) {
                    out.push(entry);
                    if out.len() > limit {
                        break 'scan;
                    }
                }
            }
            if !more {
                break;
            }
            batch = (batch * 2).min(MAX_BATCH);
        }
        if out.len() > limit {
            out.truncate(limit);
            let next = out.last().map(|e| Cursor {
                updated_at: e.updated_at,
                key: e.key.clone(),
            });
            return Ok((out, next));
        }
        Ok((out, None))
    }
}

/// `kinds` as the model sent it: an array or one string (commas allowed).
fn kinds(value: Option<&Value>) -> Result<KindsFilter, String> {
    let words: Vec<&str> = match value {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    KindsFilter::parse(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_accept_arrays_and_single_strings_and_name_what_they_ignore() {
        use crate::keys::SessionKind;
        let mixed = kinds(Some(&json!(["group", "Cron", "bogus", 3]))).unwrap();
        assert_eq!(mixed.kinds, vec![SessionKind::Group, SessionKind::Cron]);
        assert_eq!(
            mixed.warning.as_deref(),
            Some(
                "kinds: ignored \"bogus\" (not a session kind; accepted: main, group, cron, hook, node, other)"
            )
        );
        assert_eq!(
            kinds(Some(&json!("hook"))).unwrap().kinds,
            vec![SessionKind::Hook]
        );
        let two = kinds(Some(&json!("main, node"))).unwrap();
        assert_eq!(
            (two.kinds, two.warning),
            (vec![SessionKind::Main, SessionKind::Node], None)
        );
        assert_eq!(
            kinds(Some(&json!(["nope"]))).unwrap_err(),
            "kinds: \"nope\" is not a session kind; accepted: main, group, cron, hook, node, other"
        );
        assert_eq!(kinds(None).unwrap(), KindsFilter::default());
    }
}
