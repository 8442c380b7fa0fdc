//! The Bot API calls the channel makes (`getMe`, `getUpdates`, `sendMessage`, `sendChatAction`),
//! over reqwest: `POST <apiBase>/bot<token>/<method>` with a JSON body, answered
//! `{"ok": true, "result": …}` or `{"ok": false, "error_code", "description", "parameters"?}`.
//! Only the fields the channel reads are decoded; the token never appears in an error.

use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Why a call failed.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// Telegram's `error_code` (the HTTP status), 0 when no answer came.
    pub code: u16,
    /// Telegram's `description`, or what went wrong on the way.
    pub description: String,
    /// `parameters.retry_after` of a 429.
    pub retry_after: Option<u64>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.code {
            0 => write!(f, "{}", self.description),
            code => write!(f, "{code} {}", self.description),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: i64,
    #[serde(default)]
    pub is_bot: bool,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub first_name: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Chat {
    pub id: i64,
    /// `private`, `group`, `supergroup` or `channel`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub first_name: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub message_id: i64,
    pub chat: Chat,
    #[serde(default)]
    pub from: Option<User>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub caption: Option<String>,
    #[serde(default)]
    pub message_thread_id: Option<i64>,
    #[serde(default)]
    pub is_topic_message: bool,
    #[serde(default)]
    pub reply_to_message: Option<Box<Message>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Update {
    pub update_id: i64,
    #[serde(default)]
    pub message: Option<Message>,
}

/// A bot: where its API is and its token.
#[derive(Clone)]
pub struct Bot {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Bot {
    pub fn new(http: reqwest::Client, base: &str, token: &str) -> Self {
        Self {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
        }
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        body: Value,
        timeout: Duration,
    ) -> Result<T, ApiError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        let sent = self
            .http
            .post(url)
            .json(&body)
            .timeout(timeout)
            .send()
            .await;
        // reqwest's error text carries the URL, and the URL carries the token.
        let response = sent.map_err(|e| ApiError {
            code: 0,
            description: format!(
                "{method}: no answer from the Bot API ({})",
                crate::channels::why_no_answer(&e)
            ),
            retry_after: None,
        })?;
        let status = response.status().as_u16();
        let answer: Value = response.json().await.map_err(|_| ApiError {
            code: status,
            description: format!(
                "{method}: the Bot API answered {status} with a body that is not JSON"
            ),
            retry_after: None,
        })?;
        if answer["ok"].as_bool() == Some(true) {
            return serde_json::from_value(answer["result"].clone()).map_err(|e| ApiError {
                code: status,
                description: format!("{method}: unexpected result: {e}"),
                retry_after: None,
            });
        }
        Err(ApiError {
            code: answer["error_code"].as_u64().map_or(status, |c| c as u16),
            description: answer["description"]
                .as_str()
                .unwrap_or("no description")
                .to_string(),
            retry_after: answer["parameters"]["retry_after"].as_u64(),
        })
    }

    pub async fn get_me(&self) -> Result<User, ApiError> {
        self.call("getMe", json!({}), Duration::from_secs(30)).await
    }

    /// Long-polls for updates from `offset`, holding up to `timeout` seconds.
    pub async fn get_updates(&self, offset: i64, timeout: u64) -> Result<Vec<Update>, ApiError> {
        let body = json!({"offset": offset, "timeout": timeout, "allowed_updates": ["message"]});
        let wait = Duration::from_secs(timeout + 15);
        self.call("getUpdates", body, wait).await
    }

    /// Sends plain text (no `parse_mode`: nothing in it is read as markup).
    pub async fn send_message(
        &self,
        chat_id: &str,
        thread_id: Option<&str>,
        text: &str,
    ) -> Result<(), ApiError> {
        let mut body = json!({"chat_id": chat_target(chat_id), "text": text});
        if let Some(thread) = thread_id.and_then(|t| t.parse::<i64>().ok()) {
            body["message_thread_id"] = json!(thread);
        }
        self.call::<Value>("sendMessage", body, Duration::from_secs(30))
            .await
            .map(|_| ())
    }

    /// Shows "typing…" in the chat for a few seconds.
    pub async fn typing(&self, chat_id: &str, thread_id: Option<&str>) -> Result<(), ApiError> {
        let mut body = json!({"chat_id": chat_target(chat_id), "action": "typing"});
        if let Some(thread) = thread_id.and_then(|t| t.parse::<i64>().ok()) {
            body["message_thread_id"] = json!(thread);
        }
        self.call::<Value>("sendChatAction", body, Duration::from_secs(30))
            .await
            .map(|_| ())
    }
}

/// A numeric chat id as a number, anything else (`@channelname`) as it is.
fn chat_target(chat_id: &str) -> Value {
    chat_id
        .parse::<i64>()
        .map_or_else(|_| json!(chat_id), |id| json!(id))
}
