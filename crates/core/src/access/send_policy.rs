//! Send policy (SPEC §8.2): may messages be sent into a session?
//!
//! [`send_policy`] is the one place this is decided; `chat.send`, `agent` (and so `sessions_send`,
//! reply-back steps and announces) and automatic reply delivery ask it. The algorithm:
//!
//! 1. The entry's own `sendPolicy` (`allow` / `deny`) wins.
//! 2. Otherwise, if any rule whose criteria all match says `deny`, the session is denied (the
//!    first such rule is named), even when other matching rules say `allow`.
//! 3. Otherwise, if a matching rule says `allow`, the session is allowed.
//! 4. Otherwise `session.sendPolicy.default` decides.
//!
//! The session's channel is the entry's `channel`, else its `lastChannel`, else the one the key
//! names; its chat type is the entry's, else the key's. Reading them from the key means a new
//! session and an `agent:`-prefixed key are judged like any other (deliberate change: the
//! reference could not read the channel from `agent:` keys, SPEC §13.10).

use std::fmt::Write as _;

use crate::config::{Config, SendAction, SendPolicyMatch, SendPolicyRule};
use crate::keys::{ChatType, SessionKey};
use crate::store::SessionEntry;

/// The prefix of every refusal; the spec's user-facing error text.
pub(super) const SEND_BLOCKED: &str = "send blocked by session policy";

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
pub fn send_policy(config: &Config, key: &str, entry: Option<&SessionEntry>) -> SendDecision {
    if let Some(action) = entry.and_then(|entry| session_override(entry.send_policy.as_deref())) {
        return match action {
            SendAction::Allow => SendDecision::Allow,
            SendAction::Deny => blocked("(session override sendPolicy=deny)".to_owned()),
        };
    }

    let session = SessionFacts::new(config, key, entry);
    let policy = &config.session.send_policy;
    let mut matched_allow = false;
    for (index, rule) in policy.rules.iter().enumerate() {
        if !session.matches(&rule.r#match) {
            continue;
        }
        match rule.action {
            SendAction::Deny => return blocked(describe_rule(index, rule)),
            SendAction::Allow => matched_allow = true,
        }
    }
    if matched_allow {
        return SendDecision::Allow;
    }
    match policy.default {
        SendAction::Allow => SendDecision::Allow,
        SendAction::Deny => blocked("(default deny)".to_owned()),
    }
}

/// The entry's `sendPolicy`. Anything but `allow` / `deny` (any case) — `null`, `inherit`, a value
/// written by an older version — means "inherit the config".
fn session_override(value: Option<&str>) -> Option<SendAction> {
    let value = value?.trim();
    if value.eq_ignore_ascii_case("allow") {
        Some(SendAction::Allow)
    } else if value.eq_ignore_ascii_case("deny") {
        Some(SendAction::Deny)
    } else {
        None
    }
}

fn blocked(what: String) -> SendDecision {
    SendDecision::Deny {
        reason: format!("{SEND_BLOCKED}: {what}"),
    }
}

/// `(rule <n>: channel=… chatType=… keyPrefix=… → deny)`, numbered from 1 in file order, naming
/// only the criteria the rule states.
fn describe_rule(index: usize, rule: &SendPolicyRule) -> String {
    let criteria = &rule.r#match;
    let mut text = format!("(rule {}:", index + 1);
    if let Some(channel) = &criteria.channel {
        let _ = write!(text, " channel={channel}");
    }
    if let Some(chat_type) = criteria.chat_type {
        let _ = write!(text, " chatType={chat_type}");
    }
    if let Some(prefix) = &criteria.key_prefix {
        let _ = write!(text, " keyPrefix={prefix}");
    }
    if criteria.channel.is_none() && criteria.chat_type.is_none() && criteria.key_prefix.is_none() {
        text.push_str(" any session");
    }
    let _ = write!(text, " → {})", rule.action);
    text
}

/// What a rule can be matched against.
struct SessionFacts<'a> {
    key: &'a str,
    /// The part after `agent:<agentId>:`.
    rest: String,
    channel: Option<String>,
    chat_type: Option<ChatType>,
}

