//! `tools.invoke` and `tools.list`: delegations to the tool invoker (SPEC §5.3). When the caller
//! goes away (`gone`), a waiting tool stops waiting as its timeout would; the run it waits for
//! goes on.

use switchboard_core::Engine;
use switchboard_protocol::tools::{ToolsInvokeParams, ToolsListParams};
use tokio_util::sync::CancellationToken;

use super::{MethodResult, answer};

pub async fn invoke(
    engine: &Engine,
    p: ToolsInvokeParams,
    gone: &CancellationToken,
) -> MethodResult {
    answer(engine.tools().invoke(p, gone.clone()).await)
}

pub async fn list(engine: &Engine, p: ToolsListParams) -> MethodResult {
    answer(engine.tools().list(p).await)
}
