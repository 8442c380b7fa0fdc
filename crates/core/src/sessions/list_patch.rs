//! A kept `sessions.list` page brought up to date after writes, instead of read whole: the
//! store names the session rows its commits wrote since the page was read
//! ([`Store::sessions_touched`]); only those rows are read again, through the page's own
//! filters, and merged into the page where they now sort (newest first, then by key). A turn
//! writes one session, so a list after it reads one row, not two hundred.
//!
//! When the merge cannot know the page (rows left a page that had more after it, a page read at
//! an offset, a log that no longer reaches back), the page is read whole, as before.
//!
//! [`Store::sessions_touched`]: crate::store::Store::sessions_touched

use std::cmp::Reverse;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Sessions;
use super::list_text::Heads;
use crate::error::CoreResult;
use crate::keys::SessionKey;
use crate::store::{Cursor, ListQuery};

/// More rows than this written since the page was read: the page is read whole.
const MOST: usize = 64;

/// Where a row sorts: newest first, then by key.
type Place<'a> = (Reverse<i64>, &'a str);

/// A row of a merged page: where it sorts, the page it comes from and its index there.
type Picked<'a> = (Place<'a>, &'a Heads, usize);

impl Sessions {
    /// The page kept for `asked` at an older store version, brought up to `version`; `None`
    /// when it must be read whole.
    pub(super) async fn patched(
        &self,
        asked: &(ListQuery, bool, bool),
        version: Option<u64>,
    ) -> CoreResult<Option<Arc<Heads>>> {
        let (query, with_messages, count) = asked;
        let Some(now) = version else { return Ok(None) };
        if query.offset > 0 {
            return Ok(None);
        }
        let Some((then, kept)) = (self.kept.lists).latest(asked) else {
            return Ok(None);
        };
        let touched = match self.store.sessions_touched(then, now) {
            Some(rows) if rows.len() <= MOST => rows,
            _ => return Ok(None),
        };
        if touched.is_empty() {
            return Ok(Some(kept));
        }
        let again = ListQuery {
            rows: touched.clone(),
            cursor: None,
            offset: 0,
            limit: touched.len(),
            ..query.clone()
        };
        let (fresh, _) = self.read_rows(again, *with_messages).await?;
        let Some(merged) = kept.patch(&touched, &fresh, query.cursor.as_ref(), query.limit) else {
            return Ok(None);
        };
        let Merged { mut heads, follows } = merged;
        let more = match follows {
            Follows::Known(more) => more,
            Follows::FillAfter(end) => self.fill(query, *with_messages, &mut heads, end).await?,
        };
        let last = heads.rows.len().checked_sub(1);
        heads.next_cursor = last.filter(|_| more).map(|i| heads.cursor(i).encode());
        heads.total = self.total(query, (heads.rows.len(), more), *count).await?;
        self.kept.patched.fetch_add(1, Ordering::Relaxed);
        Ok(Some(Arc::new(heads)))
    }

    /// Rows may have left `heads`: the rows after the old page's `end` fill it up to the
    /// query's limit. Returns whether more rows follow.
    async fn fill(
        &self,
        query: &ListQuery,
        with_messages: bool,
        heads: &mut Heads,
        end: Cursor,
    ) -> CoreResult<bool> {
        let need = query.limit.saturating_sub(heads.rows.len());
        let after = ListQuery {
            cursor: Some(end),
            offset: 0,
            limit: need.max(1),
            ..query.clone()
        };
        let (after, next) = self.read_rows(after, with_messages).await?;
        if need == 0 {
            return Ok(!after.rows.is_empty());
        }
        // A row written after the version asked for may be read twice: it is shown once.
        for i in 0..after.rows.len() {
            let shown = (0..heads.rows.len()).any(|j| heads.key(j) == after.key(i));
            if !shown {
                heads.push_row(&after, i);
            }
        }
        Ok(next.is_some())
    }
}

