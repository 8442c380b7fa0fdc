//! `message`: an agent sends a text to a chat on a connected channel. It goes through the
//! outbox like every delivery (retries, rate limits, parts), recorded for the calling session,
//! whose send policy decides whether it is sent (a denied one is recorded `denied` and said so).
//! The delivery is named by the tool call, so a call made again by a resumed run sends nothing
//! twice.

use std::sync::Arc;

use switchboard_protocol::agent_tools::{MessageParams, MessageQueued};
use switchboard_protocol::delivery::SendParams;
use switchboard_protocol::session_tools::ToolFailure;

use super::{AgentTools, failure};
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::tools::Answer;

pub struct Message(pub Arc<AgentTools>);

impl TypedTool for Message {
    type Params = MessageParams;
    type Output = Answer<MessageQueued>;

    fn name(&self) -> &'static str {
        "message"
    }

    fn hints(&self) -> ToolHints {
        ToolHints::ACTS
    }

    // Named by the tool call: the outbox keeps one delivery per key.
    fn repeatable(&self) -> bool {
        true
    }

    fn description(&self) -> &'static str {
        "Send a text to a chat on one of the gateway's channels: channel (telegram, discord, \
         slack, whatsapp, signal, matrix, webhook, …), to (the chat there), text. The message \
         is queued and sent with retries; your session's send policy may deny it."
    }

    async fn run(&self, ctx: &ToolContext, params: MessageParams) -> Self::Output {
        if let Some(action) = params.action.as_deref().filter(|a| *a != "send") {
            return Answer::Failed(ToolFailure::error(format!(
                "action {action:?} is not one message does; the only action is \"send\""
            )));
        }
        let caller = ctx.caller();
        let key = ctx
            .call_name("message")
            .unwrap_or_else(|| format!("invoke:{}", uuid::Uuid::new_v4()));
        let send = SendParams {
            channel: params.channel,
            to: params.to,
            account_id: params.account_id,
            thread_id: params.thread_id,
            message: params.text,
            idempotency_key: key,
        };
        let sent = self
            .0
            .outbox
            .send_from(send, caller.session_key.clone(), caller.run_id.clone())
            .await;
        match sent {
            Ok(info) => Answer::Done(MessageQueued {
                status: "ok".into(),
                delivery_id: info.id,
                delivery_status: info.status.to_string(),
                detail: info.detail,
            }),
            Err(e) => Answer::Failed(failure(e)),
        }
    }
}
