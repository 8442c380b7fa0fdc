//! Durable sub-agent records (SPEC §7.4): what was spawned, by whom, and how far its announce
//! got, so a restart resumes every unfinished announce and none is sent twice.

use crate::ids::RunId;
use crate::keys::SessionKey;

/// How far a sub-agent's life has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubagentState {
    /// The child's run has not ended (or its end was not seen yet).
    Running,
    /// The child ended (`outcome` set); the announce step and its delivery are next.
    Announcing,
    /// The announce was handed to the outbox (or skipped); cleanup is next.
    Announced,
    /// Nothing left to do but archiving a kept child at `archive_at`.
    Done,
}

impl SubagentState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Announcing => "announcing",
            Self::Announced => "announced",
            Self::Done => "done",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Self::Running,
            "announcing" => Self::Announcing,
            "announced" => Self::Announced,
            "done" => Self::Done,
            _ => return None,
        })
    }
}

/// One spawned sub-agent.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentRecord {
    /// `agent:<agentId>:subagent:<uuid>`.
    pub child_key: SessionKey,
    pub requester_key: SessionKey,
    /// The child's task run.
    pub run_id: RunId,
    pub task: String,
    pub label: Option<String>,
    /// `provider/model` the child runs on.
    pub model: String,
    /// Remove the child after its announce (`delete`) instead of archiving it later (`keep`).
    pub delete_after: bool,
    pub state: SubagentState,
    /// The task run's final status (`ok`, `error`, `timeout`, `aborted`) once it ended.
    pub outcome: Option<String>,
    /// The W3C `traceparent` of the span that made it; its own spans continue that trace
    /// (SPEC §10b). `None` with traces off.
    pub trace: Option<String>,
    /// Where the message that made the requester spawn it came from (its chat's route): the
    /// announce goes there. `None`: from no chat (the terminal, the web page, cron, a hook), so
    /// the announce goes into the requester session itself — never to a chat the session
    /// happened to use last.
    pub origin: Option<switchboard_protocol::sessions::DeliveryContext>,
    pub created_at: i64,
    pub ended_at: Option<i64>,
    /// The announce's outbox record, once made.
    pub delivery_id: Option<String>,
    /// When a kept child leaves the lists (finish + `archiveAfterMinutes`).
    pub archive_at: Option<i64>,
    pub archived_at: Option<i64>,
    /// The ownership epoch its driver holds it under (SPEC §4.3): an update commits only while
    /// the stored record still carries it. `0` on a store of one gateway.
    pub epoch: i64,
}
