//! `exchanges.list` and `exchanges.get`: the agent-to-agent exchanges `sessions_send` started
//! (SPEC §7.3) — how far each reply-back loop and announce step got, and why one failed.

use serde::{Deserialize, Serialize};

use crate::lenient;

/// `exchanges.list`: exchanges, newest first.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExchangesListParams {
    /// Only exchanges this session took part in, as requester or target (a key in any
    /// accepted form).
    pub session_key: Option<String>,
    /// Default 50, at most 500.
    #[serde(deserialize_with = "lenient::opt_positive")]
    pub limit: Option<i64>,
}

/// `exchanges.get`: one exchange by its id (the `runId` a `sessions_send` answered).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExchangesGetParams {
    pub id: String,
}

wire_names! {
    /// Where an exchange stands: `primary`, `replying`, `announcing` (pending), then `done` or
    /// `failed`.
    pub enum ExchangeState {
        Primary = "primary",
        Replying = "replying",
        Announcing = "announcing",
        Done = "done",
        Failed = "failed",
    }
}

/// One exchange.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeInfo {
    /// The primary run's id.
    pub id: String,
    pub requester_key: String,
    pub target_key: String,
    /// `primary`, `replying`, `announcing` (pending), `done` or `failed`.
    pub state: ExchangeState,
    /// Reply-back turns finished so far.
    pub turn: u32,
    /// The run of the current (or last) step.
    pub step_run_id: String,
    /// Starts of the current step (a step the gateway's stop cut off runs again).
    pub attempt: u32,
    /// Why it failed, or how it ended (`announced`, or silent by `ANNOUNCE_SKIP`).
    pub detail: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The answer of `exchanges.list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExchangesListResult {
    pub exchanges: Vec<ExchangeInfo>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_support::round_trip;

    #[test]
    fn an_exchange_row_names_its_state_and_why() {
        let row = ExchangeInfo {
            id: "r1".into(),
            requester_key: "agent:main:main".into(),
            target_key: "agent:main:peer".into(),
            state: ExchangeState::Failed,
            turn: 1,
            step_run_id: "r3".into(),
            attempt: 1,
            detail: Some("reply turn 2 ended error: boom".into()),
            created_at: 1,
            updated_at: 2,
        };
        round_trip(
            ExchangesListResult {
                exchanges: vec![row],
            },
            json!({"exchanges": [{
                "id": "r1", "requesterKey": "agent:main:main", "targetKey": "agent:main:peer",
                "state": "failed", "turn": 1, "stepRunId": "r3", "attempt": 1,
                "detail": "reply turn 2 ended error: boom", "createdAt": 1, "updatedAt": 2,
            }]}),
        );
    }
}
