//! `channels.matrix`: one bot user at the top level, more under `accounts.<id>` (each account's
//! unset settings are the channel's), and [`MatrixChannel::bots`], the resolved list the channel
//! runs. Shaped like `channels.discord`, with the homeserver's URL and the bot's user id, and an
//! access token or a password to log in with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, push_key, quote};
use super::validate::{
    ACCOUNT_ID_EXPECTED, Checker, POLL_TIMEOUT_SECONDS, clear_if_empty, is_id,
    normalize_optional_agent,
};
use super::{AutoJoin, DmPolicy, GroupPolicy, GroupSettings};

/// The channel's name in setting paths, keys and records.
pub const MATRIX: &str = "matrix";
/// The account id of the bot the top level of `channels.matrix` configures.
pub use super::bots::DEFAULT_ACCOUNT;
/// What a Matrix user id looks like.
const USER_ID_EXPECTED: &str = "a Matrix user id such as \"@bot:example.org\"";

/// `channels.matrix`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MatrixChannel {
    /// Whether the bots sync with their homeserver.
    pub enabled: bool,
    /// The homeserver's client-server API base (`https://matrix.example.org`; required while
    /// enabled).
    pub homeserver: String,
    /// The bot's user id (`@bot:example.org`; required while enabled).
    pub user_id: Option<String>,
    /// The bot's access token; without one the bot logs in with `password`.
    pub access_token: Option<String>,
    /// The bot's password, for `m.login.password` when no `accessToken` is set.
    pub password: Option<String>,
    /// The agent that answers; absent = the default agent.
    pub agent_id: Option<String>,
    /// `/sync` long-poll timeout.
    pub poll_timeout_seconds: u64,
    /// Who may talk to the bot in a direct room (two members).
    pub dm_policy: DmPolicy,
    /// User ids (`@alice:example.org`) who may always talk to the bot in a direct room
    /// (`dmPolicy` `allowlist` and `pairing`; approved pairings add to them).
    pub allow_from: Vec<String>,
    /// User ids who own the bot's rooms: they may use owner commands (`/send on|off|inherit`,
    /// `/status`, `/new`) and are always let in directly.
    pub owners: Vec<String>,
    /// Which rooms (more than two members) the bot answers in.
    pub group_policy: GroupPolicy,
    /// Rooms by room id (`!abc:example.org`), or `"*"` for every room: listed ones pass
    /// `groupPolicy: "allowlist"`, and each may set its own `requireMention`.
    pub rooms: BTreeMap<String, GroupSettings>,
    /// In rooms, answer only messages that mention the bot.
    pub require_mention: bool,
    /// Which invitations the bot accepts.
    pub auto_join: AutoJoin,
    /// More bot users, by account id; each runs with the settings above except those it sets.
    pub accounts: BTreeMap<String, MatrixAccount>,
}

/// `channels.matrix.accounts.<id>`: one more bot user. Unset settings are the channel's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MatrixAccount {
    /// False = this bot does not sync (the others still do).
    pub enabled: bool,
    pub homeserver: Option<String>,
    /// The bot's own user id (required while it is enabled).
    pub user_id: Option<String>,
    pub access_token: Option<String>,
    pub password: Option<String>,
    pub agent_id: Option<String>,
    pub dm_policy: Option<DmPolicy>,
    pub allow_from: Option<Vec<String>>,
    pub owners: Option<Vec<String>>,
    pub group_policy: Option<GroupPolicy>,
    pub rooms: Option<BTreeMap<String, GroupSettings>>,
    pub require_mention: Option<bool>,
    pub auto_join: Option<AutoJoin>,
}

impl Default for MatrixAccount {
    fn default() -> Self {
        Self {
            enabled: true,
            homeserver: None,
            user_id: None,
            access_token: None,
            password: None,
            agent_id: None,
            dm_policy: None,
            allow_from: None,
            owners: None,
            group_policy: None,
            rooms: None,
            require_mention: None,
            auto_join: None,
        }
    }
}

impl Default for MatrixChannel {
    fn default() -> Self {
        Self {
            enabled: false,
            homeserver: String::new(),
            user_id: None,
            access_token: None,
            password: None,
            agent_id: None,
            poll_timeout_seconds: 30,
            dm_policy: DmPolicy::default(),
            allow_from: Vec::new(),
            owners: Vec::new(),
            group_policy: GroupPolicy::default(),
            rooms: BTreeMap::new(),
            require_mention: true,
            auto_join: AutoJoin::default(),
            accounts: BTreeMap::new(),
        }
    }
}

impl MatrixChannel {
    /// The bots that run, by account id, each with its settings resolved (and no `accounts`):
    /// `default` from the top level when it names a user (an account named `default` replaces
    /// it), then every enabled account. Empty while the channel is off.
    pub fn bots(&self) -> Vec<(String, MatrixChannel)> {
        let base = MatrixChannel {
            accounts: BTreeMap::new(),
            ..self.clone()
        };
        let top = self.user_id.is_some().then(|| base.clone());
        let over = |a: &MatrixAccount| a.over(&base);
        super::bots::resolve(self.enabled, top, &self.accounts, |a| a.enabled, over)
    }

