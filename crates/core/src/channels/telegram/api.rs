//! The Bot API calls the channel makes (`getMe`, `getUpdates`, `sendMessage`, `sendChatAction`),
//! over reqwest: `POST <apiBase>/bot<token>/<method>` with a JSON body, answered
//! `{"ok": true, "result": …}` or `{"ok": false, "error_code", "description", "parameters"?}`.
//! Only the fields the channel reads are decoded; the token never appears in an error (the
//! kit's [`send`] says "no answer" without the URL, which carries it).

use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::channels::kit::http::{ApiError, send, wait};

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: i64,
    #[serde(default)]
    pub is_bot: bool,
    pub username: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Chat {
    pub id: i64,
    /// `private`, `group`, `supergroup` or `channel`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub chat: Chat,
    pub from: Option<User>,
    pub text: Option<String>,
    pub caption: Option<String>,
    pub message_thread_id: Option<i64>,
    #[serde(default)]
    pub is_topic_message: bool,
    pub reply_to_message: Option<Box<Message>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Update {
    pub update_id: i64,
    pub message: Option<Message>,
}

/// A bot's client: where its API is and its token.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Client {
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
        let request = self.http.post(url).json(&body).timeout(timeout);
        let answer = send(request, ("the Bot API", method)).await?;
        let status = answer.status;
        if answer.body.is_null() {
            let why =
                format!("{method}: the Bot API answered {status} with a body that is not JSON");
            return Err(ApiError::new(status, None, why));
        }
        let body = answer.body;
        if body["ok"].as_bool() == Some(true) {
            return serde_json::from_value(body["result"].clone()).map_err(|e| {
                ApiError::new(status, None, format!("{method}: unexpected result: {e}"))
            });
        }
        let description = body["description"].as_str().unwrap_or("no description");
        Err(ApiError {
            retry_after: wait(body["parameters"]["retry_after"].as_f64()),
            ..ApiError::new(
                body["error_code"].as_u64().map_or(status, |c| c as u16),
                None,
                description,
            )
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
