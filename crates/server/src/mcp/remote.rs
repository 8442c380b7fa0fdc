//! The remote invoker: a running gateway's `tools.list` / `tools.invoke` over the protocol
//! (used by `switchboard mcp --session KEY`). Each call opens its own connection, so calls run
//! side by side and a gateway restart between calls goes unnoticed.

use serde_json::Value;
use switchboard_core::runtime::tool::ToolOutput;
use switchboard_protocol::tools::{
    ToolDescriptor, ToolsInvokeParams, ToolsInvokeResult, ToolsListParams, ToolsListResult,
};
use switchboard_protocol::{ErrorCode, ErrorShape};
use tokio_util::sync::CancellationToken;

use super::Invoker;
use crate::client::{ClientError, GatewayClient};

/// Where the gateway is and how to prove who we are.
pub struct RemoteInvoker {
    url: String,
    token: Option<String>,
}

impl RemoteInvoker {
    pub fn new(url: impl Into<String>, token: Option<String>) -> Self {
        Self {
            url: url.into(),
            token,
        }
    }

    async fn connect(&self) -> Result<GatewayClient, ErrorShape> {
        GatewayClient::connect(&self.url, self.token.as_deref())
            .await
            .map_err(|e| self.unreachable(e))
    }

    /// A client failure as a gateway error: the gateway's own answers stay as they are.
    fn unreachable(&self, e: ClientError) -> ErrorShape {
        match e {
            ClientError::Gateway(shape) => shape,
            other => {
                // Only a refused connection asks whether the gateway runs.
                let hint = match &other {
                    ClientError::Connect { refused: true, .. } => {
                        "is `switchboard gateway` running? set --url/SWITCHBOARD_URL"
                    }
                    _ => "check --url/SWITCHBOARD_URL and --token/SWITCHBOARD_TOKEN",
                };
                ErrorShape::new(
                    ErrorCode::Unavailable,
                    format!(
                        "cannot reach the switchboard gateway at {}: {other} ({hint})",
                        self.url
                    ),
                )
            }
        }
    }
}

impl Invoker for RemoteInvoker {
    async fn list_tools(&self, session: &str) -> Result<Vec<ToolDescriptor>, ErrorShape> {
        let mut client = self.connect().await?;
        let params = ToolsListParams {
            session_key: Some(session.to_string()),
            agent_id: None,
        };
        let answer = client.request("tools.list", encode(&params)?).await;
        client.close().await;
        let listed: ToolsListResult =
            serde_json::from_value(answer.map_err(|e| self.unreachable(e))?).map_err(|e| {
                ErrorShape::new(
                    ErrorCode::Internal,
                    format!("the gateway's tools.list answer was not understood: {e}"),
                )
            })?;
        Ok(listed.tools)
    }

    async fn call_tool(
        &self,
        session: &str,
        tool: &str,
        args: Value,
        stop_waiting: CancellationToken,
    ) -> Result<ToolOutput, ErrorShape> {
        let mut client = self.connect().await?;
        let params = encode(&ToolsInvokeParams {
            session_key: session.to_string(),
            tool: tool.to_string(),
            args,
        })?;
        // Sent before anything may stop us: the gateway runs the call whatever happens here.
        let id = client
            .send_request("tools.invoke", params)
            .await
            .map_err(|e| self.unreachable(e))?;
        let answer = tokio::select! {
            answer = client.response(&id) => Some(answer),
            () = stop_waiting.cancelled() => None,
        };
        // Closing the connection also tells the gateway its caller is gone: a tool waiting there
        // stops waiting as its timeout would, and the run goes on.
        client.close().await;
        let Some(answer) = answer else {
            return Err(ErrorShape::new(
                ErrorCode::Unavailable,
                "the caller stopped waiting",
            ));
        };
        let answer = answer.map_err(|e| self.unreachable(e))?;
        let answer: ToolsInvokeResult = serde_json::from_value(answer).map_err(|e| {
            ErrorShape::new(
                ErrorCode::Internal,
                format!("the gateway's tools.invoke answer was not understood: {e}"),
            )
        })?;
        Ok(ToolOutput {
            is_error: !answer.ok,
            ..ToolOutput::ok(answer.result)
        })
    }
}

/// Params as they go on the wire.
fn encode<T: serde::Serialize>(params: &T) -> Result<Value, ErrorShape> {
    serde_json::to_value(params).map_err(|e| {
        ErrorShape::new(
            ErrorCode::Internal,
            format!("could not encode the request: {e}"),
        )
    })
}
