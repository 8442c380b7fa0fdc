//! A listed entry read in place: an [`EntryView`] borrows its text from the row the store is
//! reading, and an [`EntrySink`] takes each entry of a list page as it is read
//! ([`SessionReads::list_into`](super::SessionReads::list_into)). A page that is written out as
//! text at once (`sessions.list`) so builds no entry and no string a column.

use std::any::Any;

use switchboard_protocol::sessions::DeliveryContext;

use super::{SessionEntry, StoreError};
use crate::keys::{ChatType, SessionKey, SessionKind};

/// [`SessionEntry`]'s fields, the text borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryView<'a> {
    /// Canonical.
    pub key: &'a str,
    pub session_id: &'a str,
    pub agent_id: &'a str,
    pub kind: SessionKind,
    pub created_at: i64,
    pub updated_at: i64,
    pub channel: Option<&'a str>,
    pub chat_type: Option<ChatType>,
    pub display_name: Option<&'a str>,
    pub label: Option<&'a str>,
    /// Canonical.
    pub spawned_by: Option<&'a str>,
    pub model: Option<&'a str>,
    pub thinking_level: Option<&'a str>,
    pub verbose_level: Option<&'a str>,
    pub system_sent: bool,
    pub aborted_last_run: bool,
    pub send_policy: Option<&'a str>,
    pub last_channel: Option<&'a str>,
    pub last_to: Option<&'a str>,
    pub last_account_id: Option<&'a str>,
    pub last_thread_id: Option<&'a str>,
    /// Decoded (a rare field: most sessions have none).
    pub delivery_context: Option<DeliveryContext>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub context_tokens: Option<u64>,
    pub archived_at: Option<i64>,
    pub last_seq: i64,
    pub last_model: Option<&'a str>,
    pub cost_usd: f64,
    /// The row's place in its table, when a list read it from a store that names rows
    /// ([`ListQuery::rows`](super::ListQuery::rows)); 0 otherwise.
    pub row: i64,
}

impl SessionEntry {
    /// The entry as a view of itself.
    pub fn view(&self) -> EntryView<'_> {
        EntryView {
            key: self.key.as_str(),
            session_id: &self.session_id,
            agent_id: &self.agent_id,
            kind: self.kind,
            created_at: self.created_at,
            updated_at: self.updated_at,
            channel: self.channel.as_deref(),
            chat_type: self.chat_type,
            display_name: self.display_name.as_deref(),
            label: self.label.as_deref(),
            spawned_by: self.spawned_by.as_deref(),
            model: self.model.as_deref(),
            thinking_level: self.thinking_level.as_deref(),
            verbose_level: self.verbose_level.as_deref(),
            system_sent: self.system_sent,
            aborted_last_run: self.aborted_last_run,
            send_policy: self.send_policy.as_deref(),
            last_channel: self.last_channel.as_deref(),
            last_to: self.last_to.as_deref(),
            last_account_id: self.last_account_id.as_deref(),
            last_thread_id: self.last_thread_id.as_deref(),
            delivery_context: self.delivery_context.clone(),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            total_tokens: self.total_tokens,
            context_tokens: self.context_tokens,
            archived_at: self.archived_at,
            last_seq: self.last_seq,
            last_model: self.last_model.as_deref(),
            cost_usd: self.cost_usd,
            row: 0,
        }
    }
}

impl EntryView<'_> {
    /// The entry, its text copied.
    pub fn into_entry(self) -> SessionEntry {
        let owned = |s: Option<&str>| s.map(str::to_owned);
        SessionEntry {
            key: SessionKey::from_canonical(self.key.to_owned()),
            session_id: self.session_id.to_owned(),
            agent_id: self.agent_id.to_owned(),
            kind: self.kind,
            created_at: self.created_at,
            updated_at: self.updated_at,
            channel: owned(self.channel),
            chat_type: self.chat_type,
            display_name: owned(self.display_name),
            label: owned(self.label),
            spawned_by: owned(self.spawned_by).map(SessionKey::from_canonical),
            model: owned(self.model),
            thinking_level: owned(self.thinking_level),
            verbose_level: owned(self.verbose_level),
            system_sent: self.system_sent,
            aborted_last_run: self.aborted_last_run,
            send_policy: owned(self.send_policy),
            last_channel: owned(self.last_channel),
            last_to: owned(self.last_to),
            last_account_id: owned(self.last_account_id),
            last_thread_id: owned(self.last_thread_id),
            delivery_context: self.delivery_context,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            total_tokens: self.total_tokens,
            context_tokens: self.context_tokens,
            archived_at: self.archived_at,
            last_seq: self.last_seq,
            last_model: owned(self.last_model),
            cost_usd: self.cost_usd,
        }
    }
}

/// Takes the entries of a list page as the store reads them, on the thread that reads them.
/// The store hands the sink back when the page is read (a caller gets its own type back with
/// `Box<dyn Any>::downcast`).
pub trait EntrySink: Any + Send {
    /// The page's next entry, and where its transcript is mirrored (`None` when the store keeps
    /// no mirror). What no list row shows may be left out: `last_seq` is 0 (as in
    /// [`super::ListPage`]), and a store may leave `total_tokens` 0 and `last_account_id` and
    /// `last_thread_id` `None`.
    fn entry(&mut self, entry: &EntryView<'_>, transcript: Option<&str>) -> Result<(), StoreError>;
}
