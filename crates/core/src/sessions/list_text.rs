//! `sessions.list` written as its JSON text, the text of [`Sessions::list`]'s page byte for byte
//! (tests compare the two): each row's stored part is written on the thread that reads it, from
//! the columns borrowed from the row ([`EntrySink`]), so no entry and no row is built and no
//! string a column is made. What a row shows of the session now (its runs, a sub-agent's task,
//! its last messages) is known only once the page is read: each row is finished then.

use std::any::Any;
use std::sync::Arc;

use switchboard_protocol::list_json::{
    PageEnd, RowTail, RunFields, write_page, write_row_head, write_row_tail, write_run_fields,
};
use switchboard_protocol::message::HistoryMessage;
use switchboard_protocol::sessions::{RunActivity, SessionsListParams};

use super::list::ListRequest;
use super::{ModelLookups, Sessions, row_head};
use crate::config::Config;
use crate::error::{CoreError, CoreResult};
use crate::runtime::RunView;
use crate::store::{Cursor, EntrySink, EntryView, ListQuery, StoreError};

/// The room a row's tail is given in the page's buffer: about what a running session's run
/// fields take with an earlier run's (a state, a status, two run ids, three times; 240 bytes),
/// more than most rows' (an ended run's, 180; none since the start, 40). Only a size to start
/// from: a page of larger tails grows its buffer.
const TAIL_BYTES: usize = 256;

impl Sessions {
    /// `sessions.list` as the compact JSON text of its page: every filter, then the page (its
    /// rows as read from the store, or as kept since: `kept.rs`).
    pub async fn list_text(&self, p: SessionsListParams) -> CoreResult<Vec<u8>> {
        let ListRequest {
            query,
            message_limit,
            warning,
            count,
        } = self.list_request(p)?;
        let read = async |(query, messages, count): &(ListQuery, bool, bool)| {
            self.read_heads(query.clone(), *messages, *count).await
        };
        let offset = query.offset;
        let asked = (query, message_limit > 0, count);
        let version = self.store.version();
        let heads = match (self.kept.lists).get(&asked, version) {
            Some(heads) => heads,
            None => {
                let heads = match self.patched(&asked, version).await? {
                    Some(heads) => heads,
                    None => Arc::new(read(&asked).await?),
                };
                let size = heads.bytes();
                (self.kept.lists).keep(asked, version, heads.clone(), size);
                heads
            }
        };
        let rows = heads.rows.len();
        let keys: Vec<&str> = (0..rows).map(|i| heads.key(i)).collect();
        let views = self.runtime.run_rows(&keys);
        let parents = (0..rows).map(|i| heads.rows[i].parent.then(|| heads.key(i)));
        let subagents = self.subagents(parents).await?;
        let messages: Vec<Vec<HistoryMessage>> = match heads.session_ids.is_empty() {
            true => Vec::new(),
            false => {
                self.last_messages(heads.session_ids.clone(), message_limit)
                    .await?
            }
        };
        let defaults = self.defaults();
        let more = heads.next_cursor.is_some();
        let end = PageEnd {
            next_cursor: heads.next_cursor.as_deref(),
            total_count: heads.total,
            has_more: Some(more),
            next_offset: more.then_some((offset + rows) as u64),
            warning: warning.as_deref(),
            defaults: Some(&defaults),
        };
        // The rows as written, and what their tails add (most rows: a run's few fields). Room
        // for them all at once: a page that outgrew its buffer was copied whole at each growth.
        let mut out = Vec::with_capacity(heads.text.len() + rows * TAIL_BYTES + 512);
        write_page(&mut out, rows, rows, end, |out, i| {
            out.extend_from_slice(heads.head(i));
            let tail = RowTail {
                messages: match message_limit {
                    0 => None,
                    _ => messages.get(i).map(Vec::as_slice),
                },
                run_state: views[i].state(),
                activity: Some(run_fields(&views[i])),
                subagent: subagents[i].as_ref(),
            };
            write_row_tail(out, &tail)
        })
        .map_err(|e| backend(format!("could not write a list page: {e}")))?;
        Ok(out)
    }

    /// The page's rows as the store reads them now, written up to what the session shows now.
    async fn read_heads(
        &self,
        query: ListQuery,
        with_messages: bool,
        count: bool,
    ) -> CoreResult<Heads> {
        let (heads, next_cursor) = self.read_rows(query.clone(), with_messages).await?;
        let rows = heads.rows.len();
        let total = (self.total(&query, (rows, next_cursor.is_some()), count)).await?;
        Ok(Heads {
            next_cursor: next_cursor.map(|c| c.encode()),
            total,
            ..heads
        })
    }

