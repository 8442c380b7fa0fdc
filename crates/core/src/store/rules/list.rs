//! Listing sessions: every filter in the `WHERE` clause (so filters apply before the limit),
//! newest first then by key, one row more than the page to know whether another follows, and
//! the cursor of the last row.

use crate::keys::SessionKey;
use crate::store::dialect::{Dialect, Statement};
use crate::store::{Cursor, EntrySink, EntryView, ListPage, ListQuery, SessionEntry, StoreError};

use super::rows::ENTRY_COLUMNS;

/// The columns of a listed entry: [`ENTRY_COLUMNS`] without the transcript's end (0). No
/// reader of a list uses it, and reading it joined the transcripts: two more index searches a
/// row, about as much as the rest of the row.
fn list_columns() -> &'static str {
    static COLUMNS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    COLUMNS.get_or_init(|| ENTRY_COLUMNS.replace("t.last_seq", "CAST(0 AS BIGINT)"))
}

/// The columns of a listed row written out at once ([`crate::store::EntrySink`]): [`list_columns`]
/// without those no row shows (a constant costs no column read, in the database or out of it).
fn row_columns() -> &'static str {
    static COLUMNS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    COLUMNS.get_or_init(|| {
        list_columns()
            .replace("s.last_account_id", "CAST(NULL AS TEXT)")
            .replace("s.last_thread_id", "CAST(NULL AS TEXT)")
            .replace("s.total_tokens", "CAST(0 AS BIGINT)")
    })
}

/// The list's statement in dialect `d`: the filters, then the cursor and the limit.
pub(crate) fn statement(q: &ListQuery, d: Dialect) -> Statement {
    select(q, d, list_columns())
}

/// [`statement`] for rows handed to an [`crate::store::EntrySink`]: their `total_tokens`,
/// `last_account_id` and `last_thread_id` are not read (0 and `None`), and the row's place in
/// its table ([`Dialect::rowid`]) follows as the last column ([`ROW_COLUMN`]).
pub(crate) fn row_statement(q: &ListQuery, d: Dialect) -> Statement {
    select(q, d, &format!("{}, {}", row_columns(), d.rowid))
}

/// Where [`row_statement`]'s row place is.
pub(crate) const ROW_COLUMN: usize = 30;

/// How many rows [`statement`] would read over all pages (from the first).
pub(crate) fn count_statement(q: &ListQuery, d: Dialect) -> Statement {
    filtered(q, d, "count(*)")
}

fn select(q: &ListQuery, d: Dialect, columns: &str) -> Statement {
    let mut a = filtered(q, d, columns);
    if let Some(c) = &q.cursor {
        // Newest first, then by key: the rows after the cursor.
        let at = a.push(" AND (s.updated_at < ?", c.updated_at);
        let at = a.placeholder(at);
        a.sql
            .push_str(&format!(" OR (s.updated_at = {at} AND s.key > "));
        a.push("?))", c.key.as_str());
    }
    let limit = i64::try_from(q.limit).unwrap_or(i64::MAX - 1) + 1;
    a.push(" ORDER BY s.updated_at DESC, s.key ASC LIMIT ?", limit);
    if q.offset > 0 {
        a.push(" OFFSET ?", i64::try_from(q.offset).unwrap_or(i64::MAX));
    }
    a
}

/// The statement's `SELECT … WHERE` with every filter of `q`, no cursor, order or limit.
fn filtered(q: &ListQuery, d: Dialect, columns: &str) -> Statement {
    let mut a = Statement::new(
        d,
        format!("SELECT {columns} FROM sessions s WHERE {}", d.truth),
    );
    if !q.include_archived {
        a.sql.push_str(" AND s.archived_at IS NULL");
    }
    if let Some(agent) = &q.agent_id {
        a.push(" AND s.agent_id = ?", agent.clone());
    }
    if !q.kinds.is_empty() {
        let kinds = q.kinds.iter().map(|k| k.as_str().to_string()).collect();
        a.one_of("s.kind", kinds);
    }
    if let Some(since) = q.updated_since {
        a.push(" AND s.updated_at >= ?", since);
    }
    if let Some(parent) = &q.spawned_by {
        a.push(" AND s.spawned_by = ?", parent.as_str());
    }
    if let Some(label) = &q.label {
        a.push(" AND s.label = ?", label.clone());
    }
    if let Some(search) = q
        .search
        .as_deref()
        .map(str::to_lowercase)
        .filter(|s| !s.is_empty())
    {
        // Case-insensitive substring of key, label or display name; the three `?` are one
        // parameter.
        let (find, ifnull) = (d.find, d.ifnull);
        a.push(
            &format!(
                " AND ({find}(lower(s.key), ?) > 0 OR {find}(lower({ifnull}(s.label, '')), ?) > 0 \
                 OR {find}(lower({ifnull}(s.display_name, '')), ?) > 0)"
            ),
            search,
        );
    }
    a.none_of("s.key", q.exclude_keys.clone());
    if !q.rows.is_empty() {
        // Only SQLite names rows (`Store::sessions_touched`).
        a.sql.push_str(" AND s.rowid IN (");
        for (i, row) in q.rows.iter().enumerate() {
            a.push(if i == 0 { "?" } else { ", ?" }, *row);
        }
        a.sql.push(')');
    }
    a
}

/// The page of the statement's rows: at most `limit`, and the cursor of the last one when more
/// follow.
pub(crate) fn page(mut entries: Vec<SessionEntry>, limit: usize) -> ListPage {
    let next_cursor = if entries.len() > limit {
        entries.truncate(limit);
        entries.last().map(|e| Cursor {
            updated_at: e.updated_at,
            key: e.key.clone(),
        })
    } else {
        None
    };
    ListPage {
        entries,
        next_cursor,
    }
}

/// A page read into an [`EntrySink`] ([`crate::store::SessionReads::list_into`]): the
/// statement's rows are handed on until `limit`; the row after them only says that another page
/// follows, from the cursor of the last row handed on.
pub(crate) struct SinkPage {
    limit: usize,
    handed: usize,
    last: Option<Cursor>,
    more: bool,
}

impl SinkPage {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            handed: 0,
            last: None,
            more: false,
        }
    }

    /// Whether the page is full: the row read now is the one after it (not to be decoded).
    pub(crate) fn full(&mut self) -> bool {
        self.more = self.handed >= self.limit;
        self.more
    }

    /// Hands `entry` to `sink`.
    pub(crate) fn hand(
        &mut self,
        sink: &mut dyn EntrySink,
        entry: &EntryView<'_>,
        transcript: Option<&str>,
    ) -> Result<(), StoreError> {
        self.handed += 1;
        if self.handed == self.limit {
            self.last = Some(Cursor {
                updated_at: entry.updated_at,
                key: SessionKey::from_canonical(entry.key.to_owned()),
            });
        }
        sink.entry(entry, transcript)
    }

    /// The next page's cursor: `None` when no row followed the page.
    pub(crate) fn next_cursor(self) -> Option<Cursor> {
        self.last.filter(|_| self.more)
    }
}
