//! The Web API calls the channel makes (`auth.test`, `apps.connections.open`,
//! `chat.postMessage`) over reqwest, and the Socket Mode frames it reads. Each call is a `POST
//! <apiBase>/<method>` with `Authorization: Bearer <token>` (the bot token, or the app-level
//! token for `apps.connections.open`) and a JSON body. Slack answers most errors with HTTP 200
//! and `{"ok": false, "error": "<code>"}`; a rate limit is HTTP 429 with a `Retry-After` header
//! (seconds). Only the fields the channel reads are decoded; no token appears in an error or a log.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::channels::kit::http::{ApiError, send};

/// `auth.test`'s answer: who the bot is.
#[derive(Debug, Clone, Deserialize)]
pub struct Me {
    /// The bot's user id: its mentions are `<@user_id>`, its own messages carry it.
    pub user_id: String,
    /// The app's bot id: its own messages carry it too (some without a `user`).
    pub bot_id: Option<String>,
    #[serde(default)]
    pub user: String,
}

/// One Socket Mode frame: `hello`, `disconnect`, or an envelope (`events_api`, …) to
/// acknowledge by its `envelope_id`.
#[derive(Debug, Clone, Deserialize)]
pub struct Frame {
    #[serde(rename = "type")]
    pub kind: String,
    pub envelope_id: Option<String>,
    #[serde(default)]
    pub payload: Value,
    /// A redelivery's attempt number (0 the first time).
    pub retry_attempt: Option<u64>,
    pub retry_reason: Option<String>,
    /// `disconnect`'s reason (`refresh_requested`, `warning`, `link_disabled`).
    pub reason: Option<String>,
}

/// A `message` or `app_mention` event (`payload.event` of an `events_api` envelope).
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: String,
    pub subtype: Option<String>,
    /// The conversation id (`C…` channel, `G…` private, `D…` DM).
    pub channel: String,
    /// `im` (a DM), `channel`, `group`, `mpim`; absent in `app_mention`.
    pub channel_type: Option<String>,
    /// The author's user id (absent in some bot and system messages).
    pub user: Option<String>,
    /// Set on a bot's message.
    pub bot_id: Option<String>,
    #[serde(default)]
    pub text: String,
    /// The message's id in its conversation.
    pub ts: String,
    /// The thread's parent `ts`, in a thread (equal to `ts` on the parent itself).
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

    /// One method call: its answer when `ok`, else Slack's error (a 429's code is
    /// `ratelimited`).
    async fn call(&self, method: &str, body: Value) -> Result<Value, ApiError> {
        let request = self.request(method).json(&body);
        self.answer(method, request).await
    }

    fn request(&self, method: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}/{method}", self.base))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(30))
    }

    /// The answer of one method call (see [`WebApi::call`]).
    async fn answer(
        &self,
        method: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Value, ApiError> {
        let answer = send(request, ("the Slack API", method)).await?;
        let status = answer.status;
        if status == 429 {
            return Err(ApiError {
                retry_after: answer.retry_after.or(Some(Duration::from_secs(1))),
                ..ApiError::new(status, Some("ratelimited".into()), method)
            });
        }
        if answer.body["ok"] == json!(true) && answer.is_success() {
            return Ok(answer.body);
        }
        let code = match answer.body["error"].as_str() {
            Some(code) => code.to_owned(),
            None => format!("HTTP {status} without an error code"),
        };
        Err(ApiError::new(status, Some(code), method))
    }

    /// `auth.test` with the bot token: the bot's own ids.
    pub async fn auth_test(&self) -> Result<Me, ApiError> {
        let answer = self.call("auth.test", json!({})).await?;
        serde_json::from_value(answer).map_err(|e| {
            let why = format!("auth.test: an answer without the bot's user id ({e})");
            ApiError::new(200, None, why)
        })
    }

    /// `apps.connections.open` with the app-level token: a Socket Mode WebSocket URL.
    pub async fn open_connection(&self) -> Result<String, ApiError> {
        let answer = self.call("apps.connections.open", json!({})).await?;
        match answer["url"].as_str() {
            Some(url) => Ok(url.to_string()),
            None => Err(ApiError::new(
                200,
                None,
                "apps.connections.open: an answer without the url",
            )),
        }
    }

    /// `conversations.history`: the messages of `channel` after the message `oldest` (a `ts`),
    /// oldest first, at most `limit` (the newest are left for the next look). A read method:
    /// its arguments go as a form, as Slack reads them; a message of an unexpected shape is left
    /// out.
    pub async fn history(
        &self,
        channel: &str,
        oldest: &str,
        limit: u32,
    ) -> Result<Vec<Event>, ApiError> {
        let safe = |s: &str| -> String {
            s.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
                .collect()
        };
        let (channel, oldest) = (safe(channel), safe(oldest));
        let form = format!("channel={channel}&oldest={oldest}&limit={limit}&inclusive=false");
        let method = "conversations.history";
        let request = self
            .request(method)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form);
        let answer = self.answer(method, request).await?;
        let items = answer["messages"].as_array().cloned().unwrap_or_default();
        let mut events: Vec<Event> = items
            .into_iter()
            .filter_map(|mut item| {
                // History's messages do not name their conversation.
                item["channel"] = json!(channel);
                serde_json::from_value(item).ok()
            })
            .collect();
        events.sort_by_key(|e| ts_position(&e.ts));
        Ok(events)
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

/// A message's `ts` (`"1700000000.000100"`) as one number (microseconds), for a cursor; 0 when
/// it is not one.
pub fn ts_position(ts: &str) -> i64 {
    let (seconds, micros) = ts.split_once('.').unwrap_or((ts, "0"));
    let micros = format!("{micros:0<6}");
    let (Ok(seconds), Ok(micros)) = (seconds.parse::<i64>(), micros[..6].parse::<i64>()) else {
        return 0;
    };
    seconds.saturating_mul(1_000_000).saturating_add(micros)
}

/// A cursor's position as a `ts` (the inverse of [`ts_position`]).
pub fn ts_of(position: i64) -> String {
    format!("{}.{:06}", position / 1_000_000, position % 1_000_000)
}
