//! `chat.send`, `agent`, `agent.wait`, `chat.abort`: delegations to the sessions component.
//! `agent` answers twice under one request id: `accepted` (the interim), then the outcome.

use switchboard_core::Engine;
use switchboard_protocol::runs::{AgentParams, AgentWaitParams, ChatAbortParams, ChatSendParams};

use super::{Interim, MethodResult, answer, to_value};

/// `owner`: the caller has `operator.admin` (what `/send`, `/new` and `/reset` need).
pub async fn chat_send(engine: &Engine, p: ChatSendParams, owner: bool) -> MethodResult {
    answer(engine.sessions().chat_send(p, owner).await)
}

pub async fn agent(
    engine: &Engine,
    p: AgentParams,
    owner: bool,
    interim: Interim<'_>,
) -> MethodResult {
    let accepted = |a| {
        if let Ok(value) = to_value(a) {
            interim(value);
        }
    };
    answer(engine.sessions().agent(p, owner, accepted).await)
}

pub async fn agent_wait(engine: &Engine, p: AgentWaitParams) -> MethodResult {
    answer(engine.sessions().agent_wait(p).await)
}

pub async fn chat_abort(engine: &Engine, p: ChatAbortParams) -> MethodResult {
    answer(engine.sessions().chat_abort(p).await)
}
