//! `channels.whatsapp`: a business phone number's own settings ([`WhatsAppNumber`]); the rest of
//! the section is every chat channel's (`super::chat`). The numbers of one Meta app share its
//! webhook (`/channels/whatsapp`), so the access token, app secret and verify token are usually
//! set once at the top; each number has its own `phoneNumberId`.

use serde::{Deserialize, Serialize};

use super::ChannelsConfig;
use super::chat::{ChatSection, Platform, PlatformCheck, Running, hide, or};
use super::error::quote;
use super::validate::{Checker, clear_if_empty};

/// What `phoneNumberId` accepts.
const PHONE_NUMBER_ID_EXPECTED: &str =
    "the phone number's id from the app's WhatsApp settings (digits, not the phone number)";

/// `channels.whatsapp`.
pub type WhatsAppChannel = ChatSection<WhatsAppNumber>;

/// A business phone number's own settings (the top level's, or an account's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WhatsAppNumber {
    /// The access token (a system user's) that sends as the number.
    pub access_token: Option<String>,
    /// The business phone number's id (each number its own).
    pub phone_number_id: Option<String>,
    /// The Meta app's secret: every webhook POST must be signed with it
    /// (`X-Hub-Signature-256`).
    pub app_secret: Option<String>,
    /// What the webhook's verification request must carry (`hub.verify_token`).
    pub verify_token: Option<String>,
    /// Base URL of the Graph API, version included (tests point it at a local fake).
    pub api_base: Option<String>,
}

impl Platform for WhatsAppNumber {
    const NAME: &'static str = "whatsapp";
    const BOTS: (&'static str, &'static str) = ("number", "numbers");
    const CREDENTIAL: &'static str = "phoneNumberId";
    /// The Cloud API's limit for a text message's body.
    const TEXT_LIMIT: u32 = 4096;

    fn section(channels: &ChannelsConfig) -> &ChatSection<Self> {
        &channels.whatsapp
    }

    fn defaults() -> Self {
        Self {
            api_base: Some("https://graph.facebook.com/v21.0".to_owned()),
            ..Self::default()
        }
    }

    /// Everything but the number's id may be the channel's (one app's numbers share it).
    fn over(&self, base: &Self) -> Self {
        Self {
            access_token: or(&self.access_token, &base.access_token),
            phone_number_id: self.phone_number_id.clone(),
            app_secret: or(&self.app_secret, &base.app_secret),
            verify_token: or(&self.verify_token, &base.verify_token),
            api_base: or(&self.api_base, &base.api_base),
        }
    }

    fn configured(&self) -> bool {
        self.phone_number_id.is_some()
    }

    fn hide_secrets(&mut self) {
        hide(&mut self.access_token);
        hide(&mut self.app_secret);
        hide(&mut self.verify_token);
    }
}

/// A Graph API id: digits only.
fn is_numeric_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_digit())
}

impl PlatformCheck for WhatsAppNumber {
    fn check(&mut self, check: &mut Checker, path: &str) {
        if let Some(url) = &self.api_base {
            check.url(&format!("{path}.apiBase"), url);
        }
        for secret in [
            &mut self.access_token,
            &mut self.app_secret,
            &mut self.verify_token,
            &mut self.phone_number_id,
        ] {
            clear_if_empty(secret);
        }
        if let Some(id) = self
            .phone_number_id
            .as_deref()
            .filter(|id| !is_numeric_id(id))
        {
            let at = format!("{path}.phoneNumberId");
            check.invalid(at, quote(id), PHONE_NUMBER_ID_EXPECTED);
        }
    }

    /// Its own number's id, and the secrets (its own or the channel's).
    fn require(&mut self, number: &Self, check: &mut Checker, at: &Running) {
        if self.phone_number_id.is_none() {
            let because = match at.account {
                true => "each enabled account is one number",
                false => at.because,
            };
            check.missing(&format!("{}.phoneNumberId", at.path), because);
            return;
        }
        let because = "required for every served number (its own or the channel's)";
        for (key, secret) in [
            ("accessToken", &number.access_token),
            ("appSecret", &number.app_secret),
            ("verifyToken", &number.verify_token),
        ] {
            if secret.is_none() {
                let mut missing = None;
                check.required_secret(&format!("{}.{key}", at.path), &mut missing, because);
            }
        }
    }

    fn identity(&self) -> Option<(&'static str, &str)> {
        Some(("phoneNumberId", self.phone_number_id.as_deref()?))
    }

    fn shared(other: &str) -> String {
        format!("a number no other account serves ({other} has it)")
    }

    /// Phone numbers as WhatsApp ids: `+1 555-0100` → `15550100` (other entries as written).
    fn normalize_id(id: &mut String) {
        let digits: String = id.chars().filter(char::is_ascii_digit).collect();
        let phone_like = id
            .chars()
            .all(|c| c.is_ascii_digit() || " +-().".contains(c));
        if phone_like && !digits.is_empty() {
            *id = digits;
        }
    }
}
