//! The WhatsApp Business Cloud API's shapes this channel reads and writes: the webhook's
//! notification (`object: "whatsapp_business_account"`, entries of changes whose `messages`
//! value carries the number's metadata, the senders' profiles and the messages), its signature
//! (`X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with the app secret>`), and
//! the Graph API's `POST /<phone-number-id>/messages` with its error body.

use serde::Deserialize;
use serde_json::{Value, json};

pub(super) use crate::channels::kit::http::ApiError;
use crate::channels::kit::http::send;

/// A webhook POST's body.
#[derive(Debug, Deserialize)]
pub(super) struct Notification {
    pub object: String,
    #[serde(default)]
    pub entry: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Entry {
    #[serde(default)]
    pub changes: Vec<Change>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Change {
    pub field: String,
    #[serde(default)]
    pub value: Value,
}

/// The value of a `messages` change (statuses and other kinds are not read).
#[derive(Debug, Deserialize)]
pub(super) struct Messages {
    pub metadata: Metadata,
    #[serde(default)]
    pub contacts: Vec<Contact>,
    #[serde(default)]
    pub messages: Vec<Message>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Metadata {
    #[serde(default)]
    pub display_phone_number: String,
    pub phone_number_id: String,
}

#[derive(Debug, Deserialize)]
pub(super) struct Contact {
    pub wa_id: String,
    pub profile: Option<Profile>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Profile {
    pub name: Option<String>,
}

/// One message a user sent to the number (directly or in a group).
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Message {
    pub from: String,
    pub id: String,
    /// Seconds since the epoch, as a string.
    #[serde(default)]
    pub timestamp: String,
    #[serde(rename = "type", default)]
    pub kind: String,
    pub text: Option<Text>,
    /// Set when the message was written in a group.
    pub group_id: Option<String>,
    /// The message it replies to.
    pub context: Option<Context>,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct Text {
    pub body: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(super) struct Context {
    pub from: Option<String>,
}

impl Message {
    /// When it was sent, in seconds since the epoch (0 when the platform did not say).
    pub fn sent_at(&self) -> i64 {
        self.timestamp.parse().unwrap_or(0)
    }
}

/// Whether `header` (`sha256=<hex>`) is the HMAC-SHA256 of `body` with `secret`, compared in
/// constant time.
pub(super) fn signed_by(secret: &str, body: &[u8], header: &str) -> bool {
    let Some(tag) = header.trim().strip_prefix("sha256=").and_then(from_hex) else {
        return false;
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    ring::hmac::verify(&key, body, &tag).is_ok()
}

fn from_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The Graph API as one number (its id and access token) uses it.
#[derive(Clone)]
pub(crate) struct Graph {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Graph {
    pub fn new(http: reqwest::Client, base: &str, token: &str) -> Self {
        Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
        }
    }

    /// Sends `text` from number `phone_number_id` to a user (`to`, a WhatsApp id) or a group.
    pub async fn send_text(
        &self,
        phone_number_id: &str,
        (to, group): (&str, bool),
        text: &str,
    ) -> Result<(), ApiError> {
        let recipient_type = if group { "group" } else { "individual" };
        let body = json!({
            "messaging_product": "whatsapp", "recipient_type": recipient_type, "to": to,
            "type": "text", "text": {"body": text, "preview_url": false},
        });
        let url = format!("{}/{}/messages", self.base, segment(phone_number_id));
        let request = self.http.post(url).bearer_auth(&self.token).json(&body);
        let answer = send(request, ("the Graph API", "messages")).await?;
        if answer.is_success() {
            return Ok(());
        }
        let error = &answer.body["error"];
        let message = error["message"]
            .as_str()
            .unwrap_or("an error without a message");
        Err(ApiError {
            retry_after: answer.retry_after,
            ..ApiError::new(
                answer.status,
                error["code"].as_u64().map(|c| c.to_string()),
                format!("Graph API: {message}"),
            )
        })
    }
}

/// A path segment with everything but `[A-Za-z0-9._-]` percent-encoded.
fn segment(raw: &str) -> String {
    raw.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
