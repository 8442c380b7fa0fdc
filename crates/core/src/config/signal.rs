//! `channels.signal`: one Signal account served through a `signal-cli` daemon's HTTP JSON-RPC
//! interface (`signal-cli -a +NUMBER daemon --http 127.0.0.1:8080`), its own settings in
//! [`SignalAccount`]; the rest of the section is every chat channel's (`super::chat`). The
//! gateway does not run signal-cli; it talks to the daemon at `httpUrl`. One account (the
//! daemon's `-a`): several accounts are not offered.

use serde::{Deserialize, Serialize};

use super::ChannelsConfig;
use super::chat::{ChatSection, Platform, PlatformCheck, Running, or};
use super::error::quote;
use super::validate::{Checker, clear_if_empty};

/// What `account` accepts.
const ACCOUNT_EXPECTED: &str =
    "the daemon's account: a phone number in E.164 form (\"+15551234567\") or the account's UUID";

/// `channels.signal`.
pub type SignalChannel = ChatSection<SignalAccount>;

/// The Signal account's own settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalAccount {
    /// The account the daemon runs (`signal-cli -a <account>`): `+E.164` or a UUID. Messages
    /// it sent itself are not answered.
    pub account: Option<String>,
    /// Base URL of the daemon's HTTP interface (`daemon --http <host:port>`).
    pub http_url: Option<String>,
}

impl Platform for SignalAccount {
    const NAME: &'static str = "signal";
    const BOTS: (&'static str, &'static str) = ("account", "accounts");
    const ACCOUNTS: bool = false;
    const CREDENTIAL: &'static str = "account";
    /// Signal's apps turn a longer body into an attachment.
    const TEXT_LIMIT: u32 = 2000;

    fn section(channels: &ChannelsConfig) -> &ChatSection<Self> {
        &channels.signal
    }

    fn defaults() -> Self {
        Self {
            account: None,
            http_url: Some("http://127.0.0.1:8080".to_owned()),
        }
    }

    fn over(&self, base: &Self) -> Self {
        Self {
            account: self.account.clone(),
            http_url: or(&self.http_url, &base.http_url),
        }
    }

    fn configured(&self) -> bool {
        self.account.is_some()
    }

    /// The daemon has no secret.
    fn hide_secrets(&mut self) {}
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

impl PlatformCheck for SignalAccount {
    /// `httpUrl` an http URL, `account` a number or a UUID in signal-cli's spelling.
    fn check(&mut self, check: &mut Checker, path: &str) {
        if let Some(url) = &self.http_url {
            check.url(&format!("{path}.httpUrl"), url);
        }
        clear_if_empty(&mut self.account);
        if let Some(account) = self.account.as_mut() {
            let mut normalized = account.clone();
            Self::normalize_id(&mut normalized);
            if is_e164(&normalized) || is_uuid(&normalized) {
                *account = normalized;
            } else {
                check.invalid(format!("{path}.account"), quote(account), ACCOUNT_EXPECTED);
            }
        }
    }

    fn require(&mut self, _account: &Self, check: &mut Checker, at: &Running) {
        if self.account.is_none() {
            check.missing(
                &format!("{}.account", at.path),
                "required while channels.signal.enabled is true (the account signal-cli's daemon runs, -a)",
            );
        }
    }

    fn identity(&self) -> Option<(&'static str, &str)> {
        None
    }

    fn shared(other: &str) -> String {
        format!("an account no other one uses ({other} has it)")
    }

    /// Phone numbers as signal-cli writes them: `+1 555-0100` → `+15550100` (UUIDs lower case,
    /// other entries as written).
    fn normalize_id(id: &mut String) {
        let trimmed = id.trim();
        let phone_like = trimmed.starts_with('+')
            && trimmed
                .chars()
                .all(|c| c.is_ascii_digit() || " +-().".contains(c));
        *id = if phone_like {
            let digits: String = trimmed.chars().filter(char::is_ascii_digit).collect();
            format!("+{digits}")
        } else if is_uuid(trimmed) {
            trimmed.to_ascii_lowercase()
        } else {
            trimmed.to_owned()
        };
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
        list.iter_mut().for_each(SignalAccount::normalize_id);
        assert_eq!(
            list,
            ["+15550100", "a1b2c3d4-0000-4000-8000-123456789abc", "bob"]
        );
    }
}
