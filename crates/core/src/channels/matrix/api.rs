//! The client-server API calls the channel makes, over reqwest: `/login`, `/sync`, `/join`,
//! `/rooms/{id}/send`, `/rooms/{id}/typing`, `/rooms/{id}/joined_members` and the bot's display
//! name. Errors come back as `{"errcode", "error"}` (a 429 `M_LIMIT_EXCEEDED` with
//! `retry_after_ms`). Only the fields the channel reads are decoded; the access token and the
//! password never appear in an error or a log.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

pub(super) use crate::channels::kit::http::ApiError;
use crate::channels::kit::http::{send, wait};

/// The device id a password login asks for: the same on every login, so that the homeserver
/// keeps one device for the bot and a retried send's transaction id still names its first try.
const DEVICE_ID: &str = "SWITCHBOARD";

/// The homeserver does not know the token (or the password login was refused).
pub fn is_refusal(e: &ApiError) -> bool {
    let refused = [
        "M_UNKNOWN_TOKEN",
        "M_MISSING_TOKEN",
        "M_FORBIDDEN",
        "M_USER_DEACTIVATED",
    ];
    refused.iter().any(|code| e.is(code)) && matches!(e.status, 401 | 403)
}

/// One `/sync` answer: the rooms' new events and the next position.
#[derive(Debug, Default, Deserialize)]
pub struct Sync {
    pub next_batch: String,
    #[serde(default)]
    pub rooms: Rooms,
}

#[derive(Debug, Default, Deserialize)]
pub struct Rooms {
    #[serde(default)]
    pub join: BTreeMap<String, JoinedRoom>,
    #[serde(default)]
    pub invite: BTreeMap<String, InvitedRoom>,
}

#[derive(Debug, Default, Deserialize)]
pub struct JoinedRoom {
    #[serde(default)]
    pub timeline: Timeline,
}

#[derive(Debug, Default, Deserialize)]
pub struct Timeline {
    #[serde(default)]
    pub events: Vec<Event>,
}

#[derive(Debug, Default, Deserialize)]
pub struct InvitedRoom {
    #[serde(default)]
    pub invite_state: InviteState,
}

#[derive(Debug, Default, Deserialize)]
pub struct InviteState {
    #[serde(default)]
    pub events: Vec<Event>,
}

/// A room event (in a timeline or an invite's stripped state).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Event {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub event_id: String,
    #[serde(default)]
    pub sender: String,
    pub state_key: Option<String>,
    #[serde(default)]
    pub content: Value,
    /// What the homeserver adds (`prev_content` of a state event).
    #[serde(default)]
    pub unsigned: Value,
}

/// The bot's client: its homeserver, its user, and how it gets an access token.
pub struct Client {
    http: reqwest::Client,
    base: String,
    user_id: String,
    password: Option<String>,
    /// The token in use: the configured one, or the last password login's.
    token: tokio::sync::Mutex<Option<Arc<str>>>,
}

impl Client {
    pub fn new(
        http: reqwest::Client,
        homeserver: &str,
        user_id: &str,
        (token, password): (Option<String>, Option<String>),
    ) -> Self {
        Self {
            http,
            base: homeserver.trim_end_matches('/').to_string(),
            user_id: user_id.to_string(),
            password,
            token: tokio::sync::Mutex::new(token.map(Arc::from)),
        }
    }

    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    /// The access token: the configured one, or one from a password login (made once).
    async fn token(&self) -> Result<Arc<str>, ApiError> {
        let mut token = self.token.lock().await;
        if let Some(token) = token.as_ref() {
            return Ok(token.clone());
        }
        let Some(password) = &self.password else {
            let why = "no access token and no password to log in with";
            return Err(ApiError::new(0, None, why));
        };
        let body = json!({
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": self.user_id},
            "password": password,
            "device_id": DEVICE_ID,
            "initial_device_display_name": "switchboard",
        });
        let answer = self.call(reqwest::Method::POST, "/login", None, Some(body));
        let answer = answer.await?;
        let fresh: Arc<str> = match answer["access_token"].as_str() {
            Some(t) => Arc::from(t),
            None => {
                let why = "/login: an answer without access_token";
                return Err(ApiError::new(200, None, why));
            }
        };
        *token = Some(fresh.clone());
        Ok(fresh)
    }

    /// Forgets a token the homeserver refused, when a password can get another one.
    pub async fn forget_token(&self) {
        if self.password.is_some() {
            *self.token.lock().await = None;
        }
    }