impl<'a> SessionFacts<'a> {
    fn new(config: &Config, key: &'a str, entry: Option<&SessionEntry>) -> Self {
        let parsed = SessionKey::from_canonical(key.to_owned());
        let from_entry = entry.and_then(|entry| {
            non_blank(entry.channel.as_deref()).or_else(|| non_blank(entry.last_channel.as_deref()))
        });
        let channel = from_entry
            .or_else(|| parsed.channel())
            .map(str::to_ascii_lowercase);
        let chat_type = entry
            .and_then(|entry| entry.chat_type)
            .or_else(|| parsed.chat_type(&config.session.main_key));
        Self {
            key,
            rest: parsed.rest().to_owned(),
            channel,
            chat_type,
        }
    }

    /// Every criterion the rule states must match; a rule that states none matches every session.
    fn matches(&self, criteria: &SendPolicyMatch) -> bool {
        let channel_ok = criteria.channel.as_deref().is_none_or(|wanted| {
            self.channel
                .as_deref()
                .is_some_and(|channel| channel.eq_ignore_ascii_case(wanted.trim()))
        });
        let chat_type_ok = criteria.chat_type.is_none_or(|wanted| {
            self.chat_type
                .is_some_and(|chat_type| chat_type.as_str() == wanted.normalized().as_str())
        });
        let prefix_ok = criteria.key_prefix.as_deref().is_none_or(|prefix| {
            // Canonical keys are lower-case; a prefix written in another case still means them.
            let prefix = prefix.to_ascii_lowercase();
            self.key.to_ascii_lowercase().starts_with(&prefix) || self.rest.starts_with(&prefix)
        });
        channel_ok && chat_type_ok && prefix_ok
    }
}

