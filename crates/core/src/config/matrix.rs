//! `channels.matrix`: a Matrix bot user's own settings ([`MatrixBot`]): the homeserver, the
//! bot's user id and an access token or a password to log in with, the sync's timeout and
//! which invitations it accepts; the rest of the section is every chat channel's
//! (`super::chat`).

use serde::{Deserialize, Serialize};

use super::ChannelsConfig;
use super::chat::{ChatSection, Platform, PlatformCheck, Running, hide, or};
use super::error::{ConfigError, quote};
use super::validate::{Checker, POLL_TIMEOUT_SECONDS, URL_EXPECTED, clear_if_empty};
use super::{AutoJoin, ThreadReplies};

/// The channel's name in setting paths, keys and records.
pub const MATRIX: &str = "matrix";
/// The most events of each room the first sync after a start reads, unless
/// `initialSyncLimit` says otherwise.
pub const INITIAL_SYNC_LIMIT: u32 = 100;
/// What a Matrix user id looks like.
const USER_ID_EXPECTED: &str = "a Matrix user id such as \"@bot:example.org\"";

/// `channels.matrix`.
pub type MatrixChannel = ChatSection<MatrixBot>;

/// A Matrix bot user's own settings (the top level's, or an account's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MatrixBot {
    /// The homeserver's client-server API base (`https://matrix.example.org`).
    pub homeserver: Option<String>,
    /// The bot's user id (`@bot:example.org`; each bot its own).
    pub user_id: Option<String>,
    /// The bot's access token; without one the bot logs in with `password`.
    pub access_token: Option<String>,
    /// The bot's password, for `m.login.password` when no `accessToken` is set.
    pub password: Option<String>,
    /// `/sync` long-poll timeout, in seconds.
    pub poll_timeout_seconds: Option<u64>,
    /// Which invitations the bot accepts.
    pub auto_join: Option<AutoJoin>,
    /// End-to-end encryption: the bot keeps a device with its keys (a crypto store under the
    /// state dir), reads encrypted rooms and answers them encrypted.
    pub encryption: Option<bool>,
    /// The name of the bot's device (shown to people verifying it), for a password login.
    pub device_name: Option<String>,
    /// `autoJoin: "allowlist"`: rooms whose invitations the bot accepts: room ids, aliases
    /// (`#room:server`, resolved on the homeserver) or `"*"`.
    pub auto_join_allowlist: Option<Vec<String>>,
    /// Where the bot replies in rooms: `off`, `inbound` (default), `always`.
    pub thread_replies: Option<ThreadReplies>,
    /// Where the bot replies in direct rooms (the reference's `dm.threadReplies`); the rooms'
    /// setting when unset.
    pub dm_thread_replies: Option<ThreadReplies>,
    /// The most events of each room read by the first sync after a start (what came while the
    /// gateway was down); a first start ever reads none.
    pub initial_sync_limit: Option<u32>,
}

impl Platform for MatrixBot {
    const NAME: &'static str = MATRIX;
    const GROUPS: (&'static str, &'static str) = ("rooms", "rooms");
    const CREDENTIAL: &'static str = "userId";
    /// The homeserver takes events of up to 65,536 bytes of JSON; 16,000 characters stay under
    /// it whatever their UTF-8 width (4 bytes at most each) with room for the envelope and
    /// escapes, and are still a readable message.
    const TEXT_LIMIT: u32 = 16_000;

    fn section(channels: &ChannelsConfig) -> &ChatSection<Self> {
        &channels.matrix
    }

    fn defaults() -> Self {
        Self {
            poll_timeout_seconds: Some(30),
            auto_join: Some(AutoJoin::default()),
            encryption: Some(false),
            thread_replies: Some(ThreadReplies::default()),
            initial_sync_limit: Some(INITIAL_SYNC_LIMIT),
            ..Self::default()
        }
    }

    /// The homeserver, timeout and `autoJoin` are the channel's unless set; the user and its
    /// credentials are the account's own.
    fn over(&self, base: &Self) -> Self {
        Self {
            homeserver: or(&self.homeserver, &base.homeserver),
            user_id: self.user_id.clone(),
            access_token: self.access_token.clone(),
            password: self.password.clone(),
            poll_timeout_seconds: self.poll_timeout_seconds.or(base.poll_timeout_seconds),
            auto_join: self.auto_join.or(base.auto_join),
            encryption: self.encryption.or(base.encryption),
            device_name: or(&self.device_name, &base.device_name),
            auto_join_allowlist: or(&self.auto_join_allowlist, &base.auto_join_allowlist),
            thread_replies: self.thread_replies.or(base.thread_replies),
            dm_thread_replies: self.dm_thread_replies.or(base.dm_thread_replies),
            initial_sync_limit: self.initial_sync_limit.or(base.initial_sync_limit),
        }
    }

