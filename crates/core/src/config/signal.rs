//! `channels.signal`: one Signal account served through a `signal-cli` daemon's HTTP JSON-RPC
//! interface (`signal-cli -a +NUMBER daemon --http 127.0.0.1:8080`). The gateway does not run
//! signal-cli; it talks to the daemon at `httpUrl`. One account (the daemon's `-a`): several
//! accounts are not offered.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::quote;
use super::validate::{Checker, clear_if_empty, normalize_optional_agent};
use super::{DmPolicy, GroupPolicy, GroupSettings};

/// What `account` accepts.
const ACCOUNT_EXPECTED: &str =
    "the daemon's account: a phone number in E.164 form (\"+15551234567\") or the account's UUID";

/// `channels.signal`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SignalChannel {
    /// Whether the gateway listens to the daemon's events and replies through it.
    pub enabled: bool,
    /// The account the daemon runs (`signal-cli -a <account>`): `+E.164` or a UUID. Required
    /// while enabled; messages it sent itself are not answered.
    pub account: Option<String>,
    /// Base URL of the daemon's HTTP interface (`daemon --http <host:port>`).
    pub http_url: String,
    /// The agent that answers; absent = the default agent.
    pub agent_id: Option<String>,
    /// Who may write to the account one to one.
    pub dm_policy: DmPolicy,
    /// Phone numbers (`+15551234567`) or UUIDs who may always write.
    pub allow_from: Vec<String>,
    /// Phone numbers or UUIDs who own the chats: owner commands, always let in.
    pub owners: Vec<String>,
    /// Which groups the account answers in.
    pub group_policy: GroupPolicy,
    /// Groups by group id (base64, as signal-cli names them), or `"*"` for every group.
    pub groups: BTreeMap<String, GroupSettings>,
    /// In groups, only these senders; empty = anyone.
    pub group_allow_from: Vec<String>,
    /// In groups, answer only messages that mention the account or quote its message.
    pub require_mention: bool,
}

impl Default for SignalChannel {
    fn default() -> Self {
        Self {
            enabled: false,
            account: None,
            http_url: "http://127.0.0.1:8080".to_owned(),
            agent_id: None,
            dm_policy: DmPolicy::default(),
            allow_from: Vec::new(),
            owners: Vec::new(),
            group_policy: GroupPolicy::default(),
            groups: BTreeMap::new(),
            group_allow_from: Vec::new(),
            require_mention: true,
        }
    }
}

/// `+` and 6 to 15 digits (E.164).
fn is_e164(account: &str) -> bool {
    account.strip_prefix('+').is_some_and(|digits| {
        (6..=15).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit())
    })
}

/// A UUID in its 8-4-4-4-12 hex form.
fn is_uuid(account: &str) -> bool {
    let groups: Vec<&str> = account.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Phone numbers as signal-cli writes them: `+1 555-0100` → `+15550100` (UUIDs lower case,
/// other entries kept as written).
fn signal_ids(list: &mut [String]) {
    for entry in list.iter_mut() {
        let trimmed = entry.trim();
        let phone_like = trimmed.starts_with('+')
            && trimmed
                .chars()
                .all(|c| c.is_ascii_digit() || " +-().".contains(c));
        *entry = if phone_like {
            let digits: String = trimmed.chars().filter(char::is_ascii_digit).collect();
            format!("+{digits}")
        } else if is_uuid(trimmed) {
            trimmed.to_ascii_lowercase()
        } else {
            trimmed.to_owned()
        };
    }
}

impl Checker<'_> {
    /// `httpUrl` an http URL, `account` a number or UUID (required while enabled), and the
    /// lists in signal-cli's spelling.
    pub(super) fn signal(&mut self, signal: &mut SignalChannel) {
        self.url("channels.signal.httpUrl", &signal.http_url);
        clear_if_empty(&mut signal.account);
        normalize_optional_agent(&mut signal.agent_id);
        for list in [
            &mut signal.allow_from,
            &mut signal.owners,
            &mut signal.group_allow_from,
        ] {
            signal_ids(list);
        }
        match signal.account.as_mut() {
            None if signal.enabled => self.missing(
                "channels.signal.account",
                "required while channels.signal.enabled is true (the account signal-cli's daemon runs, -a)",
            ),
            None => {}
            Some(account) => {
                let mut one = [account.clone()];
                signal_ids(&mut one);
                let [normalized] = one;
                if is_e164(&normalized) || is_uuid(&normalized) {
                    *account = normalized;
                } else {
                    self.invalid("channels.signal.account", quote(account), ACCOUNT_EXPECTED);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_are_numbers_or_uuids() {
        assert!(is_e164("+15551234567"));
        assert!(!is_e164("15551234567") && !is_e164("+1") && !is_e164("+1555abc4567"));
        assert!(is_uuid("a1b2c3d4-0000-4000-8000-123456789abc"));
        assert!(!is_uuid("a1b2c3d4-0000-4000-8000") && !is_uuid("alice"));
        let mut list = vec![
            "+1 555-0100".to_owned(),
            "A1B2C3D4-0000-4000-8000-123456789ABC".to_owned(),
            " bob ".to_owned(),
        ];
        signal_ids(&mut list);
        assert_eq!(
            list,
            ["+15550100", "a1b2c3d4-0000-4000-8000-123456789abc", "bob"]
        );
    }
}
