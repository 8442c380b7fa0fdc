//! `channels.whatsapp`: one business phone number at the top level, more under
//! `accounts.<id>` (each account's unset settings are the channel's), and
//! [`WhatsAppChannel::numbers`], the resolved list the channel runs. The numbers of one Meta app
//! share its webhook (`/channels/whatsapp`), so the app secret and verify token are usually set
//! once at the top; each number has its own `phoneNumberId`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{push_key, quote};
use super::validate::{
    ACCOUNT_ID_EXPECTED, Checker, clear_if_empty, is_id, normalize_optional_agent,
};
use super::{DmPolicy, GroupPolicy, GroupSettings};

pub use super::bots::DEFAULT_ACCOUNT;

/// What `phoneNumberId` accepts.
const PHONE_NUMBER_ID_EXPECTED: &str =
    "the phone number's id from the app's WhatsApp settings (digits, not the phone number)";

/// `channels.whatsapp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WhatsAppChannel {
    /// Whether `/channels/whatsapp` takes the platform's webhook and replies are sent.
    pub enabled: bool,
    /// The access token (a system user's) that sends as the number.
    pub access_token: Option<String>,
    /// The business phone number's id (required for the top-level number).
    pub phone_number_id: Option<String>,
    /// The Meta app's secret: every webhook POST must be signed with it
    /// (`X-Hub-Signature-256`).
    pub app_secret: Option<String>,
    /// What the webhook's verification request must carry (`hub.verify_token`).
    pub verify_token: Option<String>,
    /// Base URL of the Graph API, version included (tests point it at a local fake).
    pub api_base: String,
    /// The agent that answers; absent = the default agent.
    pub agent_id: Option<String>,
    /// Who may write to the number one to one.
    pub dm_policy: DmPolicy,
    /// Phone numbers (WhatsApp ids, `15551234567`) who may always write.
    pub allow_from: Vec<String>,
    /// Phone numbers who own the chats: owner commands, always let in.
    pub owners: Vec<String>,
    /// Which groups the number answers in.
    pub group_policy: GroupPolicy,
    /// Groups by group id, or `"*"` for every group.
    pub groups: BTreeMap<String, GroupSettings>,
    /// In groups, only these senders; empty = anyone.
    pub group_allow_from: Vec<String>,
    /// In groups, answer only messages that mention the number or reply to it.
    pub require_mention: bool,
    /// More numbers, by account id; each runs with the settings above except those it sets.
    pub accounts: BTreeMap<String, WhatsAppAccount>,
}

/// `channels.whatsapp.accounts.<id>`: one more number. Unset settings are the channel's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WhatsAppAccount {
    /// False = this number is not served (the others still are).
    pub enabled: bool,
    pub access_token: Option<String>,
    /// The number's own id (required while it is enabled).
    pub phone_number_id: Option<String>,
    pub app_secret: Option<String>,
    pub verify_token: Option<String>,
    pub api_base: Option<String>,
    pub agent_id: Option<String>,
    pub dm_policy: Option<DmPolicy>,
    pub allow_from: Option<Vec<String>>,
    pub owners: Option<Vec<String>>,
    pub group_policy: Option<GroupPolicy>,
    pub groups: Option<BTreeMap<String, GroupSettings>>,
    pub group_allow_from: Option<Vec<String>>,
    pub require_mention: Option<bool>,
}

impl Default for WhatsAppAccount {
    fn default() -> Self {
        Self {
            enabled: true,
            access_token: None,
            phone_number_id: None,
            app_secret: None,
            verify_token: None,
            api_base: None,
            agent_id: None,
            dm_policy: None,
            allow_from: None,
            owners: None,
            group_policy: None,
            groups: None,
            group_allow_from: None,
            require_mention: None,
        }
    }
}

impl Default for WhatsAppChannel {
    fn default() -> Self {
        Self {
            enabled: false,
            access_token: None,
            phone_number_id: None,
            app_secret: None,
            verify_token: None,
            api_base: "https://graph.facebook.com/v21.0".to_owned(),
            agent_id: None,
            dm_policy: DmPolicy::default(),
            allow_from: Vec::new(),
            owners: Vec::new(),
            group_policy: GroupPolicy::default(),
            groups: BTreeMap::new(),
            group_allow_from: Vec::new(),
            require_mention: true,
            accounts: BTreeMap::new(),
        }
    }
}

impl WhatsAppChannel {
    /// The numbers served, by account id, each with its settings resolved (and no
    /// `accounts`): `default` from the top level when it names a number (an account named
    /// `default` replaces it), then every enabled account. Empty while the channel is off.
    pub fn numbers(&self) -> Vec<(String, WhatsAppChannel)> {
        let base = WhatsAppChannel {
            accounts: BTreeMap::new(),
            ..self.clone()
        };
        let top = self.phone_number_id.is_some().then(|| base.clone());
        let over = |account: &WhatsAppAccount| account.over(&base);
        super::bots::resolve(self.enabled, top, &self.accounts, |a| a.enabled, over)
    }

    /// The resolved settings of the number `account` (`None`: no such number served).
    pub fn number(&self, account: &str) -> Option<WhatsAppChannel> {
        super::bots::find(self.numbers(), account)
    }
}