    /// The rows `query` reads now, written, and the next page's cursor.
    pub(super) async fn read_rows(
        &self,
        query: ListQuery,
        with_messages: bool,
    ) -> CoreResult<(Heads, Option<Cursor>)> {
        let sink = Reading::new(self.config.clone(), with_messages, query.limit);
        let (sink, next_cursor) = self.store.list_into(query, Box::new(sink)).await?;
        let reading = (sink as Box<dyn Any>)
            .downcast::<Reading>()
            .map_err(|_| backend("the store handed back another list sink".to_string()))?;
        Ok((reading.heads, next_cursor))
    }
}

/// A row's run fields for the page: built for a session with a run working or waiting, else
/// those of its last ended run as the first page to show them wrote them.
fn run_fields(view: &RunView) -> RunFields<'_> {
    static IDLE: RunActivity = RunActivity::IDLE;
    match view {
        RunView::Live(_, activity) => RunFields::Built(activity),
        RunView::Idle(None) => RunFields::Built(&IDLE),
        RunView::Idle(Some(last)) => RunFields::Written(last.written(|activity| {
            let mut out = Vec::with_capacity(TAIL_BYTES);
            // Writing into a `Vec` cannot fail.
            let _ = write_run_fields(&mut out, activity);
            out
        })),
    }
}

fn backend(message: String) -> CoreError {
    CoreError::Store(StoreError::Backend(message))
}

/// The page's rows as the store read them, written up to what the session shows now: what a
/// page keeps ([`Sessions::list_text`]).
pub(super) struct Heads {
    /// The rows' starts, one after another.
    pub(super) text: Vec<u8>,
    pub(super) rows: Vec<Head>,
    /// The rows' canonical keys, one after another.
    pub(super) keys: String,
    /// Each row's transcript, when the page shows the last messages.
    pub(super) session_ids: Vec<String>,
    pub(super) next_cursor: Option<String>,
    /// Sessions the request lists over all its pages, when known.
    pub(super) total: Option<u64>,
}

/// Where a row's start and key end in [`Heads`], and where the row sorts.
pub(super) struct Head {
    text_end: usize,
    key_end: usize,
    /// A sub-agent's session (it has a parent).
    pub(super) parent: bool,
    pub(super) updated_at: i64,
    /// The row's place in the store's table (`EntryView::row`).
    pub(super) row: i64,
}

impl Heads {
    /// Room for `rows` rows of about the seeded size.
    pub(super) fn with_capacity(rows: usize) -> Self {
        Self {
            text: Vec::with_capacity(rows * 448),
            rows: Vec::with_capacity(rows),
            keys: String::with_capacity(rows * 48),
            session_ids: Vec::new(),
            next_cursor: None,
            total: None,
        }
    }

    /// What the page holds, about.
    pub(super) fn bytes(&self) -> usize {
        self.text.len() + self.keys.len()
    }

    pub(super) fn head(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |j| self.rows[j].text_end);
        &self.text[start..self.rows[i].text_end]
    }

    pub(super) fn key(&self, i: usize) -> &str {
        let start = i.checked_sub(1).map_or(0, |j| self.rows[j].key_end);
        &self.keys[start..self.rows[i].key_end]
    }

    /// Adds a row: its start as written, its key and where it sorts.
    pub(super) fn push(
        &mut self,
        head: &[u8],
        key: &str,
        (parent, updated_at, row): (bool, i64, i64),
    ) {
        self.text.extend_from_slice(head);
        self.end_row(key, (parent, updated_at, row));
    }

    /// Ends the row whose start was just written to `text`: its key and where it sorts.
    fn end_row(&mut self, key: &str, (parent, updated_at, row): (bool, i64, i64)) {
        self.keys.push_str(key);
        self.rows.push(Head {
            text_end: self.text.len(),
            key_end: self.keys.len(),
            parent,
            updated_at,
            row,
        });
    }
}

/// The sink the store hands each row to: the row heads, written as they come.
struct Reading {
    config: Arc<Config>,
    models: ModelLookups,
    heads: Heads,
    with_messages: bool,
}

impl Reading {
    fn new(config: Arc<Config>, with_messages: bool, limit: usize) -> Self {
        // The seeded rows are 330–400 bytes and their keys 20–40: one allocation each for most
        // pages.
        Self {
            config,
            models: ModelLookups::default(),
            heads: Heads::with_capacity(limit.min(256)),
            with_messages,
        }
    }
}

impl EntrySink for Reading {
    fn entry(&mut self, e: &EntryView<'_>, transcript: Option<&str>) -> Result<(), StoreError> {
        let head = row_head(e, transcript, &self.config, &mut self.models);
        let heads = &mut self.heads;
        write_row_head(&mut heads.text, &head)
            .map_err(|err| StoreError::Backend(format!("could not write a listed row: {err}")))?;
        heads.end_row(e.key, (e.spawned_by.is_some(), e.updated_at, e.row));
        if self.with_messages {
            heads.session_ids.push(e.session_id.to_owned());
        }
        Ok(())
    }
}
