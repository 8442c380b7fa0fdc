//! The REST calls the channel makes (create message, typing, get channel) over reqwest, and the
//! Gateway payloads it reads. `POST <apiBase>/channels/{id}/messages` with a JSON body and
//! `Authorization: Bot <token>`; errors come back as `{"code", "message"}`, a 429 as
//! `{"message", "retry_after", "global"}` with a `Retry-After` header. Only the fields the channel
//! reads are decoded; the token never appears in an error or a log.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::channels::kit::http::{ApiError, send, wait};

/// A Discord user (the bot itself in READY, a message's author or mentions).
#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: String,
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub bot: bool,
}

/// A MESSAGE_CREATE's message.
#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub id: String,
    pub channel_id: String,
    /// Absent in DMs.
    pub guild_id: Option<String>,
    pub author: User,
    /// Empty unless the bot has the MESSAGE_CONTENT intent (or is mentioned, or in a DM).
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub mentions: Vec<User>,
    pub referenced_message: Option<Box<Message>>,
}

/// A channel as `GET /channels/{id}` (and GUILD_CREATE, THREAD_CREATE) describe it.
#[derive(Debug, Clone, Deserialize)]
pub struct ChannelInfo {
    pub id: String,
    /// 0 text, 1 DM, 5 announcement, 10–12 threads, …
    #[serde(rename = "type")]
    pub kind: u8,
    pub parent_id: Option<String>,
    pub name: Option<String>,
}

impl ChannelInfo {
    /// An announcement, public or private thread.
    pub fn is_thread(&self) -> bool {
        matches!(self.kind, 10..=12)
    }
}

/// READY's `d`.
#[derive(Debug, Clone, Deserialize)]
pub struct Ready {
    pub session_id: String,
    pub resume_gateway_url: String,
    pub user: User,
}

/// A Gateway payload: `{"op", "d", "s", "t"}`.
#[derive(Debug, Clone, Deserialize)]
pub struct Payload {
    pub op: u8,
    #[serde(default)]
    pub d: Value,
    pub s: Option<u64>,
    pub t: Option<String>,
}

/// A bot's REST client: where the API is and its token.
#[derive(Clone)]
pub struct Rest {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Rest {
    pub fn new(http: reqwest::Client, base: &str, token: &str) -> Self {
        Self {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
        }
    }

    /// The bot token, for the Gateway's IDENTIFY and RESUME.
    pub(super) fn token(&self) -> &str {
        &self.token
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ApiError> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("Authorization", format!("Bot {}", self.token))
            .timeout(Duration::from_secs(30));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = send(request, ("the Discord API", path)).await?;
        if answer.is_success() {
            return Ok(answer.body);
        }
        let body = &answer.body;
        let message = body["message"].as_str().unwrap_or("no error message");
        Err(ApiError {
            retry_after: wait(body["retry_after"].as_f64()).or(answer.retry_after),
            ..ApiError::new(
                answer.status,
                body["code"].as_u64().map(|c| c.to_string()),
                format!("{path}: {message}"),
            )
        })
    }

    /// Posts `content` as plain text (no mentions pinged: `allowed_mentions` is empty).
    pub async fn create_message(
        &self,
        channel_id: &str,
        content: &str,
        nonce: &str,
    ) -> Result<(), ApiError> {
        let body = json!({
            "content": content, "allowed_mentions": {"parse": []},
            "nonce": nonce, "enforce_nonce": true,
        });
        let path = format!("/channels/{}/messages", segment(channel_id));
        self.call(reqwest::Method::POST, &path, Some(body))
            .await
            .map(|_| ())
    }

    /// Shows "typing…" in the channel for about ten seconds.
    pub async fn typing(&self, channel_id: &str) -> Result<(), ApiError> {
        let path = format!("/channels/{}/typing", segment(channel_id));
        self.call(reqwest::Method::POST, &path, None)
            .await
            .map(|_| ())
    }

    /// The DM channel with user `user_id` (opened if new): where a message to a user goes.
    pub async fn open_dm(&self, user_id: &str) -> Result<String, ApiError> {
        let body = json!({"recipient_id": user_id});
        let answer = self
            .call(reqwest::Method::POST, "/users/@me/channels", Some(body))
            .await?;
        match answer["id"].as_str() {
            Some(id) => Ok(id.to_string()),
            None => Err(ApiError::new(
                200,
                None,
                "/users/@me/channels: an answer without the channel id",
            )),
        }
    }

    /// The messages of `channel_id` after the message `after`, oldest first (at most `limit`,
    /// the oldest of them); one of an unexpected shape is left out.
    pub async fn messages_after(
        &self,
        channel_id: &str,
        after: i64,
        limit: u8,
    ) -> Result<Vec<Message>, ApiError> {
        let channel = segment(channel_id);
        let path = format!("/channels/{channel}/messages?after={after}&limit={limit}");
        let answer = self.call(reqwest::Method::GET, &path, None).await?;
        let Value::Array(items) = answer else {
            return Err(ApiError::new(200, None, format!("{path}: not a list")));
        };
        let mut messages: Vec<Message> = items
            .into_iter()
            .filter_map(|item| serde_json::from_value(item).ok())
            .collect();
        messages.sort_by_key(|m| m.id.parse::<i64>().unwrap_or(0));
        Ok(messages)
    }

    /// What kind of channel `channel_id` is (a thread and its parent, its name).
    pub async fn channel(&self, channel_id: &str) -> Result<ChannelInfo, ApiError> {
        let path = format!("/channels/{}", segment(channel_id));
        let answer = self.call(reqwest::Method::GET, &path, None).await?;
        serde_json::from_value(answer).map_err(|e| {
            ApiError::new(200, None, format!("{path}: unexpected channel object: {e}"))
        })
    }
}

/// A channel id as a path segment: snowflakes are digits; anything else is kept out of the path.
fn segment(id: &str) -> String {
    id.chars().filter(char::is_ascii_alphanumeric).collect()
}
