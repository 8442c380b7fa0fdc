//! signal-cli's HTTP daemon as this channel uses it: `POST /api/v1/rpc` (JSON-RPC 2.0: `send`,
//! `sendTyping`), `GET /api/v1/events` (Server-Sent Events, `event: receive`, each with an
//! `id` the daemon replays after on `Last-Event-ID`) and the envelopes those events carry.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::sse::{Decoder, Event, NotUtf8};

/// The events `chunk` completes, fed to `reader` (`crate::sse`: keep-alive comments dropped, the
/// last event id carried). A line that is not UTF-8 is left out and its event read without it:
/// without a `data` line its JSON is most often malformed, and skipped where it is read;
/// without its `event` line it is a `message`, read as a `receive`; without its `id` line it
/// carries the id before, so a reconnection asks for it again (handled once all the same).
pub(super) fn events(reader: &mut Decoder, chunk: &[u8]) -> Vec<Event> {
    reader.feed(chunk);
    let mut events = Vec::new();
    loop {
        match reader.next_event() {
            Ok(Some(event)) => events.push(event),
            Ok(None) => return events,
            Err(NotUtf8) => {
                tracing::warn!("signal: a line of the event stream is not UTF-8; left out")
            }
        }
    }
}

/// Whether `event` is a `receive` (an unnamed event, the format's `message`, is taken as one, as
/// signal-cli's events were read before the shared framer named them).
pub(super) fn is_receive(event: &Event) -> bool {
    matches!(event.event.as_str(), "receive" | "message")
}

/// The data of a `receive` event.
#[derive(Debug, Deserialize)]
pub(super) struct Received {
    pub envelope: Envelope,
}

/// A message's envelope (only `dataMessage`s are read; receipts, typing and sync messages
/// leave it `None`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Envelope {
    pub source: Option<String>,
    pub source_number: Option<String>,
    pub source_uuid: Option<String>,
    pub source_name: Option<String>,
    /// When the sender sent it (ms): with the sender, the message's identity.
    #[serde(default)]
    pub timestamp: i64,
    pub data_message: Option<DataMessage>,
}

impl Envelope {
    /// The sender as signal-cli addresses them: the number when known, else the UUID.
    pub fn sender(&self) -> Option<&str> {
        self.source_number
            .as_deref()
            .or(self.source_uuid.as_deref())
            .or(self.source.as_deref())
            .filter(|s| !s.is_empty())
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DataMessage {
    pub message: Option<String>,
    pub group_info: Option<GroupInfo>,
    #[serde(default)]
    pub mentions: Vec<Mention>,
    pub quote: Option<Quote>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GroupInfo {
    pub group_id: String,
}

/// A mention: the placeholder U+FFFC at `start` (UTF-16 units) of the text stands for it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Mention {
    pub name: Option<String>,
    pub number: Option<String>,
    pub uuid: Option<String>,
    #[serde(default)]
    pub start: usize,
}

/// The message a message quotes (replies to).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Quote {
    pub author: Option<String>,
    pub author_number: Option<String>,
    pub author_uuid: Option<String>,
}

/// A JSON-RPC call that did not succeed, or a send some recipient did not take.
#[derive(Debug, Clone)]
pub(crate) enum RpcError {
    /// No answer, or an HTTP error status (0: no answer).
    Http(u16, String),
    /// A JSON-RPC error object.
    Rpc(i64, String),
    /// The send's result for a recipient was not `SUCCESS`: its `type`.
    Recipient(String),
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Http(0, why) => write!(f, "the signal-cli daemon did not answer: {why}"),
            Self::Http(status, why) => write!(f, "the signal-cli daemon answered {status}: {why}"),
            Self::Rpc(code, message) => write!(f, "signal-cli error {code}: {message}"),
            Self::Recipient(kind) => write!(f, "signal-cli could not deliver: {kind}"),
        }
    }
}

