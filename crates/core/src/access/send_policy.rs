//! Send policy (SPEC §8.2). (Being written.)

use crate::config::Config;
use crate::store::SessionEntry;

/// May messages be sent into this session?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendDecision {
    Allow,
    /// Refused; the reason names the rule, the default or the session override.
    Deny {
        reason: String,
    },
}

/// The send policy for `entry` (or for a new session at `key`, when `entry` is `None`).
pub fn send_policy(_config: &Config, _key: &str, _entry: Option<&SessionEntry>) -> SendDecision {
    SendDecision::Allow
}
