//! `agents_list` (SPEC §7.5): the agent ids `sessions_spawn` accepts from the calling agent —
//! itself first, then its `subagents.allowAgents` (every configured agent when it holds `"*"`).
//! Allow-listed ids that are not configured are shown with `configured: false`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::resolve;
use crate::keys;
use crate::tools::{Tool, ToolContext, ToolFuture, ToolOutput, parse_args};

pub struct AgentsList;

// No parameters.
#[derive(Debug, Deserialize, JsonSchema)]
struct Params {}

impl Tool for AgentsList {
    fn name(&self) -> &str {
        "agents_list"
    }

    fn description(&self) -> &str {
        "List the agent ids you may pass as agentId to sessions_spawn: yourself first, then the \
         agents you are allowed to spawn. `allowAny` is true when any configured agent is \
         allowed; `configured: false` marks an allowed id that has no configuration (it would \
         run on the defaults). Takes no parameters."
    }

    fn parameters(&self) -> Value {
        resolve::schema::<Params>()
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            // Extra fields are ignored; only a non-object is an error.
            if let Err(message) = parse_args::<Params>(self, arguments) {
                return resolve::error(message);
            }
            ToolOutput::ok(agents(ctx))
        })
    }
}

fn agents(ctx: &ToolContext) -> Value {
    let config = ctx.engine.config();
    let requester = resolve::caller_agent(ctx);
    let agent = config.agent(&requester);
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
    let agents: Vec<Value> = ids
        .into_iter()
        .map(|id| {
            let resolved = config.agent(&id);
            let mut row = json!({"id": id, "configured": configured_ids.contains(&id)});
            if let (Some(name), Value::Object(map)) = (resolved.name, &mut row) {
                map.insert("name".into(), Value::from(name));
            }
            row
        })
        .collect();
    json!({"requester": agent.id, "allowAny": allow_any, "agents": agents})
}