/// The daemon's HTTP interface.
#[derive(Clone)]
pub(crate) struct Daemon {
    http: reqwest::Client,
    base: String,
}

/// How long the event stream may stay silent (the daemon sends a keep-alive every 15 s).
pub(super) const SILENCE: Duration = Duration::from_secs(60);

impl Daemon {
    pub fn new(http: reqwest::Client, base: &str) -> Self {
        Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
        }
    }

    /// Where the daemon is, for logs and status (no secret: the daemon has none).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// One JSON-RPC call; its result, or why not.
    pub async fn call(&self, method: &str, params: Value, id: &str) -> Result<Value, RpcError> {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id});
        let sent = self
            .http
            .post(format!("{}/api/v1/rpc", self.base))
            .json(&body)
            .send()
            .await;
        let response =
            sent.map_err(|e| RpcError::Http(0, crate::channels::why_no_answer(&e).into()))?;
        let status = response.status();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        if let Some(error) = answer.get("error").filter(|e| !e.is_null()) {
            let message = error["message"]
                .as_str()
                .unwrap_or("an error without a message");
            return Err(RpcError::Rpc(
                error["code"].as_i64().unwrap_or(0),
                message.to_owned(),
            ));
        }
        if !status.is_success() {
            let reason = status.canonical_reason().unwrap_or("an error status");
            return Err(RpcError::Http(status.as_u16(), reason.to_owned()));
        }
        Ok(answer["result"].clone())
    }

    /// `send` of `text` to a recipient or a group (`to`, `group`); fails when a recipient's
    /// result is not `SUCCESS`.
    pub async fn send(
        &self,
        (to, group): (&str, bool),
        text: &str,
        id: &str,
    ) -> Result<(), RpcError> {
        let mut params = json!({"message": text});
        address(&mut params, to, group);
        let result = self.call("send", params, id).await?;
        let failed = result["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["type"].as_str())
            .find(|kind| *kind != "SUCCESS");
        match failed {
            Some(kind) => Err(RpcError::Recipient(kind.to_owned())),
            None => Ok(()),
        }
    }

    /// `sendTyping` (the indicator lasts about 15 s on the other side).
    pub async fn typing(&self, (to, group): (&str, bool), id: &str) -> Result<(), RpcError> {
        let mut params = json!({});
        address(&mut params, to, group);
        self.call("sendTyping", params, id).await.map(|_| ())
    }

    /// `GET /api/v1/check`: the daemon runs.
    pub async fn check(&self) -> Result<(), RpcError> {
        let url = format!("{}/api/v1/check", self.base);
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| RpcError::Http(0, crate::channels::why_no_answer(&e).into()))?;
        match response.status() {
            s if s.is_success() => Ok(()),
            s => Err(RpcError::Http(
                s.as_u16(),
                "not a signal-cli daemon's check".into(),
            )),
        }
    }

    /// Opens the event stream, after `last` when the door has seen events before.
    pub async fn events(&self, last: Option<&str>) -> Result<reqwest::Response, RpcError> {
        let mut request = self
            .http
            .get(format!("{}/api/v1/events", self.base))
            .header(reqwest::header::ACCEPT, "text/event-stream")
            // The stream has no end: silence is watched instead ([`SILENCE`]).
            .timeout(Duration::from_secs(365 * 24 * 3600));
        if let Some(last) = last {
            request = request.header("Last-Event-ID", last);
        }
        let response = request
            .send()
            .await
            .map_err(|e| RpcError::Http(0, crate::channels::why_no_answer(&e).into()))?;
        match response.status() {
            s if s.is_success() => Ok(response),
            s => Err(RpcError::Http(
                s.as_u16(),
                s.canonical_reason().unwrap_or("an error status").into(),
            )),
        }
    }
}

/// `recipient: [to]` or `groupId: to`.
fn address(params: &mut Value, to: &str, group: bool) {
    match group {
        true => params["groupId"] = json!(to),
        false => params["recipient"] = json!([to]),
    }
}