fn non_blank(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::config::ChatType as RuleChatType;
    use crate::keys::SessionKind;

    fn entry(key: &str) -> SessionEntry {
        SessionEntry {
            key: SessionKey::from_canonical(key.to_owned()),
            session_id: "0b7f0d0e-8f5a-4a57-9a65-1f1c4bb3f0d2".to_owned(),
            agent_id: "main".to_owned(),
            kind: SessionKind::Other,
            created_at: 0,
            updated_at: 0,
            channel: None,
            chat_type: None,
            display_name: None,
            label: None,
            spawned_by: None,
            model: None,
            thinking_level: None,
            verbose_level: None,
            system_sent: false,
            aborted_last_run: false,
            send_policy: None,
            last_channel: None,
            last_to: None,
            last_account_id: None,
            last_thread_id: None,
            delivery_context: None,
            input_tokens: 0,
            output_tokens: 0,
            total_tokens: 0,
            context_tokens: None,
            archived_at: None,
            last_seq: 0,
            last_model: None,
            cost_usd: 0.0,
        }
    }

    fn rule(
        channel: Option<&str>,
        chat_type: Option<RuleChatType>,
        key_prefix: Option<&str>,
        action: SendAction,
    ) -> SendPolicyRule {
        SendPolicyRule {
            r#match: SendPolicyMatch {
                channel: channel.map(str::to_owned),
                chat_type,
                key_prefix: key_prefix.map(str::to_owned),
            },
            action,
        }
    }

    fn config(rules: Vec<SendPolicyRule>, default: SendAction) -> Config {
        let mut config = Config::default();
        config.session.send_policy.rules = rules;
        config.session.send_policy.default = default;
        config
    }

    fn deny(what: &str) -> SendDecision {
        SendDecision::Deny {
            reason: format!("send blocked by session policy: {what}"),
        }
    }

    const GROUP_KEY: &str = "agent:main:discord:group:dev";

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Rules {
        DenyMatches,
        AllowMatches,
        BothMatch,
        NoneMatch,
    }

    #[test]
    fn matrix_of_override_rules_and_default() {
        // Rules that never match the group key: present in every configuration.
        let misses = || {
            vec![
                rule(Some("telegram"), None, None, SendAction::Deny),
                rule(None, Some(RuleChatType::Direct), None, SendAction::Allow),
            ]
        };
        let deny_hit = || {
            rule(
                Some("discord"),
                Some(RuleChatType::Group),
                None,
                SendAction::Deny,
            )
        };
        let allow_hit = || rule(None, None, Some("discord:"), SendAction::Allow);
        for override_value in [Some("allow"), Some("deny"), None] {
            for rules in [
                Rules::DenyMatches,
                Rules::AllowMatches,
                Rules::BothMatch,
                Rules::NoneMatch,
            ] {
                for default in [SendAction::Allow, SendAction::Deny] {
                    let mut list = misses();
                    // Allow listed before deny where both match: order must not matter.
                    if matches!(rules, Rules::AllowMatches | Rules::BothMatch) {
                        list.push(allow_hit());
                    }
                    if matches!(rules, Rules::DenyMatches | Rules::BothMatch) {
                        list.push(deny_hit());
                    }
                    let deny_rule_number = list.len();
                    let config = config(list, default);
                    let mut row = entry(GROUP_KEY);
                    row.send_policy = override_value.map(str::to_owned);

                    let want = match (override_value, rules, default) {
                        (Some("allow"), _, _) => SendDecision::Allow,
                        (Some(_), _, _) => deny("(session override sendPolicy=deny)"),
                        (None, Rules::DenyMatches | Rules::BothMatch, _) => deny(&format!(
                            "(rule {deny_rule_number}: channel=discord chatType=group → deny)"
                        )),
                        (None, Rules::AllowMatches, _) => SendDecision::Allow,
                        (None, Rules::NoneMatch, SendAction::Allow) => SendDecision::Allow,
                        (None, Rules::NoneMatch, SendAction::Deny) => deny("(default deny)"),
                    };
                    let case = format!("{override_value:?} {rules:?} {default}");
                    assert_eq!(send_policy(&config, GROUP_KEY, Some(&row)), want, "{case}");
                    if override_value.is_none() {
                        // No entry at all reads the same facts from the key.
                        assert_eq!(
                            send_policy(&config, GROUP_KEY, None),
                            want,
                            "{case} (no entry)"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn no_config_allows() {
        assert_eq!(
            send_policy(&Config::default(), GROUP_KEY, None),
            SendDecision::Allow
        );
    }

    #[test]
    fn channel_and_chat_type_come_from_the_key_when_the_entry_has_none() {
        let config = config(
            vec![rule(
                Some("discord"),
                Some(RuleChatType::Group),
                None,
                SendAction::Deny,
            )],
            SendAction::Allow,
        );
        let want = deny("(rule 1: channel=discord chatType=group → deny)");
        assert_eq!(
            send_policy(&config, GROUP_KEY, Some(&entry(GROUP_KEY))),
            want
        );
        assert_eq!(send_policy(&config, GROUP_KEY, None), want);
        // A thread inside the group is still that group.
        let thread = "agent:main:discord:group:dev:thread:9";
        assert_eq!(send_policy(&config, thread, None), want);
        // A Discord channel-type chat is not a group.
        let channel = "agent:main:discord:channel:general";
        assert_eq!(send_policy(&config, channel, None), SendDecision::Allow);
    }

    #[test]
    fn the_entry_wins_over_the_key() {
        let config = config(
            vec![rule(
                Some("telegram"),
                Some(RuleChatType::Direct),
                None,
                SendAction::Deny,
            )],
            SendAction::Allow,
        );
        let key = "agent:main:discord:group:dev";
        let mut row = entry(key);
        row.channel = Some("telegram".to_owned());
        row.chat_type = Some(ChatType::Direct);
        let want = deny("(rule 1: channel=telegram chatType=direct → deny)");
        assert_eq!(send_policy(&config, key, Some(&row)), want);

        // A main session has no channel in its key: lastChannel supplies it.
        let main = "agent:main:main";
        let mut row = entry(main);
        assert_eq!(send_policy(&config, main, Some(&row)), SendDecision::Allow);
        row.last_channel = Some("Telegram".to_owned());
        assert_eq!(send_policy(&config, main, Some(&row)), want);
        // The entry's own channel comes before lastChannel.
        row.channel = Some("webchat".to_owned());
        assert_eq!(send_policy(&config, main, Some(&row)), SendDecision::Allow);
    }

    #[test]
    fn dm_means_direct() {
        let config = config(
            vec![rule(
                Some("whatsapp"),
                Some(RuleChatType::Dm),
                None,
                SendAction::Deny,
            )],
            SendAction::Allow,
        );
        let key = "agent:main:whatsapp:direct:+15550001";
        assert_eq!(
            send_policy(&config, key, None),
            deny("(rule 1: channel=whatsapp chatType=dm → deny)")
        );
        let group = "agent:main:whatsapp:group:family";
        assert_eq!(send_policy(&config, group, None), SendDecision::Allow);
    }

    #[test]
    fn key_prefix_matches_the_canonical_key_or_its_legacy_rest() {
        let by_rest = config(
            vec![rule(None, None, Some("discord:"), SendAction::Deny)],
            SendAction::Allow,
        );
        assert_eq!(
            send_policy(&by_rest, "agent:main:discord:group:x", None),
            deny("(rule 1: keyPrefix=discord: → deny)")
        );
        assert_eq!(
            send_policy(&by_rest, "agent:main:telegram:group:x", None),
            SendDecision::Allow
        );
        let by_key = config(
            vec![rule(None, None, Some("agent:ops:"), SendAction::Deny)],
            SendAction::Allow,
        );
        assert_eq!(
            send_policy(&by_key, "agent:ops:cron:nightly", None),
            deny("(rule 1: keyPrefix=agent:ops: → deny)")
        );
        assert_eq!(
            send_policy(&by_key, "agent:main:cron:nightly", None),
            SendDecision::Allow
        );
    }

    #[test]
    fn channel_matching_ignores_case() {
        let config = config(
            vec![rule(Some("Discord"), None, None, SendAction::Deny)],
            SendAction::Allow,
        );
        let mut row = entry("agent:main:custom");
        row.channel = Some("DISCORD".to_owned());
        assert_eq!(
            send_policy(&config, "agent:main:custom", Some(&row)),
            deny("(rule 1: channel=Discord → deny)")
        );
    }

    #[test]
    fn a_stated_criterion_the_session_lacks_does_not_match() {
        let config = config(
            vec![
                rule(Some("discord"), None, None, SendAction::Deny),
                rule(None, Some(RuleChatType::Group), None, SendAction::Deny),
            ],
            SendAction::Allow,
        );
        // A custom key has neither channel nor chat type.
        assert_eq!(
            send_policy(&config, "agent:main:notes", None),
            SendDecision::Allow
        );
    }

    #[test]
    fn a_rule_without_criteria_matches_every_session() {
        let config = config(
            vec![rule(None, None, None, SendAction::Deny)],
            SendAction::Allow,
        );
        assert_eq!(
            send_policy(&config, "agent:main:notes", None),
            deny("(rule 1: any session → deny)")
        );
    }

    #[test]
    fn unknown_override_values_inherit() {
        let config = config(vec![], SendAction::Deny);
        let mut row = entry(GROUP_KEY);
        for value in ["inherit", "", "maybe"] {
            row.send_policy = Some(value.to_owned());
            assert_eq!(
                send_policy(&config, GROUP_KEY, Some(&row)),
                deny("(default deny)"),
                "{value:?}"
            );
        }
        row.send_policy = Some(" ALLOW ".to_owned());
        assert_eq!(
            send_policy(&config, GROUP_KEY, Some(&row)),
            SendDecision::Allow
        );
    }

    #[test]
    fn cron_hook_and_node_sessions_are_internal() {
        let config = config(
            vec![rule(Some("internal"), None, None, SendAction::Deny)],
            SendAction::Allow,
        );
        for key in [
            "agent:main:cron:x",
            "agent:main:hook:y",
            "agent:main:node-pi",
        ] {
            assert_eq!(
                send_policy(&config, key, None),
                deny("(rule 1: channel=internal → deny)"),
                "{key}"
            );
        }
    }
}