/// A kept page with the rows written since merged in ([`Heads::patch`]).
pub(super) struct Merged {
    /// The page's rows, at most its limit; no cursor and no total yet.
    heads: Heads,
    follows: Follows,
}

/// Whether more rows follow a merged page.
enum Follows {
    Known(bool),
    /// Only the rows after where the old page ended (more followed it) can tell; they also
    /// fill the page when rows left it.
    FillAfter(Cursor),
}

impl Heads {
    fn place(&self, i: usize) -> Place<'_> {
        (Reverse(self.rows[i].updated_at), self.key(i))
    }

    fn cursor(&self, i: usize) -> Cursor {
        Cursor {
            updated_at: self.rows[i].updated_at,
            key: SessionKey::from_canonical(self.key(i).to_owned()),
        }
    }

    /// Adds `from`'s row `i`.
    fn push_row(&mut self, from: &Heads, i: usize) {
        let row = &from.rows[i];
        self.push(
            from.head(i),
            from.key(i),
            (row.parent, row.updated_at, row.row),
        );
        if let Some(id) = from.session_ids.get(i) {
            self.session_ids.push(id.clone());
        }
    }

    /// This page (read at a version before the writes of `touched`, the sorted store rows they
    /// wrote) with `fresh` (those rows as the page's filters read them now, in any order)
    /// merged in: the rows after `cursor`, at most `limit`. `None` when the page cannot be
    /// known without reading it whole. This page's rows must be in page order (newest first,
    /// then by the key's bytes), as both stores read them and as every merge leaves them: the
    /// written rows are merged into them, not sorted with them.
    pub(super) fn patch(
        &self,
        touched: &[i64],
        fresh: &Heads,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Option<Merged> {
        debug_assert!(
            (1..self.rows.len()).all(|i| self.place(i - 1) < self.place(i)),
            "a kept page out of page order"
        );
        let was_touched = |row: i64| touched.binary_search(&row).is_ok();
        let first: Option<Place<'_>> = cursor.map(|c| (Reverse(c.updated_at), c.key.as_str()));
        // A page that had more after it covers the rows up to its last one only.
        let end = match (self.next_cursor.is_some(), self.rows.len()) {
            (false, _) => None,
            (true, 0) => return None,
            (true, n) => Some(n - 1),
        };
        let end_place = end.map(|i| self.place(i));
        let mut on_page = 0;
        let mut beyond = false;
        let mut news: Vec<Picked<'_>> = Vec::with_capacity(fresh.rows.len());
        for j in 0..fresh.rows.len() {
            let place = fresh.place(j);
            if first.is_some_and(|first| place <= first) {
                continue;
            }
            match end_place.is_some_and(|end| place > end) {
                true => beyond = true,
                false => news.push((place, fresh, j)),
            }
        }
        news.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // The page's own rows are in page order already: the few written ones are merged in.
        let mut news = news.into_iter().peekable();
        let mut picked: Vec<Picked<'_>> = Vec::with_capacity(self.rows.len() + news.len());
        for i in 0..self.rows.len() {
            if was_touched(self.rows[i].row) {
                on_page += 1;
                continue;
            }
            let place = self.place(i);
            while let Some(new) = news.next_if(|new| new.0 < place) {
                picked.push(new);
            }
            picked.push((place, self, i));
        }
        picked.extend(news);
        let follows = match end {
            None => Follows::Known(picked.len() > limit),
            Some(_) if picked.len() > limit => Follows::Known(true),
            // Rows after the page that no write touched are still after it; a row a write
            // touched that is not on the page now may have been the only one.
            Some(_) if picked.len() == limit && (beyond || on_page == touched.len()) => {
                Follows::Known(true)
            }
            Some(i) => Follows::FillAfter(self.cursor(i)),
        };
        picked.truncate(limit);
        let mut heads = Heads::with_capacity(picked.len());
        for &(_, from, i) in &picked {
            heads.push_row(from, i);
        }
        Some(Merged { heads, follows })
    }
}
