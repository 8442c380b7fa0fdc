//! [`FakeWhatsApp`]: the WhatsApp Business Cloud API's Graph side on `127.0.0.1:0`, and the
//! platform's side of the webhook: notifications in the documented shape, signed as the
//! platform signs them.
//!
//! - `POST /<phone-number-id>/messages` (`{messaging_product, recipient_type, to, type: "text",
//!   text: {body}}`), checking `Authorization: Bearer <token>` (401 with Graph error code 190
//!   otherwise) and the body's limit of 4,096 characters (400, code 100). A queued failure
//!   ([`FakeWhatsApp::fail_next`]) answers the next send with 429 (code 130429, `Retry-After`),
//!   500, or 400 code 131047 (outside the 24-hour window). Every call is recorded; a success
//!   answers `{messaging_product, contacts, messages: [{id: "wamid.out…"}]}`.
//! - `GET /<phone-number-id>` (the same token check): the number's node, `{id, display_phone_number,
//!   verified_name}`.
//! - [`FakeWhatsApp::text`] and [`FakeWhatsApp::group_text`] build a notification body with
//!   one message (a new `wamid` each), [`sign`] its `X-Hub-Signature-256` header.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::fake::FakeServer;

/// The served number's id and display number.
pub const PHONE_NUMBER_ID: &str = "106540352242922";
pub const DISPLAY_NUMBER: &str = "15550001111";

/// How the next send fails.
#[derive(Debug, Clone, PartialEq)]
pub enum WhatsAppFailure {
    /// 429, Graph code 130429, `Retry-After: N`.
    TooManyRequests { retry_after: u64 },
    /// 500.
    Server,
    /// 400, Graph code 131047: the user last wrote more than 24 hours ago.
    OutsideWindow,
}

/// One send the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatsAppCall {
    pub phone_number_id: String,
    pub body: Value,
    /// Answered with an error.
    pub refused: bool,
}

#[derive(Default)]
struct FakeState {
    calls: Vec<WhatsAppCall>,
    failures: VecDeque<WhatsAppFailure>,
    next: u64,
}

/// The routes' shared part: the access token, and the state.
type Shared = crate::fake::Shared<String, FakeState>;

/// The fake Graph API (see the module doc).
pub struct FakeWhatsApp {
    server: FakeServer<String, FakeState>,
}

impl FakeWhatsApp {
    /// Serves numbers whose access token is `token` on `127.0.0.1:0`.
    ///
    /// # Panics
    /// If the loopback listener cannot be bound.
    pub async fn start(token: &str) -> FakeWhatsApp {
        let routes = Router::new()
            .route("/{number}/messages", post(send))
            .route("/{number}", get(number));
        let state = FakeState::default();
        let server = FakeServer::start("FakeWhatsApp", token.to_owned(), state, routes).await;
        FakeWhatsApp { server }
    }