impl WhatsAppAccount {
    /// This account's settings over the channel's.
    fn over(&self, base: &WhatsAppChannel) -> WhatsAppChannel {
        let or = |own: &Option<String>, base: &Option<String>| own.clone().or(base.clone());
        let list =
            |own: &Option<Vec<String>>, base: &Vec<String>| own.clone().unwrap_or(base.clone());
        WhatsAppChannel {
            enabled: true,
            access_token: or(&self.access_token, &base.access_token),
            phone_number_id: self.phone_number_id.clone(),
            app_secret: or(&self.app_secret, &base.app_secret),
            verify_token: or(&self.verify_token, &base.verify_token),
            api_base: self.api_base.clone().unwrap_or(base.api_base.clone()),
            agent_id: or(&self.agent_id, &base.agent_id),
            dm_policy: self.dm_policy.unwrap_or(base.dm_policy),
            allow_from: list(&self.allow_from, &base.allow_from),
            owners: list(&self.owners, &base.owners),
            group_policy: self.group_policy.unwrap_or(base.group_policy),
            groups: self.groups.clone().unwrap_or(base.groups.clone()),
            group_allow_from: list(&self.group_allow_from, &base.group_allow_from),
            require_mention: self.require_mention.unwrap_or(base.require_mention),
            accounts: BTreeMap::new(),
        }
    }
}

/// Phone numbers as WhatsApp ids: `+1 555-0100` → `15550100` (other entries kept as written).
fn phone_numbers(list: &mut [String]) {
    for entry in list.iter_mut() {
        let digits: String = entry.chars().filter(char::is_ascii_digit).collect();
        let phone_like = entry
            .chars()
            .all(|c| c.is_ascii_digit() || " +-().".contains(c));
        if phone_like && !digits.is_empty() {
            *entry = digits;
        }
    }
}

/// A Graph API id: digits only.
fn is_numeric_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_digit())
}

impl Checker<'_> {
    /// URLs, ids, and the secrets every served number needs (its own or the channel's); no
    /// two numbers with one phone number id.
    pub(super) fn whatsapp(&mut self, whatsapp: &mut WhatsAppChannel) {
        self.url("channels.whatsapp.apiBase", &whatsapp.api_base);
        for secret in [
            &mut whatsapp.access_token,
            &mut whatsapp.app_secret,
            &mut whatsapp.verify_token,
            &mut whatsapp.phone_number_id,
        ] {
            clear_if_empty(secret);
        }
        normalize_optional_agent(&mut whatsapp.agent_id);
        phone_numbers(&mut whatsapp.allow_from);
        phone_numbers(&mut whatsapp.owners);
        phone_numbers(&mut whatsapp.group_allow_from);
        if let Some(id) = whatsapp
            .phone_number_id
            .as_deref()
            .filter(|id| !is_numeric_id(id))
        {
            self.invalid(
                "channels.whatsapp.phoneNumberId",
                quote(id),
                PHONE_NUMBER_ID_EXPECTED,
            );
        }
        let enabled = whatsapp.enabled;
        if enabled && whatsapp.accounts.is_empty() && whatsapp.phone_number_id.is_none() {
            self.missing(
                "channels.whatsapp.phoneNumberId",
                "required while channels.whatsapp.enabled is true, unless accounts configures the numbers",
            );
        }
        let top = whatsapp.clone();
        let mut ids: BTreeMap<String, String> = BTreeMap::new();
        if enabled && top.phone_number_id.is_some() && !top.accounts.contains_key(DEFAULT_ACCOUNT) {
            self.number_secrets("channels.whatsapp", &top, &mut ids);
        }
        for (id, account) in &mut whatsapp.accounts {
            let path = push_key("channels.whatsapp.accounts", id);
            if !is_id(id) {
                self.invalid(&path, quote(id), ACCOUNT_ID_EXPECTED);
            }
            if let Some(url) = &account.api_base {
                self.url(&format!("{path}.apiBase"), url);
            }
            normalize_optional_agent(&mut account.agent_id);
            for list in [
                &mut account.allow_from,
                &mut account.owners,
                &mut account.group_allow_from,
            ] {
                list.iter_mut().for_each(|l| phone_numbers(l));
            }
            for secret in [
                &mut account.access_token,
                &mut account.app_secret,
                &mut account.verify_token,
                &mut account.phone_number_id,
            ] {
                clear_if_empty(secret);
            }
            if !(enabled && account.enabled) {
                continue;
            }
            match account.phone_number_id.as_deref() {
                None => self.missing(
                    &format!("{path}.phoneNumberId"),
                    "each enabled account is one number",
                ),
                Some(number) if !is_numeric_id(number) => self.invalid(
                    format!("{path}.phoneNumberId"),
                    quote(number),
                    PHONE_NUMBER_ID_EXPECTED,
                ),
                Some(_) => self.number_secrets(&path, &account.over(&top), &mut ids),
            }
        }
    }

    /// One served number: the secrets it resolves to, and its id not served twice.
    fn number_secrets(
        &mut self,
        path: &str,
        number: &WhatsAppChannel,
        ids: &mut BTreeMap<String, String>,
    ) {
        let because = "required for every served number (its own or the channel's)";
        for (key, secret) in [
            ("accessToken", &number.access_token),
            ("appSecret", &number.app_secret),
            ("verifyToken", &number.verify_token),
        ] {
            if secret.is_none() {
                let mut missing = None;
                self.required_secret(&format!("{path}.{key}"), &mut missing, because);
            }
        }
        if let Some(id) = &number.phone_number_id
            && let Some(other) = ids.insert(id.clone(), path.to_owned())
        {
            self.invalid(
                format!("{path}.phoneNumberId"),
                quote(id),
                format!("a number no other account serves ({other} has it)"),
            );
        }
    }
}
