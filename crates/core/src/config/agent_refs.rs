//! Settings that bind a door to an agent must name a configured one (SPEC §12): a webhook
//! account or a chat bot bound to `ghost` would otherwise answer on the defaults of an agent
//! nobody configured. (`subagents.allowAgents` may name an agent not configured — SPEC's own
//! example does; `sessions_spawn` refuses it when asked.)

use super::Config;
use super::chat::ChatSection;
use super::error::push_key;
use super::validate::Checker;
use crate::keys::normalize_agent_id;

impl Checker<'_> {
    /// Every agent a setting names is in `agents.list` (or is `main`, with no list).
    pub(super) fn agent_refs(&mut self, config: &Config) {
        let known = config.agent_ids();
        let check = |checker: &mut Self, path: String, named: &str| {
            if !known.contains(&normalize_agent_id(named)) {
                checker.invalid(
                    path,
                    format!("{named:?}"),
                    format!("a configured agent ({})", known.join(", ")),
                );
            }
        };
        for (id, account) in &config.channels.webhook.accounts {
            if let Some(agent) = &account.agent_id {
                let path = format!("{}.agentId", push_key("channels.webhook.accounts", id));
                check(self, path, agent);
            }
        }
        let channels = &config.channels;
        let chats = [
            ("telegram", bound(&channels.telegram)),
            ("discord", bound(&channels.discord)),
            ("slack", bound(&channels.slack)),
            ("whatsapp", bound(&channels.whatsapp)),
            ("signal", bound(&channels.signal)),
            ("matrix", bound(&channels.matrix)),
        ];
        for (name, (agent, accounts)) in chats {
            if let Some(agent) = agent {
                check(self, format!("channels.{name}.agentId"), agent);
            }
            for (id, agent) in accounts.into_iter().filter_map(|(i, a)| Some((i, a?))) {
                let path = push_key(&format!("channels.{name}.accounts"), id);
                check(self, format!("{path}.agentId"), agent);
            }
        }
    }
}

/// A chat channel's agent, and its accounts with the agent each names.
type Bound<'a> = (Option<&'a String>, Vec<(&'a String, Option<&'a String>)>);

fn bound<P>(section: &ChatSection<P>) -> Bound<'_> {
    let accounts = section.accounts.iter();
    let accounts = accounts.map(|(id, account)| (id, account.agent_id.as_ref()));
    (section.agent_id.as_ref(), accounts.collect())
}