    async fn authed(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        wait: Duration,
    ) -> Result<Value, ApiError> {
        let token = self.token().await?;
        let request = self.call(method, path, Some((&token, wait)), body);
        let answer = request.await;
        if let Err(e) = &answer
            && e.is("M_UNKNOWN_TOKEN")
        {
            self.forget_token().await;
        }
        answer
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        auth: Option<(&str, Duration)>,
        body: Option<Value>,
    ) -> Result<Value, ApiError> {
        let held = auth.map_or(Duration::ZERO, |(_, held)| held);
        let url = format!("{}/_matrix/client/v3{path}", self.base);
        let mut request = self
            .http
            .request(method, url)
            .timeout(Duration::from_secs(30) + held);
        if let Some((token, _)) = auth {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        // The path without its query (a sync's `since`, a filter).
        let name = path.split('?').next().unwrap_or(path);
        let answer = send(request, ("the homeserver", name)).await?;
        if answer.is_success() {
            return Ok(answer.body);
        }
        let body = &answer.body;
        let errcode = body["errcode"].as_str().map(str::to_string);
        let message = body["error"].as_str().unwrap_or("no error message");
        Err(ApiError {
            retry_after: body["retry_after_ms"]
                .as_f64()
                .and_then(|ms| wait(Some(ms / 1000.0))),
            ..ApiError::new(answer.status, errcode, format!("{name}: {message}"))
        })
    }

    /// `GET /sync`: the events after `since` (all rooms' state and no timeline when `None`,
    /// for a first sync), waiting up to `timeout` for something new.
    pub async fn sync(&self, since: Option<&str>, timeout: Duration) -> Result<Sync, ApiError> {
        let limit = if since.is_some() { 100 } else { 0 };
        let filter = json!({
            "presence": {"not_types": ["*"]},
            "account_data": {"not_types": ["*"]},
            "room": {
                "timeline": {"limit": limit},
                "state": {"lazy_load_members": true},
                "ephemeral": {"not_types": ["*"]},
                "account_data": {"not_types": ["*"]},
            },
        });
        let mut path = format!(
            "/sync?timeout={}&filter={}",
            timeout.as_millis(),
            encode(&filter.to_string())
        );
        if let Some(since) = since {
            path.push_str(&format!("&since={}", encode(since)));
        }
        let answer = self
            .authed(reqwest::Method::GET, &path, None, timeout)
            .await?;
        serde_json::from_value(answer)
            .map_err(|e| ApiError::new(200, None, format!("/sync: unexpected answer: {e}")))
    }

    /// `GET /account/whoami`: checks the token (or logs in) and answers the user it names.
    pub async fn whoami(&self) -> Result<String, ApiError> {
        let answer = self.authed(
            reqwest::Method::GET,
            "/account/whoami",
            None,
            Duration::ZERO,
        );
        let answer = answer.await?;
        Ok(answer["user_id"].as_str().unwrap_or_default().to_string())
    }

    /// The bot's display name, if it has one.
    pub async fn display_name(&self) -> Option<String> {
        let path = format!("/profile/{}/displayname", encode(&self.user_id));
        let answer = self.authed(reqwest::Method::GET, &path, None, Duration::ZERO);
        let answer = answer.await.ok()?;
        answer["displayname"].as_str().map(str::to_string)
    }

    /// `POST /join/{roomId}`: accepts an invitation.
    pub async fn join(&self, room: &str) -> Result<(), ApiError> {
        let path = format!("/join/{}", encode(room));
        let answer = self.authed(
            reqwest::Method::POST,
            &path,
            Some(json!({})),
            Duration::ZERO,
        );
        answer.await.map(|_| ())
    }

    /// How many members have joined `room`.
    pub async fn joined_members(&self, room: &str) -> Result<usize, ApiError> {
        let path = format!("/rooms/{}/joined_members", encode(room));
        let answer = self.authed(reqwest::Method::GET, &path, None, Duration::ZERO);
        let answer = answer.await?;
        Ok(answer["joined"].as_object().map_or(0, |m| m.len()))
    }

    /// `PUT /rooms/{roomId}/send/m.room.message/{txnId}`: `content` as the message; the same
    /// `txn` again is answered with the first event and sends nothing.
    pub async fn send(&self, room: &str, txn: &str, content: Value) -> Result<(), ApiError> {
        let path = format!(
            "/rooms/{}/send/m.room.message/{}",
            encode(room),
            encode(txn)
        );
        let answer = self.authed(reqwest::Method::PUT, &path, Some(content), Duration::ZERO);
        answer.await.map(|_| ())
    }

    /// Shows the bot as typing in `room` for `lasting`.
    pub async fn typing(&self, room: &str, lasting: Duration) -> Result<(), ApiError> {
        let path = format!("/rooms/{}/typing/{}", encode(room), encode(&self.user_id));
        let body = json!({"typing": true, "timeout": lasting.as_millis() as u64});
        let answer = self.authed(reqwest::Method::PUT, &path, Some(body), Duration::ZERO);
        answer.await.map(|_| ())
    }
}

/// `text` as one URL path segment or query value (room ids hold `!` and `:`, tokens anything).
pub(super) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char);
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}