    /// The `apiBase` to configure.
    pub fn api_base(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// The next send fails with `failure` (queued in order).
    pub fn fail_next(&self, failure: WhatsAppFailure) {
        self.server.lock().failures.push_back(failure);
    }

    pub fn calls(&self) -> Vec<WhatsAppCall> {
        self.server.lock().calls.clone()
    }

    /// The texts sent successfully, in order: (to, body).
    pub fn sent(&self) -> Vec<(String, String)> {
        sent_of(&self.calls())
    }

    /// Waits until `check` holds for the calls so far.
    pub async fn wait_for(&self, mut check: impl FnMut(&[WhatsAppCall]) -> bool) {
        self.server.wait(|| check(&self.calls())).await;
    }

    /// Waits until `n` texts were sent; answers them.
    pub async fn wait_sent(&self, n: usize) -> Vec<(String, String)> {
        self.wait_for(|calls| sent_of(calls).len() >= n).await;
        self.sent()
    }

    /// A notification with one text message from `from` (a WhatsApp id) named `name`, to the
    /// fake's number, sent at `at` (seconds); answers (body, message id).
    pub fn text(&self, from: &str, name: &str, text: &str, at: i64) -> (Vec<u8>, String) {
        self.notification(
            json!({"from": from, "type": "text", "text": {"body": text}}),
            name,
            at,
        )
    }

    /// The same in group `group`, mentioning the number (`@<display number>`) when `mention`.
    pub fn group_text(
        &self,
        (group, from, name): (&str, &str, &str),
        text: &str,
        mention: bool,
        at: i64,
    ) -> (Vec<u8>, String) {
        let text = match mention {
            true => format!("@{DISPLAY_NUMBER} {text}"),
            false => text.to_owned(),
        };
        let message =
            json!({"from": from, "group_id": group, "type": "text", "text": {"body": text}});
        self.notification(message, name, at)
    }

    fn notification(&self, mut message: Value, name: &str, at: i64) -> (Vec<u8>, String) {
        let id = {
            let mut state = self.server.lock();
            state.next += 1;
            format!("wamid.in{:08}", state.next)
        };
        message["id"] = json!(id);
        message["timestamp"] = json!(at.to_string());
        let from = message["from"].clone();
        let body = json!({
            "object": "whatsapp_business_account",
            "entry": [{"id": "102290129340398", "changes": [{"field": "messages", "value": {
                "messaging_product": "whatsapp",
                "metadata": {"display_phone_number": DISPLAY_NUMBER, "phone_number_id": PHONE_NUMBER_ID},
                "contacts": [{"profile": {"name": name}, "wa_id": from}],
                "messages": [message],
            }}]}],
        });
        (body.to_string().into_bytes(), id)
    }

    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// `X-Hub-Signature-256` of `body` with the app secret `secret`: `sha256=<hex HMAC-SHA256>`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let tag = ring::hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// The texts among `calls` that were sent, in order: (to, body).
pub fn sent_of(calls: &[WhatsAppCall]) -> Vec<(String, String)> {
    calls
        .iter()
        .filter(|c| !c.refused)
        .map(|c| {
            let to = c.body["to"].as_str().unwrap_or_default().to_owned();
            let text = c.body["text"]["body"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (to, text)
        })
        .collect()
}

fn graph_error(status: StatusCode, code: u64, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "AbCdEf"}});
    (status, axum::Json(body)).into_response()
}

/// The Graph API's answer to a request without the access token (error 190), if it has not.
fn refused(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    let expected = format!("Bearer {}", shared.config);
    let given = headers.get("authorization").and_then(|v| v.to_str().ok());
    (given != Some(expected.as_str()))
        .then(|| graph_error(StatusCode::UNAUTHORIZED, 190, "Invalid OAuth access token."))
}

/// `GET /{phone-number-id}`: the number's node (what `switchboard doctor` asks of the token).
async fn number(
    State(shared): State<Arc<Shared>>,
    Path(number): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refused(&shared, &headers) {
        return refused;
    }
    let body = json!({"id": number, "display_phone_number": DISPLAY_NUMBER, "verified_name": "Switchboard Test"});
    axum::Json(body).into_response()
}

async fn send(
    State(shared): State<Arc<Shared>>,
    Path(number): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Some(refused) = refused(&shared, &headers) {
        return refused;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let failure = shared.lock().failures.pop_front();
    let too_long = body["text"]["body"]
        .as_str()
        .is_some_and(|t| t.chars().count() > 4096);
    shared.lock().calls.push(WhatsAppCall {
        phone_number_id: number,
        body: body.clone(),
        refused: failure.is_some() || too_long,
    });
    shared.bump();
    match failure {
        Some(WhatsAppFailure::TooManyRequests { retry_after }) => {
            let mut response = graph_error(
                StatusCode::TOO_MANY_REQUESTS,
                130_429,
                "(#130429) Rate limit hit",
            );
            if let Ok(value) = retry_after.to_string().parse() {
                response.headers_mut().insert("retry-after", value);
            }
            return response;
        }
        Some(WhatsAppFailure::Server) => {
            return graph_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                1,
                "An unknown error occurred",
            );
        }
        Some(WhatsAppFailure::OutsideWindow) => {
            return graph_error(
                StatusCode::BAD_REQUEST,
                131_047,
                "Re-engagement message: more than 24 hours have passed since the customer last replied",
            );
        }
        None => {}
    }
    if too_long {
        return graph_error(
            StatusCode::BAD_REQUEST,
            100,
            "(#100) Param text['body'] must be at most 4096 characters long.",
        );
    }
    let id = {
        let mut state = shared.lock();
        state.next += 1;
        format!("wamid.out{:08}", state.next)
    };
    axum::Json(json!({
        "messaging_product": "whatsapp",
        "contacts": [{"input": body["to"], "wa_id": body["to"]}],
        "messages": [{"id": id}],
    }))
    .into_response()
}
