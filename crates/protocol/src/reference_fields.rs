//! Fields the reference's own clients (its CLI, TUI and Control UI) may send that switchboard
//! accepts and does not use. The reference's protocol schema closes every params object
//! (`additionalProperties: false`), so its clients send nothing outside it; each field below is in
//! its schema (2026.7.35 or 2026.9.6) and has no counterpart here. [`crate::decode::params`] takes
//! them out before the params are read, so every other unknown field is refused (SPEC §12), and
//! docs/protocol.md lists them with the same reasons (a test keeps the two equal).
//!
//! A path is a field of the params (`deliver`), of an object in them (`client.instanceId`), or of
//! every object of an array in them (`attachments[].origin`).

use serde_json::{Map, Value};

/// The fields of one method accepted and not used, and why they have no effect here.
pub struct Accepted {
    pub method: &'static str,
    pub fields: &'static [&'static str],
    pub why: &'static str,
}

/// Every method's accepted-and-ignored fields.
pub const ACCEPTED: &[Accepted] = &[
    Accepted {
        method: "sessions.list",
        fields: &[
            "activeOnly",
            "requireLastInteraction",
            "sortBy",
            "includeGlobal",
            "includeUnknown",
            "excludeSubagents",
            "excludeCron",
            "excludeSystem",
            "configuredAgentsOnly",
            "includeDerivedTitles",
            "includeLastMessage",
            "includeActivitySummary",
            "projectId",
            "workspaceDir",
            "group",
            "pinned",
            "boardFace",
            "hasBoard",
            "creatorId",
            "ownerId",
            "ownerFirst",
            "involvingMe",
            "profileRelation",
            "involvingProfileId",
            "includePeople",
            "archived",
        ],
        why: "the Control UI's and CLI's list options (filters for boards, projects, owners, people and titles) that have no counterpart here: the list is answered unfiltered by them",
    },
    Accepted {
        method: "sessions.subscribe",
        fields: &[
            "limit",
            "offset",
            "activeMinutes",
            "activeOnly",
            "requireLastInteraction",
            "sortBy",
            "includeGlobal",
            "includeUnknown",
            "excludeSubagents",
            "excludeCron",
            "excludeSystem",
            "configuredAgentsOnly",
            "includeDerivedTitles",
            "includeLastMessage",
            "includeActivitySummary",
            "label",
            "projectId",
            "workspaceDir",
            "group",
            "pinned",
            "boardFace",
            "hasBoard",
            "creatorId",
            "ownerId",
            "ownerFirst",
            "involvingMe",
            "profileRelation",
            "involvingProfileId",
            "includePeople",
            "spawnedBy",
            "agentId",
            "search",
            "archived",
        ],
        why: "the reference reads this method's params as a list query; here a subscription is to keys (`sessionKeys`) or to every session (`all`)",
    },
    Accepted {
        method: "sessions.create",
        fields: &[
            "idempotencyKey",
            "titleSource",
            "category",
            "model",
            "agentRuntime",
            "contextWindow",
            "thinkingLevel",
            "fastMode",
            "permissionMode",
            "toolOverrides",
            "incognito",
            "visibility",
            "catalogId",
            "parentSessionKey",
            "spawnDepth",
            "fork",
            "forkFrom",
            "emitCommandHooks",
            "succeedsParent",
            "timeoutMs",
            "task",
            "message",
            "mentions",
            "attachments",
            "projectId",
            "projectGitUrl",
            "repository",
            "worktree",
            "worktreeSource",
            "worktreeBaseRef",
            "worktreeName",
            "execNode",
            "cwd",
        ],
        why: "the Control UI's new-chat composer and the TUI's /new options (fork, worktree, project, model runtime, first message): a session is created empty here, and its first message comes with `chat.send`",
    },
    Accepted {
        method: "sessions.resolve",
        fields: &[
            "reference",
            "shortId",
            "slugHint",
            "spawnedBy",
            "includeGlobal",
            "includeUnknown",
            "allowMissing",
        ],
        why: "the CLI's and TUI's lookup hints (`shortId`, `slugHint`, `allowMissing`, global and unknown buckets); here a reference is resolved by key, sessionId or label",
    },
    Accepted {
        method: "sessions.patch",
        fields: &[
            "expectedSessionId",
            "expectedLifecycleRevision",
            "expectedPermissionMode",
            "expectedSandboxMode",
            "expectedNativeRuntimeConsent",
            "expectedToolOverrides",
            "expectedMarkedUnreadAt",
            "autoLabel",
            "icon",
            "color",
            "category",
            "boardFace",
            "boardPresentation",
            "statusNote",
            "attention",
            "ttlMinutes",
            "archived",
            "pinned",
            "unread",
            "contextWindow",
            "fastMode",
            "toolOverrides",
            "traceLevel",
            "reasoningLevel",
            "responseUsage",
            "elevatedLevel",
            "execHost",
            "execSecurity",
            "execAsk",
            "execNode",
            "permissionMode",
            "sandboxMode",
            "nativeRuntimeConsent",
            "agentRuntime",
            "completionOwnerSessionKey",
            "inheritedToolPolicyVersion",
            "inheritedToolAllow",
            "inheritedToolDeny",
            "groupActivation",
            "spawnedWorkspaceDir",
            "spawnedCwd",
            "spawnDepth",
            "subagentRole",
            "subagentControlScope",
        ],
        why: "the TUI's slash-command settings and the Control UI's session decorations (pinned, unread, colours, board presentation, optimistic-concurrency guards `expected*`, exec and sandbox overrides) that switchboard does not keep per session",
    },
    Accepted {
        method: "sessions.reset",
        fields: &["reason", "expectedSessionId"],
        why: "a reset's reason and its optimistic-concurrency guard",
    },
    Accepted {
        method: "sessions.delete",
        fields: &[
            "deleteTranscript",
            "expectedSessionId",
            "expectedLifecycleRevision",
            "expectedSessionUpdatedAt",
            "emitLifecycleHooks",
            "archivedOnly",
        ],
        why: "delete options: the transcript is always kept (archived), lifecycle hooks do not exist here",
    },
    Accepted {
        method: "sessions.compact",
        fields: &["maxLines"],
        why: "`maxLines`: compaction here summarises everything but the newest turn",
    },
    Accepted {
        method: "chat.history",
        fields: &[
            "cursor",
            "maxBytes",
            "offset",
            "pendingBefore",
            "inputRunIds",
            "messageId",
            "sessionId",
            "maxChars",
        ],
        why: "the Control UI's paging by byte budget, offset and run ids: history here pages by `before` and `limit`",
    },
    Accepted {
        method: "chat.startup",
        fields: &[
            "cursor",
            "maxBytes",
            "offset",
            "pendingBefore",
            "inputRunIds",
            "messageId",
            "sessionId",
            "maxChars",
            "shortId",
            "slugHint",
        ],
        why: "as chat.history",
    },
    Accepted {
        method: "chat.inject",
        fields: &["label"],
        why: "`label`: an injected message carries no label here",
    },
    Accepted {
        method: "chat.send",
        fields: &[
            "sessionId",
            "mentions",
            "workContext",
            "intent",
            "thinking",
            "fastMode",
            "fastAutoOnSeconds",
            "queueMode",
            "deliver",
            "originatingChannel",
            "originatingTo",
            "originatingAccountId",
            "originatingThreadId",
            "replyToId",
            "toolBindings",
            "systemInputProvenance",
            "systemProvenanceReceipt",
            "suppressCommandInterpretation",
            "expectedLeafEntryId",
            "expectedSessionRoutingContract",
            "expectedPermissionMode",
            "expectedToolOverrides",
            "__controlUiReconnectResume",
            "attachments[].origin",
            "attachments[].sizeBytes",
            "attachments[].durationMs",
            "attachments[].width",
            "attachments[].height",
        ],
        why: "delivery, routing and provenance options of the reference's clients (`deliver`, `thinking`, `queueMode`, `mentions`, tool bindings, `expected*` guards): a chat.send here is answered in the web and client session, queued in its session's lane",
    },
    Accepted {
        method: "chat.abort",
        fields: &["preserveSideRuns"],
        why: "`preserveSideRuns`: there are no side runs here",
    },
    Accepted {
        method: "agent",
        fields: &[
            "provider",
            "replyTo",
            "expectedExistingSessionId",
            "thinking",
            "replyChannel",
            "replyAccountId",
            "threadId",
            "groupId",
            "groupChannel",
            "groupSpace",
            "bestEffortDeliver",
            "cwd",
            "cleanupBundleMcpOnRunEnd",
            "modelRun",
            "promptMode",
            "bootstrapContextMode",
            "bootstrapContextRunKind",
            "acpTurnSource",
            "internalRuntimeHandoffId",
            "internalExecutionIdentityRetry",
            "internalExecutionIdentityRecoveryAttempt",
            "execApprovalFollowupExpectedSessionId",
            "internalEvents",
            "inputProvenance",
            "suppressPromptPersistence",
            "sessionEffects",
            "sourceReplyDeliveryMode",
            "disableMessageTool",
            "swarmCollector",
            "swarmOutputSchema",
            "forceRestartSafeTools",
            "forceCodeModeTools",
            "voiceWakeTrigger",
            "attachments[].origin",
            "attachments[].sizeBytes",
            "attachments[].durationMs",
            "attachments[].width",
            "attachments[].height",
        ],
        why: "the CLI's reply-routing, runtime and provenance options of `openclaw agent` that have no counterpart here",
    },
    Accepted {
        method: "tools.invoke",
        fields: &[
            "agentId",
            "confirm",
            "idempotencyKey",
            "conversationReadOrigin",
        ],
        why: "`confirm`, `idempotencyKey` and the read origin: tools here run once per call and ask for approval through exec approvals",
    },
    Accepted {
        method: "send",
        fields: &[
            "mediaUrl",
            "mediaUrls",
            "buffer",
            "filename",
            "contentType",
            "asVoice",
            "gifPlayback",
            "agentId",
            "replyToId",
            "forceDocument",
            "silent",
            "parseMode",
            "sessionKey",
        ],
        why: "media and formatting options of `openclaw message send` (media URLs, voice, parse mode, silent): a send here is text",
    },
    Accepted {
        method: "cron.add",
        fields: &[
            "declarationKey",
            "displayName",
            "owner",
            "sessionKey",
            "description",
            "deleteAfterRun",
            "pacing",
            "trigger",
            "failureAlert",
        ],
        why: "job metadata of the reference (declaration key, owner, pacing, trigger, failure alert) not kept here",
    },
    Accepted {
        method: "cron.list",
        fields: &[
            "sessionKey",
            "sessionAgentId",
            "query",
            "enabled",
            "scheduleKind",
            "lastRunStatus",
            "trigger",
            "sortBy",
            "sortDir",
            "compact",
            "includeDeliveryPreviews",
        ],
        why: "the Control UI's filters and sorting: the list is answered whole, newest first",
    },
    Accepted {
        method: "cron.update",
        fields: &["expectedConfigRevision"],
        why: "`expectedConfigRevision`: there is no config revision here",
    },
    Accepted {
        method: "cron.run",
        fields: &["mode", "expectedProcessInstanceId"],
        why: "`mode` (`force` or `due`) and the process guard: a run asked for here always runs now",
    },
    Accepted {
        method: "sessions.describe",
        fields: &["includeDerivedTitles", "includeLastMessage"],
        why: "derived titles and last-message previews",
    },
    Accepted {
        method: "sessions.messages.subscribe",
        fields: &["agentId", "includeApprovals"],
        why: "`agentId` and approvals in the message stream",
    },
    Accepted {
        method: "sessions.messages.unsubscribe",
        fields: &["agentId"],
        why: "`agentId`",
    },
    Accepted {
        method: "connect",
        fields: &[
            "caps",
            "commands",
            "computerUse",
            "workerRuns",
            "permissions",
            "pathEnv",
            "modelCatalog",
            "device",
            "locale",
            "userAgent",
            "client.buildId",
            "client.deviceFamily",
            "client.modelIdentifier",
            "client.timeZone",
            "client.instanceId",
            "auth.bootstrapToken",
            "auth.deviceToken",
            "auth.approvalRuntimeToken",
            "auth.agentRuntimeIdentityToken",
        ],
        why: "client capabilities, device identity, permissions, locale and model catalogue the reference's clients announce; here a connection is authorised by its token alone",
    },
    Accepted {
        method: "channels.status",
        fields: &["probe", "timeoutMs", "channel"],
        why: "probe options: the status here is read, not probed",
    },
    Accepted {
        method: "models.list",
        fields: &[
            "agentId",
            "sessionKey",
            "authProfileId",
            "provider",
            "includeDetails",
            "includeProviderCapabilities",
            "includeDefaultModels",
            "preparedOnly",
            "refresh",
            "view",
        ],
        why: "catalogue views and provider options",
    },
    Accepted {
        method: "update.status",
        fields: &["refreshCheckout"],
        why: "`refreshCheckout`: there is no self-update here",
    },
    Accepted {
        method: "tasks.list",
        fields: &[
            "status",
            "agentId",
            "sessionKey",
            "limit",
            "cursor",
            "sortBy",
        ],
        why: "task filters: there are no background tasks here",
    },
    Accepted {
        method: "models.authStatus",
        fields: &["refresh", "agentId"],
        why: "refresh options",
    },
    Accepted {
        method: "talk.catalog",
        fields: &["provider", "model"],
        why: "provider and model filters",
    },
    Accepted {
        method: "progressCard.get",
        fields: &["sessionKey", "agentId"],
        why: "the session: there are no progress cards here",
    },
    Accepted {
        method: "chat.metadata",
        fields: &["agentId", "authProfileId", "sessionKey"],
        why: "the session and auth profile",
    },
    Accepted {
        method: "sessions.branches.list",
        fields: &["sessionKey", "agentId"],
        why: "the session: there are no branches here",
    },
    Accepted {
        method: "sessions.companion.state",
        fields: &["sessionKey", "agentId"],
        why: "the session",
    },
    Accepted {
        method: "sessions.observer.visibility",
        fields: &["visible"],
        why: "`visible`",
    },
    Accepted {
        method: "wake",
        fields: &["mode", "text", "sessionKey", "agentId"],
        why: "the wake-up text and target: `wake` is accepted and does nothing here",
    },
    Accepted {
        method: "skills.status",
        fields: &["agentId", "sessionKey"],
        why: "the session and agent: there are no skills here",
    },
];

