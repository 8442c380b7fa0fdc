//! The Web API calls the channel makes (`auth.test`, `apps.connections.open`,
//! `chat.postMessage`) over reqwest, and the Socket Mode frames it reads. Each call is a `POST
//! <apiBase>/<method>` with `Authorization: Bearer <token>` (the bot token, or the app-level
//! token for `apps.connections.open`) and a JSON body. Slack answers most errors with HTTP 200
//! and `{"ok": false, "error": "<code>"}`; a rate limit is HTTP 429 with a `Retry-After` header
//! (seconds). Only the fields the channel reads are decoded; no token appears in an error or a log.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

/// Why a call failed.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status, 0 when no answer came.
    pub status: u16,
    /// Slack's `error` code (`channel_not_found`, `invalid_auth`, `ratelimited`), or what went
    /// wrong on the way.
    pub error: String,
    /// A 429's `Retry-After`.
    pub retry_after: Option<Duration>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            0 | 200 => write!(f, "{}", self.error),
            status => write!(f, "{status} {}", self.error),
        }
    }
}

/// `auth.test`'s answer: who the bot is.
#[derive(Debug, Clone, Deserialize)]
pub struct Me {
    /// The bot's user id: its mentions are `<@user_id>`, its own messages carry it.
    pub user_id: String,
    #[serde(default)]
    pub user: String,
}

/// One Socket Mode frame: `hello`, `disconnect`, or an envelope (`events_api`, …) to
/// acknowledge by its `envelope_id`.
#[derive(Debug, Clone, Deserialize)]
pub struct Frame {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub envelope_id: Option<String>,
    #[serde(default)]
    pub payload: Value,
    /// A redelivery's attempt number (0 the first time).
    #[serde(default)]
    pub retry_attempt: Option<u64>,
    #[serde(default)]
    pub retry_reason: Option<String>,
    /// `disconnect`'s reason (`refresh_requested`, `warning`, `link_disabled`).
    #[serde(default)]
    pub reason: Option<String>,
}

/// A `message` or `app_mention` event (`payload.event` of an `events_api` envelope).
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub subtype: Option<String>,
    /// The conversation id (`C…` channel, `G…` private, `D…` DM).
    pub channel: String,
    /// `im` (a DM), `channel`, `group`, `mpim`; absent in `app_mention`.
    #[serde(default)]
    pub channel_type: Option<String>,
    /// The author's user id (absent in some bot and system messages).
    #[serde(default)]
    pub user: Option<String>,
    /// Set on a bot's message.
    #[serde(default)]
    pub bot_id: Option<String>,
    #[serde(default)]
    pub text: String,
    /// The message's id in its conversation.
    pub ts: String,
    /// The thread's parent `ts`, in a thread (equal to `ts` on the parent itself).
    #[serde(default)]
    pub thread_ts: Option<String>,
}

/// An app's Web API client: where the API is and a token.
#[derive(Clone)]
pub struct WebApi {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl WebApi {
    pub fn new(http: reqwest::Client, base: &str, token: &str) -> Self {
        Self {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
        }
    }

    /// One method call: its answer when `ok`, else Slack's error.
    async fn call(&self, method: &str, body: Value) -> Result<Value, ApiError> {
        let failed = |status, error: String| ApiError {
            status,
            error: format!("{method}: {error}"),
            retry_after: None,
        };
        let response = self
            .http
            .post(format!("{}/{method}", self.base))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(30))
            .json(&body)
            .send()
            .await
            .map_err(|e| {
                failed(
                    0,
                    format!(
                        "no answer from the Slack API ({})",
                        crate::channels::why_no_answer(&e)
                    ),
                )
            })?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s.min(3600)));
        let bytes = response.bytes().await.unwrap_or_default();
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status == 429 {
            return Err(ApiError {
                retry_after: retry_after.or(Some(Duration::from_secs(1))),
                ..failed(status, "ratelimited".into())
            });
        }
        if answer["ok"] == json!(true) && (200..300).contains(&status) {
            return Ok(answer);
        }
        let error = answer["error"].as_str().map_or_else(
            || format!("HTTP {status} without an error code"),
            str::to_string,
        );
        Err(failed(status, error))
    }

    /// `auth.test` with the bot token: the bot's own ids.
    pub async fn auth_test(&self) -> Result<Me, ApiError> {
        let answer = self.call("auth.test", json!({})).await?;
        serde_json::from_value(answer).map_err(|e| ApiError {
            status: 200,
            error: format!("auth.test: an answer without the bot's user id ({e})"),
            retry_after: None,
        })
    }

    /// `apps.connections.open` with the app-level token: a Socket Mode WebSocket URL.
    pub async fn open_connection(&self) -> Result<String, ApiError> {
        let answer = self.call("apps.connections.open", json!({})).await?;
        match answer["url"].as_str() {
            Some(url) => Ok(url.to_string()),
            None => Err(ApiError {
                status: 200,
                error: "apps.connections.open: an answer without the url".into(),
                retry_after: None,
            }),
        }
    }

    /// `chat.postMessage` of plain `text` (in the thread `thread_ts`, when given). `channel`
    /// may be a user id: Slack posts it in the app's DM with them.
    pub async fn post_message(
        &self,
        channel: &str,
        text: &str,
        thread_ts: Option<&str>,
    ) -> Result<(), ApiError> {
        let mut body = json!({"channel": channel, "text": text});
        if let Some(ts) = thread_ts {
            body["thread_ts"] = json!(ts);
        }
        self.call("chat.postMessage", body).await.map(|_| ())
    }
}
