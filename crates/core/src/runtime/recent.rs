//! The last runs that ended on this gateway, final records with their results.
//!
//! A fast turn often ends before its client's `agent.wait` arrives (`chat.send` answers as the
//! run starts, and a `builtin/echo` turn takes well under a millisecond): the wait would then
//! read the run back from the store, one statement a turn on PostgreSQL. A final record never
//! changes, so the copy kept here is the stored one; only the last few are kept, so memory does
//! not grow with runs, and only those with a small result: a burst of large replies must not
//! stay in memory after it (a wait for one of them reads the store).

use std::collections::{HashMap, VecDeque};

use crate::ids::RunId;
use crate::store::RunRecord;

/// How many ended runs are kept.
const KEPT: usize = 64;
/// The longest result kept (bytes of its result and error): 64 records stay under 4 MB.
const LARGEST: usize = 64 << 10;

#[derive(Default)]
pub(super) struct RecentRuns {
    /// Oldest first.
    order: VecDeque<RunId>,
    records: HashMap<RunId, RunRecord>,
}

impl RecentRuns {
    /// Keeps `record` (final) unless its result is over [`LARGEST`], forgetting the oldest
    /// beyond [`KEPT`].
    pub(super) fn keep(&mut self, record: &RunRecord) {
        let size = |text: &Option<String>| text.as_ref().map_or(0, String::len);
        if size(&record.result) + size(&record.error) > LARGEST {
            return;
        }
        if self
            .records
            .insert(record.run_id.clone(), record.clone())
            .is_none()
        {
            self.order.push_back(record.run_id.clone());
        }
        while self.order.len() > KEPT {
            if let Some(oldest) = self.order.pop_front() {
                self.records.remove(&oldest);
            }
        }
    }

    /// The final record of `run_id`, when it ended here lately.
    pub(super) fn get(&self, run_id: &RunId) -> Option<RunRecord> {
        self.records.get(run_id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::SessionKey;
    use crate::store::RunStatus;

    fn ended(n: usize) -> RunRecord {
        RunRecord {
            run_id: RunId::from_string(format!("r-{n}")),
            session_key: SessionKey::from_canonical("agent:main:main".to_string()),
            session_id: Some("s".into()),
            status: RunStatus::Ok,
            lane: "main".into(),
            created_at: 1,
            started_at: Some(2),
            ended_at: Some(3),
            result: Some(format!("reply {n}")),
            error: None,
            idempotency_key: None,
            model: None,
            cost_usd: None,
            epoch: 0,
        }
    }

    #[test]
    fn the_last_runs_are_kept_with_their_results_and_older_ones_forgotten() {
        let mut recent = RecentRuns::default();
        for n in 0..KEPT + 10 {
            recent.keep(&ended(n));
        }
        // Kept again: counted once.
        recent.keep(&ended(KEPT + 9));
        assert_eq!(recent.order.len(), KEPT);
        assert_eq!(recent.records.len(), KEPT);
        assert!(recent.get(&RunId::from_string("r-9")).is_none());
        let last = recent.get(&RunId::from_string(format!("r-{}", KEPT + 9)));
        assert_eq!(
            last.and_then(|r| r.result),
            Some(format!("reply {}", KEPT + 9))
        );
        assert!(recent.get(&RunId::from_string("r-10")).is_some());
    }

    #[test]
    fn a_large_result_is_not_kept() {
        let mut recent = RecentRuns::default();
        let mut large = ended(1);
        large.result = Some("x".repeat(LARGEST + 1));
        recent.keep(&large);
        assert!(recent.get(&large.run_id).is_none());
        assert!(recent.order.is_empty());
        large.result = Some("x".repeat(LARGEST));
        recent.keep(&large);
        assert!(recent.get(&large.run_id).is_some());
    }
}
