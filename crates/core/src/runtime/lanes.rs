//! Global lanes bound how many runs execute at once (SPEC §6.3): `main`, `nested`
//! (agent-to-agent steps), `subagent`, `cron`, each a semaphore sized from the config.
//!
//! No deadlock by construction: a run holds its lane permit only while it computes. When it
//! waits on another run (a tool such as `sessions_send` with a wait), [`LeaseHolder::while_waiting`]
//! hands the permit back for the length of the wait and takes one again afterwards, so the run it
//! waits on can always be scheduled, whatever the lane sizes.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

use crate::config::Config;

/// Which lane a run executes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    Main,
    Nested,
    Subagent,
    Cron,
}

impl Lane {
    pub const ALL: [Lane; 4] = [Lane::Main, Lane::Nested, Lane::Subagent, Lane::Cron];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Main => "main",
            Self::Nested => "nested",
            Self::Subagent => "subagent",
            Self::Cron => "cron",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|lane| lane.as_str() == s)
    }
}

/// The four semaphores.
pub struct Lanes {
    main: Arc<Semaphore>,
    nested: Arc<Semaphore>,
    subagent: Arc<Semaphore>,
    cron: Arc<Semaphore>,
}

impl Lanes {
    /// `main` and `nested` take `agents.defaults.maxConcurrent`, `subagent`
    /// `agents.defaults.subagents.maxConcurrent`, `cron` `cron.maxConcurrentRuns`.
    pub fn from_config(config: &Config) -> Self {
        let [main, nested, subagent, cron] =
            Self::sizes(config).map(|(_, n)| Arc::new(Semaphore::new(n)));
        Self {
            main,
            nested,
            subagent,
            cron,
        }
    }

    /// How many runs each lane lets compute at once, in [`Lane::ALL`]'s order.
    pub fn sizes(config: &Config) -> [(Lane, usize); 4] {
        let size = |n: u64| n.clamp(1, 4096) as usize;
        let defaults = &config.agents.defaults;
        [
            (Lane::Main, size(u64::from(defaults.max_concurrent))),
            (Lane::Nested, size(u64::from(defaults.max_concurrent))),
            (
                Lane::Subagent,
                size(u64::from(defaults.subagents.max_concurrent)),
            ),
            (Lane::Cron, size(u64::from(config.cron.max_concurrent_runs))),
        ]
    }

    fn semaphore(&self, lane: Lane) -> &Arc<Semaphore> {
        match lane {
            Lane::Main => &self.main,
            Lane::Nested => &self.nested,
            Lane::Subagent => &self.subagent,
            Lane::Cron => &self.cron,
        }
    }

    /// Waits for a slot on `lane`; the returned holder keeps it while the run computes.
    pub async fn lease(&self, lane: Lane) -> LeaseHolder {
        let semaphore = self.semaphore(lane).clone();
        let permit = acquire(&semaphore, lane).await;
        LeaseHolder {
            semaphore,
            lane,
            permit: Arc::new(Mutex::new(permit)),
        }
    }

    /// A slot on `lane` if one is free now (a run that can start at once); `None` when full.
    /// Its (zero) wait is recorded by the run once it starts with it: a run that gives the
    /// slot back (its session busy elsewhere) and queues waits once, as it really does.
    pub fn try_lease(&self, lane: Lane) -> Option<LeaseHolder> {
        let semaphore = self.semaphore(lane).clone();
        let permit = semaphore.clone().try_acquire_owned().ok()?;
        let slot = Slot {
            _permit: permit,
            _busy: crate::measure::lane_taken(lane.as_str()),
        };
        Some(LeaseHolder {
            semaphore,
            lane,
            permit: Arc::new(Mutex::new(Some(slot))),
        })
    }
}

/// A lane's permit, measured: the run counts as busy on its lane while it holds one.
struct Slot {
    _permit: OwnedSemaphorePermit,
    _busy: crate::measure::LaneSlot,
}

async fn acquire(semaphore: &Arc<Semaphore>, lane: Lane) -> Option<Slot> {
    let waiting = crate::measure::lane_asked(lane.as_str());
    // The semaphores are never closed, so this only fails if that changes; a run then goes on
    // without a permit rather than failing.
    let permit = semaphore.clone().acquire_owned().await.ok()?;
    Some(Slot {
        _permit: permit,
        _busy: waiting.granted(),
    })
}

/// A run's lane slot, shared with its tool calls so that a waiting tool can hand it back.
#[derive(Clone)]
pub struct LeaseHolder {
    semaphore: Arc<Semaphore>,
    lane: Lane,
    permit: Arc<Mutex<Option<Slot>>>,
}

impl LeaseHolder {
    /// Runs `wait` without holding the lane slot, then takes a slot again.
    pub async fn while_waiting<F: Future>(&self, wait: F) -> F::Output {
        drop(self.permit.lock().await.take());
        let output = wait.await;
        let permit = acquire(&self.semaphore, self.lane).await;
        *self.permit.lock().await = permit;
        output
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiting_hands_the_slot_back() {
        let mut config = Config::default();
        config.agents.defaults.max_concurrent = 1;
        let lanes = Lanes::from_config(&config);
        let first = lanes.lease(Lane::Main).await;
        // While the first run waits, a second run can take the only slot and finish.
        let second = first
            .while_waiting(async {
                let second = lanes.lease(Lane::Main).await;
                drop(second);
                "done"
            })
            .await;
        assert_eq!(second, "done");
        assert_eq!(
            lanes.main.available_permits(),
            0,
            "the first run holds its slot again"
        );
        drop(first);
        assert_eq!(lanes.main.available_permits(), 1);
    }

    #[tokio::test]
    async fn a_slot_now_only_when_one_is_free() {
        let mut config = Config::default();
        config.agents.defaults.max_concurrent = 1;
        let lanes = Lanes::from_config(&config);
        let first = lanes.try_lease(Lane::Main).expect("the lane is free");
        assert!(lanes.try_lease(Lane::Main).is_none(), "the lane is full");
        drop(first);
        assert!(lanes.try_lease(Lane::Main).is_some(), "free again");
    }
}
