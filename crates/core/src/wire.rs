//! The protocol's names for the engine's states, in one place: each record's enum as the wire
//! shows it. The engine keeps its own enums (the store reads them from rows, the runtime and the
//! components decide on them); these conversions are total, so nothing on the way out is
//! spelled as a string.

use switchboard_protocol::agents::StoreState as WireStoreState;
use switchboard_protocol::delivery::DeliveryStatus as WireDeliveryStatus;
use switchboard_protocol::exchanges::ExchangeState as WireExchangeState;
use switchboard_protocol::runs::{RunState, RunStatus as WireRunStatus};
use switchboard_protocol::sessions::{
    SessionKind as WireSessionKind, SubagentState as WireSubagentState,
};

use crate::keys::SessionKind;
use crate::store::{DeliveryStatus, ExchangeState, RunStatus, StoreState, SubagentState};

impl From<RunStatus> for WireRunStatus {
    fn from(status: RunStatus) -> Self {
        match status {
            RunStatus::Queued => Self::Queued,
            RunStatus::Running => Self::Running,
            RunStatus::Ok => Self::Ok,
            RunStatus::Error => Self::Error,
            RunStatus::Timeout => Self::Timeout,
            RunStatus::Aborted => Self::Aborted,
        }
    }
}

/// Where a live run stands; `None` once it ended.
pub fn run_state(status: RunStatus) -> Option<RunState> {
    match status {
        RunStatus::Queued => Some(RunState::Queued),
        RunStatus::Running => Some(RunState::Running),
        RunStatus::Ok | RunStatus::Error | RunStatus::Timeout | RunStatus::Aborted => None,
    }
}

impl From<ExchangeState> for WireExchangeState {
    fn from(state: ExchangeState) -> Self {
        match state {
            ExchangeState::Primary => Self::Primary,
            ExchangeState::Replying => Self::Replying,
            ExchangeState::Announcing => Self::Announcing,
            ExchangeState::Done => Self::Done,
            ExchangeState::Failed => Self::Failed,
        }
    }
}

impl From<SubagentState> for WireSubagentState {
    fn from(state: SubagentState) -> Self {
        match state {
            SubagentState::Running => Self::Running,
            SubagentState::Announcing => Self::Announcing,
            SubagentState::Announced => Self::Announced,
            SubagentState::Done => Self::Done,
        }
    }
}

impl From<SessionKind> for WireSessionKind {
    fn from(kind: SessionKind) -> Self {
        match kind {
            SessionKind::Main => Self::Main,
            SessionKind::Group => Self::Group,
            SessionKind::Cron => Self::Cron,
            SessionKind::Hook => Self::Hook,
            SessionKind::Node => Self::Node,
            SessionKind::Other => Self::Other,
        }
    }
}

impl From<DeliveryStatus> for WireDeliveryStatus {
    fn from(status: DeliveryStatus) -> Self {
        match status {
            DeliveryStatus::Pending => Self::Pending,
            DeliveryStatus::Delivered => Self::Delivered,
            DeliveryStatus::Failed => Self::Failed,
            DeliveryStatus::Denied => Self::Denied,
            DeliveryStatus::Recorded => Self::Recorded,
        }
    }
}

impl From<StoreState> for WireStoreState {
    fn from(state: StoreState) -> Self {
        match state {
            StoreState::Ok => Self::Ok,
            StoreState::Degraded => Self::Degraded,
            StoreState::Unreachable => Self::Unreachable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value's JSON string.
    fn name<T: serde::Serialize>(value: T) -> String {
        serde_json::to_value(value)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// Each engine state and its wire name are spelled alike (the protocol's names are pinned
    /// in its wire tests; the engine's are what the store writes).
    #[test]
    fn the_wire_names_are_the_engines() {
        for s in [
            RunStatus::Queued,
            RunStatus::Running,
            RunStatus::Ok,
            RunStatus::Error,
            RunStatus::Timeout,
            RunStatus::Aborted,
        ] {
            assert_eq!(name(WireRunStatus::from(s)), s.as_str());
        }
        for s in [
            ExchangeState::Primary,
            ExchangeState::Replying,
            ExchangeState::Announcing,
            ExchangeState::Done,
            ExchangeState::Failed,
        ] {
            assert_eq!(name(WireExchangeState::from(s)), s.as_str());
        }
        for s in [
            SubagentState::Running,
            SubagentState::Announcing,
            SubagentState::Announced,
            SubagentState::Done,
        ] {
            assert_eq!(name(WireSubagentState::from(s)), s.as_str());
        }
        for s in [
            SessionKind::Main,
            SessionKind::Group,
            SessionKind::Cron,
            SessionKind::Hook,
            SessionKind::Node,
            SessionKind::Other,
        ] {
            assert_eq!(name(WireSessionKind::from(s)), s.as_str());
        }
        for s in DeliveryStatus::ALL {
            assert_eq!(name(WireDeliveryStatus::from(s)), s.as_str());
        }
        for s in [
            StoreState::Ok,
            StoreState::Degraded,
            StoreState::Unreachable,
        ] {
            assert_eq!(name(WireStoreState::from(s)), s.as_str());
        }
    }
}
