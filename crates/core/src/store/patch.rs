//! How an [`EntryPatch`] changes a stored entry: the same on every store.

use switchboard_protocol::sessions::Patch;

use super::{EntryPatch, SessionEntry, StoreError};

impl EntryPatch {
    /// Merges the changed fields into `e` (the caller stamps `updated_at` and writes it).
    /// `spawnedBy` is set once: changing or clearing it is a `Conflict`.
    pub(crate) fn apply(&self, e: &mut SessionEntry) -> Result<(), StoreError> {
        let key = e.key.as_str();
        if let (Patch::Set(parent), Some(current)) = (&self.spawned_by, &e.spawned_by)
            && current != parent
        {
            return Err(StoreError::Conflict(format!(
                "spawnedBy of {key} is already {current}; it is set once and never changed"
            )));
        }
        if matches!(self.spawned_by, Patch::Clear) && e.spawned_by.is_some() {
            return Err(StoreError::Conflict(format!(
                "spawnedBy of {key} cannot be cleared"
            )));
        }
        set(&mut e.label, &self.label);
        set(&mut e.display_name, &self.display_name);
        set(&mut e.model, &self.model);
        set(&mut e.thinking_level, &self.thinking_level);
        set(&mut e.verbose_level, &self.verbose_level);
        set(&mut e.send_policy, &self.send_policy);
        set(&mut e.spawned_by, &self.spawned_by);
        set(&mut e.channel, &self.channel);
        set(&mut e.last_channel, &self.last_channel);
        set(&mut e.last_to, &self.last_to);
        set(&mut e.last_account_id, &self.last_account_id);
        set(&mut e.last_thread_id, &self.last_thread_id);
        set(&mut e.delivery_context, &self.delivery_context);
        set(&mut e.context_tokens, &self.context_tokens);
        set(&mut e.archived_at, &self.archived_at);
        set(&mut e.last_model, &self.last_model);
        if let Some(v) = self.system_sent {
            e.system_sent = v;
        }
        if let Some(v) = self.aborted_last_run {
            e.aborted_last_run = v;
        }
        if let Some(d) = self.add_tokens {
            e.input_tokens += d.input;
            e.output_tokens += d.output;
            e.total_tokens += d.input + d.output;
        }
        if let Some(usd) = self.add_cost {
            e.cost_usd += usd;
        }
        Ok(())
    }
}

fn set<T: Clone>(field: &mut Option<T>, patch: &Patch<T>) {
    match patch {
        Patch::Keep => {}
        Patch::Clear => *field = None,
        Patch::Set(v) => *field = Some(v.clone()),
    }
}
