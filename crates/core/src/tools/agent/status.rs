//! `session_status`: the calling session as it stands — its model, tokens and context, cost,
//! where its replies go, whether its commands are sandboxed, its workspace, and the time.

use std::sync::Arc;

use switchboard_protocol::agent_tools::{SessionStatus, SessionStatusParams};
use switchboard_protocol::session_tools::ToolFailure;

use super::AgentTools;
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::tools::Answer;

pub struct SessionStatusTool(pub Arc<AgentTools>);

impl TypedTool for SessionStatusTool {
    type Params = SessionStatusParams;
    type Output = Answer<SessionStatus>;

    fn name(&self) -> &'static str {
        "session_status"
    }

    fn hints(&self) -> ToolHints {
        ToolHints::READS
    }

    fn description(&self) -> &'static str {
        "Your session's status: its key, model, tokens used and context size, cost, where \
         replies go, whether your commands run in the sandbox, your workspace, and the current \
         time (UTC). Takes no parameters."
    }

    async fn run(&self, ctx: &ToolContext, _: SessionStatusParams) -> Self::Output {
        let caller = ctx.caller();
        let entry = match ctx.store().get(&caller.session_key).await {
            Ok(Some(entry)) => entry,
            Ok(None) => {
                return Answer::Failed(ToolFailure::error("this session is not stored yet"));
            }
            Err(e) => return Answer::Failed(ToolFailure::error(e.to_string())),
        };
        let config = &self.0.config;
        let agent = config.agent(&entry.agent_id);
        let model = entry.model.clone().unwrap_or_else(|| agent.model.clone());
        let route = entry.delivery_context.as_ref();
        let time = chrono::DateTime::from_timestamp_millis(ctx.now_ms())
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_default();
        let workspace = crate::tools::fs::workspace_path(&self.0.home, config, &entry.agent_id);
        Answer::Done(SessionStatus {
            session_key: entry.key.display().to_string(),
            sandboxed: crate::access::is_sandboxed(config, &entry.agent_id, entry.key.as_str()),
            context_window: config.context_window(&model),
            session_id: entry.session_id,
            agent_id: entry.agent_id,
            thinking_level: entry
                .thinking_level
                .or(Some(agent.thinking_level.as_str().to_string())),
            workspace: workspace.display().to_string(),
            input_tokens: entry.input_tokens,
            output_tokens: entry.output_tokens,
            total_tokens: entry.total_tokens,
            context_tokens: entry.context_tokens,
            messages: entry.last_seq,
            cost_usd: entry.cost_usd,
            channel: route.map(|r| r.channel.clone()),
            to: route.map(|r| r.to.clone()),
            model,
            time,
        })
    }
}
