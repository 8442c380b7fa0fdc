//! The answers of the reference's methods for features this gateway does not have, in the
//! reference's shapes for an empty state: no approvals wait, no questions, tasks, branches or
//! progress cards, no voice. The reference's clients call them on every load; an error there
//! made the Control UI retry (`question.list` seven times) and log 13 failures, where the
//! reference shows an empty list.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::overview::ModelInfo;

/// Methods answered with an empty state, each with its answer's type in [`EmptyState`].
pub const METHODS: &[&str] = &[
    "update.status",
    "exec.approval.list",
    "plugin.approval.list",
    "openclaw.approval.list",
    "question.list",
    "tasks.list",
    "models.authStatus",
    "talk.catalog",
    "progressCard.get",
    "chat.metadata",
    "sessions.branches.list",
    "sessions.companion.state",
    "sessions.observer.visibility",
    "wake",
    "last-heartbeat",
    "node.list",
    "node.pair.list",
    "device.pair.list",
    "plugins.list",
    "usage.status",
    "skills.status",
    "diagnostics.stability",
    "doctor.memory.status",
];

/// `update.status`: no update is known (switchboard updates with the package it came from).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStatusResult {
    /// Always `null`: no update is staged.
    pub sentinel: Option<Value>,
    /// Always `null`: nothing is checked.
    pub update_available: Option<Value>,
    /// `stable`.
    pub effective_channel: String,
    pub schedule: UpdateSchedule,
}

/// When updates would be checked: never automatically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateSchedule {
    pub channel: String,
    pub auto_enabled: bool,
}

/// `question.list`: `{questions: []}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct QuestionListResult {
    pub questions: Vec<Value>,
}

/// `tasks.list`: `{tasks: []}` (background work shows as sessions here).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TasksListResult {
    pub tasks: Vec<Value>,
}

/// `sessions.branches.list`: `{branches: []}` (a transcript here has one line).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BranchesListResult {
    pub branches: Vec<Value>,
}

/// `sessions.companion.state`: `{exchanges: []}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CompanionStateResult {
    pub exchanges: Vec<Value>,
}

/// `progressCard.get`: `{card: null}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProgressCardResult {
    pub card: Option<Value>,
}

/// `sessions.observer.visibility`: `{ok: true}` (nothing changes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OkResult {
    pub ok: bool,
}

/// `models.authStatus`: providers authenticate with the keys in the config; none is listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelsAuthStatusResult {
    pub ts: i64,
    pub providers: Vec<Value>,
    pub provider_capabilities: Vec<Value>,
}

/// `talk.catalog`: no voice modes, transports or providers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TalkCatalogResult {
    pub modes: Vec<String>,
    pub transports: Vec<String>,
    pub brains: Vec<String>,
    pub speech: TalkProviders,
    pub transcription: TalkProviders,
    pub realtime: TalkProviders,
}

/// A voice feature's providers: none, not ready.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TalkProviders {
    pub ready: bool,
    pub providers: Vec<Value>,
}

/// `chat.metadata`: the models a chat may pick (as `models.list`), no slash commands listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatMetadataResult {
    pub models: Vec<ModelInfo>,
    pub commands: Vec<Value>,
}

/// `node.list`: `{ts, nodes: []}` (`openclaw nodes status` prints "Known: 0"; nodes connect
/// here as sessions of role `node`, listed by `sessions.list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeListResult {
    pub ts: i64,
    pub nodes: Vec<Value>,
}

/// `node.pair.list` and `device.pair.list`: no node or device waits or is paired (clients
/// connect with the gateway token; `openclaw nodes list` prints `Pending: 0 · Paired: 0`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PairsResult {
    pub pending: Vec<Value>,
    pub paired: Vec<Value>,
}

/// `plugins.list`: no plugins, and none to install (the Control UI hides its install actions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginsListResult {
    pub plugins: Vec<Value>,
    pub diagnostics: Vec<Value>,
    pub mutation_allowed: bool,
    pub generation: u64,
}

/// `usage.status`: the providers' own quota windows; no provider this gateway speaks to
/// reports them (the Usage page's figures come from `sessions.usage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageStatusResult {
    pub updated_at: i64,
    pub providers: Vec<Value>,
}

/// `skills.status`: `{skills: []}` (`openclaw skills list` prints "No skills found.").
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SkillsStatusResult {
    pub skills: Vec<Value>,
}

/// `diagnostics.stability`: no stability events are recorded (the reference's ring buffer of
/// queue, session and memory events); `openclaw gateway stability` prints "Events: 0/0".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StabilityResult {
    pub capacity: u64,
    pub count: u64,
    pub dropped: u64,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    pub events: Vec<Value>,
    pub summary: StabilitySummary,
}

/// The events by type: none.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StabilitySummary {
    pub by_type: std::collections::BTreeMap<String, u64>,
}

/// `doctor.memory.status`: there is no memory search here, so nothing was checked (`openclaw
/// doctor` then says nothing of the gateway's memory probe, as for the reference with memory
/// search off).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryStatusResult {
    pub embedding: EmbeddingStatus,
}

/// The embedding probe: not checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingStatus {
    pub ok: bool,
    pub checked: bool,
    pub error: String,
}

