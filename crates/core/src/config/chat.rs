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
