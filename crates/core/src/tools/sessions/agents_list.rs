//! `agents_list` (SPEC §7.5): the agent ids `sessions_spawn` accepts from the calling agent —
//! itself first, then its `subagents.allowAgents` (every configured agent when it holds `"*"`).
//! Allow-listed ids that are not configured are shown with `configured: false`. Each id comes
//! with the tools a sub-agent spawned as it may call. A session the access decision forbids to
//! spawn at all (a node session, a sub-agent) gets no ids: none would be accepted.

use std::sync::Arc;

use switchboard_protocol::session_tools::{AgentChoice, AgentsListParams, AgentsListResult};

use super::{Answer, SessionTools};
use crate::keys::{self, SessionKey};
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};

pub struct AgentsList(pub Arc<SessionTools>);

impl TypedTool for AgentsList {
    // No parameters; extra fields are ignored, only a non-object is an error.
    type Params = AgentsListParams;
    type Output = Answer<AgentsListResult>;

    fn name(&self) -> &'static str {
        "agents_list"
    }

    fn hints(&self) -> ToolHints {
        ToolHints::READS
    }

    fn description(&self) -> &'static str {
        "List the agent ids you may pass as agentId to sessions_spawn: yourself first, then the \
         agents you are allowed to spawn. `allowAny` is true when any configured agent is \
         allowed; `configured: false` marks an allowed id that has no configuration (it would \
         run on the defaults); `tools` names what a sub-agent spawned as that agent can call. \
         Takes no parameters."
    }

    async fn run(&self, ctx: &ToolContext, _: AgentsListParams) -> Self::Output {
        let mut result = self.agents(ctx, &ctx.caller().agent_id);
        if self.0.may_spawn(&self.0.requester(ctx)).is_err() {
            result.allow_any = false;
            result.agents.clear();
        }
        Answer::Done(result)
    }
}

impl AgentsList {
    fn agents(&self, ctx: &ToolContext, requester: &str) -> AgentsListResult {
        let config = &self.0.config;
        let agent = config.agent(requester);
        let configured_ids = config.agent_ids();
        let allow_any = agent.allow_agents.iter().any(|a| a.trim() == "*");
        let mut ids = vec![agent.id.clone()];
        let mut add = |id: String| {
            if !ids.contains(&id) {
                ids.push(id);
            }
        };
        for allowed in &agent.allow_agents {
            if allowed.trim() == "*" {
                configured_ids.iter().cloned().for_each(&mut add);
            } else if !allowed.trim().is_empty() {
                add(keys::normalize_agent_id(allowed));
            }
        }
        let agents = ids
            .into_iter()
            .map(|id| {
                let chosen = config.agent(&id);
                // What a sub-agent spawned as `id` is offered (any child key says so).
                let child = SessionKey::from_canonical(format!("agent:{id}:subagent:agents-list"));
                AgentChoice {
                    tools: ctx.tool_names(&child, &chosen),
                    name: chosen.name,
                    configured: configured_ids.contains(&id),
                    id,
                }
            })
            .collect();
        AgentsListResult {
            requester: agent.id,
            allow_any,
            agents,
        }
    }
}