/// One answer of [`METHODS`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EmptyState {
    UpdateStatus(UpdateStatusResult),
    /// The three approval lists: `[]`.
    Approvals(Vec<Value>),
    Questions(QuestionListResult),
    Tasks(TasksListResult),
    ModelsAuthStatus(ModelsAuthStatusResult),
    TalkCatalog(TalkCatalogResult),
    ProgressCard(ProgressCardResult),
    ChatMetadata(ChatMetadataResult),
    Branches(BranchesListResult),
    Companion(CompanionStateResult),
    Ok(OkResult),
    Nodes(NodeListResult),
    Pairs(PairsResult),
    Plugins(PluginsListResult),
    UsageStatus(UsageStatusResult),
    Skills(SkillsStatusResult),
    Stability(StabilityResult),
    Memory(MemoryStatusResult),
    /// `last-heartbeat`: `null` (no heartbeat ran).
    Nothing(Option<Value>),
}

impl EmptyState {
    /// The answer of `method` (one of [`METHODS`]) at `ts`, with the gateway's `models`.
    pub fn of(method: &str, ts: i64, models: Vec<ModelInfo>) -> Option<Self> {
        Some(match method {
            "update.status" => Self::UpdateStatus(UpdateStatusResult {
                sentinel: None,
                update_available: None,
                effective_channel: "stable".into(),
                schedule: UpdateSchedule {
                    channel: "stable".into(),
                    auto_enabled: false,
                },
            }),
            "exec.approval.list" | "plugin.approval.list" | "openclaw.approval.list" => {
                Self::Approvals(Vec::new())
            }
            "question.list" => Self::Questions(QuestionListResult::default()),
            "tasks.list" => Self::Tasks(TasksListResult::default()),
            "models.authStatus" => Self::ModelsAuthStatus(ModelsAuthStatusResult {
                ts,
                providers: Vec::new(),
                provider_capabilities: Vec::new(),
            }),
            "talk.catalog" => Self::TalkCatalog(TalkCatalogResult::default()),
            "progressCard.get" => Self::ProgressCard(ProgressCardResult::default()),
            "chat.metadata" => Self::ChatMetadata(ChatMetadataResult {
                models,
                commands: Vec::new(),
            }),
            "sessions.branches.list" => Self::Branches(BranchesListResult::default()),
            "sessions.companion.state" => Self::Companion(CompanionStateResult::default()),
            // `wake` (`openclaw system event`): accepted; no heartbeat turn runs here.
            "sessions.observer.visibility" | "wake" => Self::Ok(OkResult { ok: true }),
            "last-heartbeat" => Self::Nothing(None),
            "node.list" => Self::Nodes(NodeListResult {
                ts,
                nodes: Vec::new(),
            }),
            "node.pair.list" | "device.pair.list" => Self::Pairs(PairsResult::default()),
            "plugins.list" => Self::Plugins(PluginsListResult {
                plugins: Vec::new(),
                diagnostics: Vec::new(),
                mutation_allowed: false,
                generation: 0,
            }),
            "usage.status" => Self::UsageStatus(UsageStatusResult {
                updated_at: ts,
                providers: Vec::new(),
            }),
            "skills.status" => Self::Skills(SkillsStatusResult::default()),
            "diagnostics.stability" => Self::Stability(StabilityResult {
                capacity: 0,
                count: 0,
                dropped: 0,
                first_seq: None,
                last_seq: None,
                events: Vec::new(),
                summary: StabilitySummary::default(),
            }),
            "doctor.memory.status" => Self::Memory(MemoryStatusResult {
                embedding: EmbeddingStatus {
                    ok: false,
                    checked: false,
                    error: "switchboard has no memory search".into(),
                },
            }),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_method_has_the_references_empty_answer() {
        let answers: Vec<Value> = METHODS
            .iter()
            .map(|m| serde_json::to_value(EmptyState::of(m, 7, Vec::new()).unwrap()).unwrap())
            .collect();
        let none = json!({"ready": false, "providers": []});
        assert_eq!(
            answers,
            vec![
                json!({"sentinel": null, "updateAvailable": null, "effectiveChannel": "stable",
                    "schedule": {"channel": "stable", "autoEnabled": false}}),
                json!([]),
                json!([]),
                json!([]),
                json!({"questions": []}),
                json!({"tasks": []}),
                json!({"ts": 7, "providers": [], "providerCapabilities": []}),
                json!({"modes": [], "transports": [], "brains": [], "speech": none,
                    "transcription": none, "realtime": none}),
                json!({"card": null}),
                json!({"models": [], "commands": []}),
                json!({"branches": []}),
                json!({"exchanges": []}),
                json!({"ok": true}),
                json!({"ok": true}),
                json!(null),
                json!({"ts": 7, "nodes": []}),
                json!({"pending": [], "paired": []}),
                json!({"pending": [], "paired": []}),
                json!({"plugins": [], "diagnostics": [], "mutationAllowed": false,
                    "generation": 0}),
                json!({"updatedAt": 7, "providers": []}),
                json!({"skills": []}),
                json!({"capacity": 0, "count": 0, "dropped": 0, "firstSeq": null,
                    "lastSeq": null, "events": [], "summary": {"byType": {}}}),
                json!({"embedding": {"ok": false, "checked": false,
                    "error": "switchboard has no memory search"}}),
            ]
        );
        assert_eq!(EmptyState::of("nodes.list", 7, Vec::new()), None);
    }
}
