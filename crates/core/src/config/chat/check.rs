//! A chat channel's section checked once for every channel: account ids, agent ids, the access
//! settings of the top level and each account, each bot's platform settings as written, and
//! for every bot that runs its credentials (its own, or the channel's where the platform lets
//! an account take them) and an identity no other running bot has. What is the platform's own
//! is asked of it ([`PlatformCheck`]).

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use super::{Access, ChatSection, DEFAULT_ACCOUNT, Platform};
use crate::config::REDACTED;
use crate::config::error::{push_key, quote};
use crate::config::validate::{ACCOUNT_ID_EXPECTED, Checker, is_id, normalize_optional_agent};

/// What `maxReplyParts` accepts.
pub(in crate::config) const REPLY_PARTS: RangeInclusive<u64> = 1..=1000;
/// What `maxInboundChars` accepts.
pub(in crate::config) const INBOUND_CHARS: RangeInclusive<u64> = 100..=1_000_000;

/// Where a bot that runs is written, and why what it needs is required.
pub(in crate::config) struct Running<'a> {
    /// `channels.<name>` or `channels.<name>.accounts.<id>`.
    pub path: &'a str,
    /// Why, in words for "missing" (for a platform without words of its own).
    pub because: &'a str,
    /// It is an account's bot, not the top level's.
    pub account: bool,
}

/// What the config check asks of a platform.
pub(in crate::config) trait PlatformCheck: Platform {
    /// When the identity ([`PlatformCheck::identity`]) is a secret, shown as `[redacted]`.
    const SECRET_IDENTITY: bool = false;

    /// Checks one bot's settings as written at `path` (the top level or an account): formats
    /// and URLs, empty secrets cleared.
    fn check(&mut self, check: &mut Checker, path: &str);

    /// Checks a bot that runs: what it needs to run, `self` as written and `bot` resolved (its
    /// own settings over the channel's).
    fn require(&mut self, bot: &Self, check: &mut Checker, at: &Running);

    /// What names the bot on its platform, so that no two running bots share it: the setting
    /// and its value.
    fn identity(&self) -> Option<(&'static str, &str)>;

    /// What a bot is told whose identity the bot written at `other` has too.
    fn shared(other: &str) -> String;

    /// An id in `allowFrom`, `owners` or `groupAllowFrom` as the platform writes it.
    fn normalize_id(_id: &mut String) {}
}

impl Checker<'_> {
    /// `channels.<name>` of a chat channel (see the module doc).
    pub(in crate::config) fn chat<P: PlatformCheck>(&mut self, section: &mut ChatSection<P>) {
        let path = format!("channels.{}", P::NAME);
        normalize_optional_agent(&mut section.agent_id);
        self.access::<P>(&path, &mut section.access);
        section.bot.check(self, &path);
        for (id, account) in &mut section.accounts {
            let at = push_key(&format!("{path}.accounts"), id);
            if !is_id(id) {
                self.invalid(&at, quote(id), ACCOUNT_ID_EXPECTED);
            }
            normalize_optional_agent(&mut account.agent_id);
            self.access::<P>(&at, &mut account.access);
            account.bot.check(self, &at);
        }
        if section.enabled {
            self.running(section, &path);
        }
        // What the top level leaves unset is its default (as `config show` shows it).
        section.bot = section.bot.over(&P::defaults());
        section.access = section.access.over(&Access::defaults(P::TEXT_LIMIT));
    }

    /// Each bot that runs: an identity no other one has, and what it needs to run.
    fn running<P: PlatformCheck>(&mut self, section: &mut ChatSection<P>, path: &str) {
        let (bot, bots) = P::BOTS;
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        let top = section.bot.over(&P::defaults());
        let replaced = section.accounts.contains_key(DEFAULT_ACCOUNT);
        let required = section.accounts.is_empty();
        if !replaced && (required || section.bot.configured()) {
            let because = format!(
                "required while {path}.enabled is true, unless accounts configures the {bots}"
            );
            self.unique(path, &top, &mut seen);
            let at = Running {
                path,
                because: &because,
                account: false,
            };
            section.bot.require(&top, self, &at);
        }
        let because = format!("each enabled account needs its own {bot}");
        for (id, account) in &mut section.accounts {
            if !account.enabled {
                continue;
            }
            let at = push_key(&format!("{path}.accounts"), id);
            let resolved = account.bot.over(&top);
            self.unique(&at, &resolved, &mut seen);
            let at = Running {
                path: &at,
                because: &because,
                account: true,
            };
            account.bot.require(&resolved, self, &at);
        }
    }

    /// The identity of the bot written at `path` is not one an earlier bot of `seen` has.
    fn unique<P: PlatformCheck>(
        &mut self,
        path: &str,
        bot: &P,
        seen: &mut BTreeMap<String, String>,
    ) {
        let Some((key, value)) = bot.identity() else {
            return;
        };
        if let Some(other) = seen.insert(value.to_owned(), path.to_owned()) {
            let shown = match P::SECRET_IDENTITY {
                true => REDACTED.to_owned(),
                false => quote(value),
            };
            self.invalid(format!("{path}.{key}"), shown, P::shared(&other));
        }
    }

    /// The access settings written at `path`: ids in the platform's spelling, and the limits
    /// within what the platform takes.
    fn access<P: PlatformCheck>(&mut self, path: &str, access: &mut Access) {
        for list in [
            &mut access.allow_from,
            &mut access.owners,
            &mut access.group_allow_from,
        ] {
            for id in list.iter_mut().flatten() {
                *id = without_reference_prefix(id.trim()).to_owned();
                P::normalize_id(id);
            }
        }
        if access.owners.iter().flatten().any(|o| o == "*") {
            self.invalid(
                format!("{path}.owners"),
                quote("*"),
                "ids of the people who own the bot (\"*\", anyone, belongs in allowFrom)",
            );
        }
        if let Some(limit) = access.text_chunk_limit {
            let range = 1..=u64::from(P::TEXT_LIMIT);
            self.range(&format!("{path}.textChunkLimit"), limit.into(), &range);
        }
        if let Some(parts) = access.max_reply_parts {
            self.range(&format!("{path}.maxReplyParts"), parts.into(), &REPLY_PARTS);
        }
        if let Some(chars) = access.max_inbound_chars {
            self.range(
                &format!("{path}.maxInboundChars"),
                chars.into(),
                &INBOUND_CHARS,
            );
        }
    }
}

/// Prefixes the reference writes before a sender in `allowFrom`, `owners` and `groupAllowFrom`
/// (`tg:123`, `uuid:…`, `user:…`): the sender is what follows.
const REFERENCE_PREFIXES: [&str; 8] = [
    "tg:",
    "telegram:",
    "uuid:",
    "signal:",
    "user:",
    "discord:",
    "slack:",
    "whatsapp:",
];

fn without_reference_prefix(id: &str) -> &str {
    REFERENCE_PREFIXES
        .iter()
        .find_map(|p| id.strip_prefix(p))
        .unwrap_or(id)
}
