//! `POST /hooks/agent` (SPEC §9.3): a turn in `hook:<uuid>` (or the session the hook names),
//! behind the hook token.

use switchboard_protocol::inbound::{HookAgentParams, InboundAccepted};
use switchboard_protocol::message::Provenance;

use super::inbound::{Inbound, accepted};
use super::webhook;
use crate::error::{CoreError, CoreResult};
use crate::keys::SessionKey;
use crate::runtime::RunRequest;
use crate::runtime::lanes::Lane;
use crate::sessions::submit_checked;
use crate::store::SessionEntry;

pub(super) const HOOK_EXPECTED: &str =
    "expected a JSON object {\"message\": string, \"sessionKey\"?: string, \"agentId\"?: string}";

impl Inbound {
    /// Checks the hook token and the body, then starts the run. Errors, in the order they are
    /// checked: `NotFound` (hooks are off), `Unauthorized` (token), `TooLarge`, `Invalid` (body,
    /// agent, key), `Forbidden` (send policy).
    pub async fn hook(&self, token: Option<&str>, body: &[u8]) -> CoreResult<InboundAccepted> {
        self.check_hook_token(token)?;
        self.check_size(body)?;
        let payload: HookAgentParams = webhook::parse_body(body, HOOK_EXPECTED)?;
        if payload.message.trim().is_empty() {
            return Err(CoreError::invalid(
                "message: must not be empty (the text the agent runs on)",
            ));
        }
        let key = self.hook_key(&payload)?;
        let build = |entry: Option<SessionEntry>| {
            let provenance = Provenance {
                kind: "hook".into(),
                ..Provenance::default()
            };
            let mut request = RunRequest::new(key.clone(), Lane::Main)
                .with_message(payload.message.clone(), Some(provenance));
            request.create = Some(self.resolver.new_session(&key));
            request.entry = entry.map(Box::new);
            Ok(request)
        };
        let run = submit_checked(&self.resolver, &self.runtime, &key, build).await?;
        Ok(accepted(run))
    }

    /// The checks of [`Inbound::hook`] before the body (`NotFound`: hooks are off,
    /// `Unauthorized`: the token), so the HTTP door can refuse a stranger before it reads it.
    pub fn check_hook_token(&self, token: Option<&str>) -> CoreResult<()> {
        let hooks = &self.config.hooks;
        if !hooks.enabled {
            return Err(CoreError::NotFound(
                "hooks are off (set hooks.enabled to true)".into(),
            ));
        }
        let expected = hooks.token.as_deref().unwrap_or_default();
        match token {
            None => Err(CoreError::Unauthorized(
                "missing token: send Authorization: Bearer <hooks.token>".into(),
            )),
            Some(given) if !crate::access::token_matches(expected, given) => {
                Err(CoreError::Unauthorized("wrong hook token".into()))
            }
            Some(_) => Ok(()),
        }
    }

    /// The key given (canonical for the hook's agent), else a new `hook:<uuid>`.
    fn hook_key(&self, payload: &HookAgentParams) -> CoreResult<SessionKey> {
        // With no agents configured, the default agent is the one there is.
        let agent = match payload.agent_id.as_deref() {
            Some(raw) => self.resolver.known_agent(raw).map_err(|_| {
                CoreError::Invalid(format!(
                    "agentId: {raw:?} is not a configured agent (configured: {})",
                    self.config.agent_ids().join(", ")
                ))
            })?,
            None => self.config.default_agent_id(),
        };
        match payload.session_key.as_deref().map(str::trim) {
            Some(given) if !given.is_empty() => self
                .resolver
                .canonical(given, Some(&agent))
                .map_err(|e| CoreError::Invalid(format!("sessionKey: {e}")))
                .and_then(|key| self.resolver.configured_key(key)),
            _ => Ok(SessionKey::from_canonical(format!(
                "agent:{agent}:hook:{}",
                uuid::Uuid::new_v4()
            ))),
        }
    }
}
