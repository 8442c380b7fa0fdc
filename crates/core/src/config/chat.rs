//! What every chat channel's settings share: the reference's access model. Each channel
//! (`channels.telegram`, `channels.discord`, …) has `dmPolicy` ([`super::DmPolicy`]),
//! `allowFrom`, `owners`, `groupPolicy` ([`super::GroupPolicy`]), `requireMention` and a map of
//! its groups by id (Telegram calls it `groups`, Discord `channels`) whose entries are
//! [`GroupSettings`]; `crate::channels::gate` reads them the same way for every channel.

use serde::{Deserialize, Serialize};

/// One group's own settings (`channels.telegram.groups.<chatId>`,
/// `channels.discord.channels.<channelId>`; `"*"` for every group).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GroupSettings {
    /// Overrides the channel's `requireMention` in this group (and its threads or topics).
    pub require_mention: Option<bool>,
}

/// The bots of a channel with accounts, by account id: `default` from the top level when it
/// configures one (`top`; an account named `default` replaces it), then every enabled account's
/// settings over the top level's (`over`).
pub(super) fn bots<C, A>(
    top: Option<C>,
    accounts: &std::collections::BTreeMap<String, A>,
    enabled: impl Fn(&A) -> bool,
    over: impl Fn(&A) -> C,
) -> Vec<(String, C)> {
    let top = top.filter(|_| !accounts.contains_key(DEFAULT_ACCOUNT));
    let listed = accounts.iter().filter(|(_, a)| enabled(a));
    top.map(|c| (DEFAULT_ACCOUNT.to_owned(), c))
        .into_iter()
        .chain(listed.map(|(id, a)| (id.clone(), over(a))))
        .collect()
}

/// The account id of the bot a channel's top level configures.
pub(super) const DEFAULT_ACCOUNT: &str = "default";