    fn configured(&self) -> bool {
        self.user_id.is_some()
    }

    fn hide_secrets(&mut self) {
        hide(&mut self.access_token);
        hide(&mut self.password);
    }
}

/// What an `autoJoinAllowlist` entry looks like.
const ROOM_EXPECTED: &str =
    "a room id (\"!room:example.org\"), an alias (\"#room:example.org\") or \"*\"";

/// `#alias:server`.
fn is_alias(room: &str) -> bool {
    room.strip_prefix('#')
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(local, server)| !local.is_empty() && !server.is_empty())
}

/// `@localpart:server`, no whitespace.
fn is_user_id(id: &str) -> bool {
    id.strip_prefix('@')
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(local, server)| {
            !local.is_empty() && !server.is_empty() && !id.chars().any(char::is_whitespace)
        })
}

impl PlatformCheck for MatrixBot {
    fn check(&mut self, check: &mut Checker, path: &str) {
        if let Some(seconds) = self.poll_timeout_seconds {
            let at = format!("{path}.pollTimeoutSeconds");
            check.range(&at, seconds, &POLL_TIMEOUT_SECONDS);
        }
        // An empty homeserver (what `config show` wrote before it was optional) is unset.
        for setting in [
            &mut self.homeserver,
            &mut self.access_token,
            &mut self.password,
            &mut self.user_id,
        ] {
            clear_if_empty(setting);
        }
        if let Some(url) = &mut self.homeserver {
            *url = url.trim().to_owned();
            check.url(&format!("{path}.homeserver"), url);
        }
        if let Some(id) = &mut self.user_id {
            *id = id.trim().to_owned();
            if !is_user_id(id) {
                check.invalid(format!("{path}.userId"), quote(id), USER_ID_EXPECTED);
            }
        }
        for (at, room) in self.auto_join_allowlist.iter().flatten().enumerate() {
            let room = room.trim();
            let shaped = room == "*" || room.starts_with('!') || is_alias(room);
            if !shaped || room.chars().any(char::is_whitespace) {
                let path = format!("{path}.autoJoinAllowlist[{at}]");
                check.invalid(path, quote(room), ROOM_EXPECTED);
            }
        }
        if let Some(limit) = self.initial_sync_limit {
            check.range(
                &format!("{path}.initialSyncLimit"),
                u64::from(limit),
                &(0..=1000),
            );
        }
    }

    /// A homeserver (its own or the channel's), its own user, and a token or a password.
    fn require(&mut self, bot: &Self, check: &mut Checker, at: &Running) {
        let path = at.path;
        if bot.homeserver.is_none() {
            let expected = format!("{URL_EXPECTED} (the bot's homeserver)");
            check.missing(&format!("{path}.homeserver"), &expected);
        }
        if self.user_id.is_none() {
            check.problems.push(ConfigError::Missing {
                path: format!("{path}.userId"),
                expected: format!("{USER_ID_EXPECTED} (the bot's own user)"),
            });
        }
        if self.access_token.is_some() || self.password.is_some() {
            return;
        }
        let unset: Vec<String> = ["accessToken", "password"]
            .iter()
            .filter_map(|key| check.unset_secrets.get(&format!("{path}.{key}")).cloned())
            .collect();
        let mut expected =
            "an accessToken, or a password to log in with (required while the bot is enabled)"
                .to_string();
        if !unset.is_empty() {
            expected.push_str(&format!(
                "; environment variable {} is not set",
                unset.join(", ")
            ));
        }
        check.problems.push(ConfigError::Missing {
            path: format!("{path}.accessToken"),
            expected,
        });
    }

    fn identity(&self) -> Option<(&'static str, &str)> {
        Some(("userId", self.user_id.as_deref()?))
    }

    fn shared(other: &str) -> String {
        format!(
            "a user no other account uses ({other}.userId names it too; two syncs of one user each get every event)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::is_user_id;

    #[test]
    fn user_ids_have_a_localpart_and_a_server() {
        for good in ["@bot:localhost", "@a.b-c:example.org:8448"] {
            assert!(is_user_id(good), "{good}");
        }
        for bad in [
            "bot",
            "@bot",
            "@:server",
            "bot:server",
            "@bot:",
            "@b ot:server",
        ] {
            assert!(!is_user_id(bad), "{bad}");
        }
    }
}
