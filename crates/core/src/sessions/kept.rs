//! Pages kept after they were read. Clients ask for the same `sessions.list` and `chat.history`
//! page again and again: the Control UI lists after every event, and a chat view reads its
//! history again after each turn. While nothing was written, the store would answer the same
//! rows.
//!
//! A kept page is answered only while the store's version ([`Store::version`]) is still the one
//! it was read at. Every commit moves the version on before its write is answered, so no request
//! sees a page older than a write it was told of. A store that others write too (PostgreSQL)
//! has no version, and nothing is kept. What a page shows of the session *now* (its runs, in
//! memory) is never kept: it is added to each answer.
//!
//! [`Store::version`]: crate::store::Store::version

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};

use super::list_text::Heads;
use crate::store::ListQuery;

/// Pages kept per kind of request: the few a client or two go back to.
const KEPT: usize = 8;
/// A page larger than this is not kept (a long history page of big tool results).
const LARGEST: usize = 1 << 20;

/// The pages the sessions component keeps.
pub(super) struct Pages {
    /// `sessions.list`: by the store query and whether rows show their last messages.
    pub(super) lists: Kept<(ListQuery, bool, bool), Heads>,
    /// `chat.history`'s JSON text: by the key as asked, `limit` and `before`.
    pub(super) histories: Kept<(String, Option<i64>, Option<i64>), String>,
    /// `sessions.list` pages brought up to date from the rows written since they were read
    /// (`list_patch.rs`), not read whole.
    pub(super) patched: AtomicU64,
}

impl Pages {
    pub(super) fn new() -> Self {
        Self {
            lists: Kept::new(),
            histories: Kept::new(),
            patched: AtomicU64::new(0),
        }
    }
}

/// The last few pages read, by what was asked (`K`), each with the version it was read at.
pub(super) struct Kept<K, V> {
    pages: Mutex<VecDeque<Page<K, V>>>,
}

struct Page<K, V> {
    key: K,
    version: u64,
    value: Arc<V>,
}

impl<K: PartialEq, V> Kept<K, V> {
    pub(super) fn new() -> Self {
        Self {
            pages: Mutex::new(VecDeque::with_capacity(KEPT)),
        }
    }

    /// The page kept for `key` at `version`, or the page `read` makes, then kept. `version` is
    /// the store's version taken *before* `read` starts (the caller passes
    /// `store.version()` as the argument): a page read after it is at least that new, so it
    /// is kept under that version, never a newer one.
    pub(super) async fn get_or_read<E>(
        &self,
        key: K,
        version: Option<u64>,
        read: impl AsyncFnOnce(&K) -> Result<V, E>,
        bytes: impl Fn(&V) -> usize,
    ) -> Result<Arc<V>, E> {
        if let Some(page) = self.get(&key, version) {
            return Ok(page);
        }
        let page = Arc::new(read(&key).await?);
        let size = bytes(&page);
        self.keep(key, version, page.clone(), size);
        Ok(page)
    }

    /// The page kept for `key`, when it was read at `version` (the store's version now).
    pub(super) fn get(&self, key: &K, version: Option<u64>) -> Option<Arc<V>> {
        let version = version?;
        let pages = self.pages.lock().unwrap_or_else(PoisonError::into_inner);
        pages
            .iter()
            .find(|page| page.version == version && page.key == *key)
            .map(|page| page.value.clone())
    }

    /// The page kept for `key` whatever the version it was read at, with that version.
    pub(super) fn latest(&self, key: &K) -> Option<(u64, Arc<V>)> {
        let pages = self.pages.lock().unwrap_or_else(PoisonError::into_inner);
        (pages.iter())
            .find(|page| page.key == *key)
            .map(|page| (page.version, page.value.clone()))
    }

    /// Keeps `value` (`bytes` long), read for `key` at `version` (read *before* the page was),
    /// in place of the page kept for `key` before; the oldest page goes when [`KEPT`] are kept.
    /// A page of an older version is never answered as it is, but a list page can be brought
    /// up to date (`list_patch.rs`).
    pub(super) fn keep(&self, key: K, version: Option<u64>, value: Arc<V>, bytes: usize) {
        let Some(version) = version else { return };
        if bytes > LARGEST {
            return;
        }
        let mut pages = self.pages.lock().unwrap_or_else(PoisonError::into_inner);
        pages.retain(|page| page.key != key);
        if pages.len() == KEPT {
            pages.pop_front();
        }
        pages.push_back(Page {
            key,
            version,
            value,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_answered_only_at_the_version_it_was_read_at() {
        let kept: Kept<&str, u32> = Kept::new();
        kept.keep("a", Some(7), Arc::new(1), 10);
        assert_eq!(kept.get(&"a", Some(7)).as_deref(), Some(&1));
        assert_eq!(kept.get(&"b", Some(7)), None, "another request");
        assert_eq!(kept.get(&"a", Some(8)), None, "a write came after the read");
        assert_eq!(kept.get(&"a", None), None, "a store others write too");
        kept.keep("b", None, Arc::new(2), 10);
        assert_eq!(
            kept.get(&"b", None),
            None,
            "nothing is kept without a version"
        );
    }

    #[test]
    fn a_page_read_again_replaces_its_older_one_and_the_oldest_and_largest_go() {
        let kept: Kept<u32, u32> = Kept::new();
        kept.keep(1, Some(1), Arc::new(1), 10);
        kept.keep(2, Some(2), Arc::new(2), 10);
        assert_eq!(
            kept.get(&1, Some(2)),
            None,
            "version 1's page is not answered"
        );
        assert_eq!(
            kept.latest(&1).map(|(v, p)| (v, *p)),
            Some((1, 1)),
            "but kept"
        );
        kept.keep(1, Some(2), Arc::new(10), 10);
        assert_eq!(
            kept.latest(&1).map(|(v, p)| (v, *p)),
            Some((2, 10)),
            "replaced"
        );
        for key in 3..3 + KEPT as u32 {
            kept.keep(key, Some(2), Arc::new(key), 10);
        }
        assert_eq!(kept.get(&2, Some(2)), None, "the oldest went");
        assert_eq!(kept.get(&3, Some(2)).as_deref(), Some(&3));
        kept.keep(3, Some(2), Arc::new(30), 10);
        assert_eq!(
            kept.get(&3, Some(2)).as_deref(),
            Some(&30),
            "read again, replaced"
        );
        kept.keep(99, Some(2), Arc::new(99), LARGEST + 1);
        assert_eq!(kept.get(&99, Some(2)), None, "too large to keep");
    }
}