/// `params` of `method` without the fields the reference's clients may send that are not used
/// here.
pub fn strip(method: &str, params: &mut Map<String, Value>) {
    let Some(accepted) = ACCEPTED.iter().find(|a| a.method == method) else {
        return;
    };
    // The params hold a few fields, the list many: each field given is looked up in the list,
    // and a nested path is followed only where its object was given.
    params.retain(|key, _| !accepted.fields.contains(&key.as_str()));
    for path in accepted.fields.iter().filter(|p| p.contains('.')) {
        let head = path.split(['.', '[']).next().unwrap_or_default();
        if params.contains_key(head) {
            remove(params, path);
        }
    }
}

/// Removes the field at `path` (`a`, `a.b`, `a[].b`) where it is.
fn remove(object: &mut Map<String, Value>, path: &str) {
    let Some((head, rest)) = path.split_once('.') else {
        object.remove(path);
        return;
    };
    match (
        head.strip_suffix("[]"),
        object.get_mut(head.trim_end_matches("[]")),
    ) {
        (Some(_), Some(Value::Array(items))) => {
            for item in items.iter_mut() {
                if let Value::Object(inner) = item {
                    remove(inner, rest);
                }
            }
        }
        (None, Some(Value::Object(inner))) => remove(inner, rest),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stripped(method: &str, params: Value) -> Value {
        let Value::Object(mut map) = params else {
            panic!("an object");
        };
        strip(method, &mut map);
        Value::Object(map)
    }

    #[test]
    fn the_references_fields_are_taken_out_and_nothing_else() {
        assert_eq!(
            stripped(
                "connect",
                json!({"caps": [], "client": {"id": "cli", "instanceId": "i"}, "auth": {"token": "t", "deviceToken": "d"}, "capz": 1})
            ),
            json!({"client": {"id": "cli"}, "auth": {"token": "t"}, "capz": 1})
        );
        assert_eq!(
            stripped(
                "chat.send",
                json!({"deliver": false, "attachments": [{"content": "x", "origin": "paste"}, 5]})
            ),
            json!({"attachments": [{"content": "x"}, 5]})
        );
        assert_eq!(
            stripped("no.such", json!({"deliver": 1})),
            json!({"deliver": 1})
        );
    }

    /// docs/protocol.md lists every accepted-and-ignored field with its reason.
    #[test]
    fn the_protocol_doc_lists_every_field_and_why() {
        let doc = include_str!("../../../docs/protocol.md");
        for accepted in ACCEPTED {
            let fields: Vec<String> = accepted.fields.iter().map(|f| format!("`{f}`")).collect();
            let row = format!(
                "| `{}` | {} | {} |",
                accepted.method,
                fields.join(", "),
                accepted.why
            );
            assert!(doc.contains(&row), "docs/protocol.md lacks the row:\n{row}");
        }
    }
}