    /// The resolved settings of the bot `account` (`None`: no such running bot).
    pub fn bot(&self, account: &str) -> Option<MatrixChannel> {
        super::bots::find(self.bots(), account)
    }
}

impl MatrixAccount {
    /// This account's settings over the channel's (its credentials are its own).
    fn over(&self, base: &MatrixChannel) -> MatrixChannel {
        MatrixChannel {
            enabled: true,
            homeserver: self.homeserver.clone().unwrap_or(base.homeserver.clone()),
            user_id: self.user_id.clone(),
            access_token: self.access_token.clone(),
            password: self.password.clone(),
            agent_id: self.agent_id.clone().or(base.agent_id.clone()),
            poll_timeout_seconds: base.poll_timeout_seconds,
            dm_policy: self.dm_policy.unwrap_or(base.dm_policy),
            allow_from: self.allow_from.clone().unwrap_or(base.allow_from.clone()),
            owners: self.owners.clone().unwrap_or(base.owners.clone()),
            group_policy: self.group_policy.unwrap_or(base.group_policy),
            rooms: self.rooms.clone().unwrap_or(base.rooms.clone()),
            require_mention: self.require_mention.unwrap_or(base.require_mention),
            auto_join: self.auto_join.unwrap_or(base.auto_join),
            accounts: BTreeMap::new(),
        }
    }
}

/// `@localpart:server`, no whitespace.
fn is_user_id(id: &str) -> bool {
    id.strip_prefix('@')
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(local, server)| {
            !local.is_empty() && !server.is_empty() && !id.chars().any(char::is_whitespace)
        })
}

/// One bot's identity as written at `path`: its user id, and a token or a password.
struct Login<'a> {
    path: String,
    user_id: &'a mut Option<String>,
    access_token: &'a mut Option<String>,
    password: &'a mut Option<String>,
}

impl Checker<'_> {
    /// The homeserver URLs, the bots' user ids and credentials (each enabled bot its own), the
    /// timeout and the agent ids.
    pub(super) fn matrix(&mut self, matrix: &mut MatrixChannel) {
        self.range(
            "channels.matrix.pollTimeoutSeconds",
            matrix.poll_timeout_seconds,
            &POLL_TIMEOUT_SECONDS,
        );
        matrix.homeserver = matrix.homeserver.trim().to_owned();
        if !matrix.homeserver.is_empty() || matrix.enabled {
            self.url("channels.matrix.homeserver", &matrix.homeserver);
        }
        normalize_optional_agent(&mut matrix.agent_id);
        let top_level = matrix.enabled && matrix.accounts.is_empty();
        let mut users: BTreeMap<String, String> = BTreeMap::new();
        self.matrix_login(
            Login {
                path: "channels.matrix".into(),
                user_id: &mut matrix.user_id,
                access_token: &mut matrix.access_token,
                password: &mut matrix.password,
            },
            top_level,
            &mut users,
        );
        for (id, account) in &mut matrix.accounts {
            let path = push_key("channels.matrix.accounts", id);
            if !is_id(id) {
                self.invalid(&path, quote(id), ACCOUNT_ID_EXPECTED);
            }
            if let Some(url) = &account.homeserver {
                self.url(&format!("{path}.homeserver"), url);
            }
            normalize_optional_agent(&mut account.agent_id);
            let login = Login {
                path,
                user_id: &mut account.user_id,
                access_token: &mut account.access_token,
                password: &mut account.password,
            };
            self.matrix_login(login, matrix.enabled && account.enabled, &mut users);
        }
    }

    /// A bot's user id and credentials: required when `required`, checked when present; two
    /// bots may not be one user (`users`: the ids seen so far, and where).
    fn matrix_login(
        &mut self,
        login: Login<'_>,
        required: bool,
        users: &mut BTreeMap<String, String>,
    ) {
        let Login {
            path,
            user_id,
            access_token,
            password,
        } = login;
        clear_if_empty(access_token);
        clear_if_empty(password);
        clear_if_empty(user_id);
        match user_id.as_mut() {
            Some(id) => {
                *id = id.trim().to_owned();
                if !is_user_id(id) {
                    self.invalid(format!("{path}.userId"), quote(id), USER_ID_EXPECTED);
                } else if let Some(other) = users.insert(id.clone(), format!("{path}.userId")) {
                    self.invalid(
                        format!("{path}.userId"),
                        quote(id),
                        format!("a user no other account uses ({other} names it too; two syncs of one user each get every event)"),
                    );
                }
            }
            None if required => self.problems.push(ConfigError::Missing {
                path: format!("{path}.userId"),
                expected: format!("{USER_ID_EXPECTED} (the bot's own user)"),
            }),
            None => {}
        }
        if required && access_token.is_none() && password.is_none() {
            let unset: Vec<String> = ["accessToken", "password"]
                .iter()
                .filter_map(|key| self.unset_secrets.get(&format!("{path}.{key}")).cloned())
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
            self.problems.push(ConfigError::Missing {
                path: format!("{path}.accessToken"),
                expected,
            });
        }
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
