//! `tools.invoke` and `tools.list`: delegations to the tool invoker (SPEC §5.3); and
//! `exec.approvals.*`: the commands waiting for an operator (SPEC §6.5). When the caller
//! goes away (`gone`), a waiting tool stops waiting as its timeout would; the run it waits for
//! goes on.

use switchboard_core::Engine;
use switchboard_core::tools::exec::Decision;
use switchboard_protocol::exec_tools::{
    ApprovalDecideParams, ApprovalDecided, ApprovalsListResult,
};
use switchboard_protocol::tools::{ToolsInvokeParams, ToolsListParams};
use switchboard_protocol::{ErrorCode, ErrorShape};
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

/// `exec.approvals.list`: the commands waiting for an operator, oldest first.
pub fn approvals(engine: &Engine) -> MethodResult {
    let approvals = engine.approvals().list();
    super::to_value(ApprovalsListResult { approvals })
}

/// `exec.approvals.get`: the allowlist file (`exec-approvals.json`), as the reference's Control
/// UI reads it.
pub fn allowlist(engine: &Engine) -> MethodResult {
    Ok(engine.approvals().snapshot())
}

/// `exec.approvals.approve` (`approve: true`) and `exec.approvals.deny`.
pub fn decide(engine: &Engine, p: ApprovalDecideParams, approve: bool) -> MethodResult {
    let decision = match approve {
        true => Decision::Approve {
            always: p.allow_always,
        },
        false => Decision::Deny,
    };
    let decided = engine
        .approvals()
        .decide(p.id.trim(), decision)
        .map_err(|why| ErrorShape::new(ErrorCode::NotFound, why))?;
    super::to_value(ApprovalDecided {
        id: decided.id,
        decision: if approve { "approved" } else { "denied" }.into(),
        command: decided.command,
    })
}
