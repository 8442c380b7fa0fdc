//! Sandbox visibility, cross-agent rules, sub-agent restrictions. (Being written.)

use super::{Decision, Denial, Operation, Requester, Target};
use crate::config::Config;

pub(super) fn decide(
    _config: &Config,
    requester: &Requester,
    target: Target<'_>,
    _op: Operation,
) -> Decision {
    if requester.agent_id == target.agent_id && !requester.sandboxed {
        Ok(())
    } else {
        Err(Denial {
            message: "access rules are being written".into(),
        })
    }
}

/// Whether `key` of `agent_id` is sandboxed under the config.
pub fn is_sandboxed(_config: &Config, _agent_id: &str, _key: &str) -> bool {
    false
}

/// The requester facts of a canonical session key.
pub fn requester(config: &Config, key: &str) -> Requester {
    let sk = crate::keys::SessionKey::from_canonical(key.to_string());
    let agent_id = sk
        .agent_id()
        .map(str::to_string)
        .unwrap_or_else(|| config.default_agent_id());
    Requester {
        key: key.to_string(),
        sandboxed: is_sandboxed(config, &agent_id, key),
        sees_all: false,
        is_subagent: sk.is_subagent(),
        agent_id,
    }
}
