//! [`FakeA2a`]: a small A2A 1.0 remote (JSON-RPC binding) on `127.0.0.1:0` for the failure
//! cases of switchboard's A2A client that the official SDK's server cannot be made to show on
//! demand: a refusal, 5xx answers, a task that keeps working until the test lets it finish.
//! It records every `SendMessage` it took (its `messageId`s count sends) and every header pair
//! (`A2A-Version`, `Authorization`) it saw. The wire shapes are those of `a2a-sdk` 1.3.0 (the
//! key test, `a2a_client.rs`, runs that SDK itself).

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::fake::FakeServer;

/// A fake remote A2A agent.
pub struct FakeA2a {
    server: FakeServer<Option<String>, FakeState>,
}

/// The routes' shared part: the bearer token calls must carry (if any), and the state (changed
/// on every JSON-RPC call).
type Shared = crate::fake::Shared<Option<String>, FakeState>;

#[derive(Default)]
struct FakeState {
    /// Every `SendMessage`'s `params.message`, in order.
    sends: Vec<Value>,
    /// (`A2A-Version`, `Authorization`) of every JSON-RPC call.
    headers: Vec<(Option<String>, Option<String>)>,
    /// The `traceparent` of every JSON-RPC call that sent one.
    traceparents: Vec<String>,
    /// How many `GetTask` calls found their task.
    polls: usize,
    /// Tasks stay `TASK_STATE_WORKING` while this is set.
    hold: bool,
    /// The next this many `SendMessage` calls answer 503 (before anything is taken).
    unavailable: usize,
    /// `SendMessage` answers this JSON-RPC error.
    refuse: Option<String>,
    /// Task id → (context id, the text it answers).
    tasks: HashMap<String, (String, String)>,
    /// The agent card served instead of the default one; `Value::Null`: none (404).
    card: Option<Value>,
    /// How a task that is not held ends.
    finish: Finish,
}

/// How [`FakeA2a`] answers a message it is not holding.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Finish {
    /// A task `TASK_STATE_COMPLETED` with the answer as an artifact.
    #[default]
    Completed,
    /// A direct `Message` with the answer, no task.
    Message,
    /// A task `TASK_STATE_FAILED` whose status message is this reason.
    Failed(String),
    /// A task `TASK_STATE_INPUT_REQUIRED` whose status message is this question.
    InputRequired(String),
}

impl FakeA2a {
    /// Serves on `127.0.0.1:0`; with a `token`, calls without `Authorization: Bearer <token>`
    /// get a 401.
    pub async fn start(token: Option<&str>) -> FakeA2a {
        let routes = Router::new()
            .route("/.well-known/agent-card.json", get(card))
            .route("/rpc", post(rpc));
        let token = token.map(str::to_string);
        let server = FakeServer::start("FakeA2a", token, FakeState::default(), routes).await;
        FakeA2a { server }
    }

    /// `http://127.0.0.1:PORT`: a remote's `url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// Tasks keep working (`true`) or finish (`false`, the default) from now on.
    pub fn hold(&self, hold: bool) {
        self.state().hold = hold;
    }

    /// The next `n` `SendMessage` calls answer 503 Service Unavailable.
    pub fn unavailable(&self, n: usize) {
        self.state().unavailable = n;
    }

    /// Every `SendMessage` from now on answers a JSON-RPC error with `message`.
    pub fn refuse(&self, message: &str) {
        self.state().refuse = Some(message.to_string());
    }

    /// How tasks end from now on (when not held).
    pub fn finish(&self, finish: Finish) {
        self.state().finish = finish;
    }

    /// Serves `card` as the agent card from now on (`Value::Null`: no card, a 404).
    pub fn set_card(&self, card: Value) {
        self.state().card = Some(card);
    }

    /// The messages of every `SendMessage` taken (not those answered 503 or 401).
    pub fn sends(&self) -> Vec<Value> {
        self.state().sends.clone()
    }

    /// The `messageId` of every `SendMessage` taken, in order.
    pub fn message_ids(&self) -> Vec<String> {
        self.sends()
            .iter()
            .map(|m| m["messageId"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// (`A2A-Version`, `Authorization`) of every JSON-RPC call.
    pub fn headers(&self) -> Vec<(Option<String>, Option<String>)> {
        self.state().headers.clone()
    }

    /// The W3C `traceparent` headers its JSON-RPC calls carried, in order.
    pub fn traceparents(&self) -> Vec<String> {
        self.state().traceparents.clone()
    }

    /// Waits (at most a minute) until a task was polled with `GetTask`: the client has the
    /// task's id (switchboard commits it before its first poll).
    pub async fn wait_polled(&self) {
        self.wait_for("a GetTask", |s| s.polls > 0).await;
    }

    async fn wait_for(&self, what: &str, done: impl Fn(&FakeState) -> bool) {
        let server = &self.server;
        let ready = || done(&server.lock());
        let came = server.wait_at_most(Duration::from_secs(60), ready).await;
        assert!(came, "FakeA2a: {what} never came");
    }

    pub async fn stop(self) {
        self.server.stop().await;
    }

    fn state(&self) -> MutexGuard<'_, FakeState> {
        self.server.lock()
    }
}

async fn card(State(shared): State<Arc<Shared>>) -> Response {
    match shared.lock().card.clone() {
        Some(Value::Null) => return StatusCode::NOT_FOUND.into_response(),
        Some(card) => return Json(card).into_response(),
        None => {}
    }
    Json(json!({
        "name": "fake",
        "description": "A fake A2A remote",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": format!("http://{}/rpc", shared.addr), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": []
    }))
    .into_response()
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

async fn rpc(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let response = answer(&shared, &headers, &body);
    shared.bump();
    response
}

/// A JSON-RPC call's answer (see the module doc); the call is recorded.
fn answer(shared: &Shared, headers: &HeaderMap, body: &Value) -> Response {
    let auth = header(headers, "authorization");
    let version = header(headers, "a2a-version");
    let mut state = shared.lock();
    state.headers.push((version.clone(), auth.clone()));
    state.traceparents.extend(header(headers, "traceparent"));
    if let Some(token) = &shared.config
        && auth.as_deref() != Some(&format!("Bearer {token}"))
    {
        return (StatusCode::UNAUTHORIZED, "missing or wrong bearer token").into_response();
    }
    let id = body["id"].clone();
    let error = |code: i64, message: &str| {
        Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
            .into_response()
    };
    if version.as_deref() != Some("1.0") {
        return error(-32009, "A2A version not supported; expected 1.0");
    }
    let params = &body["params"];
    let task = match body["method"].as_str() {
        Some("SendMessage") => {
            if state.unavailable > 0 {
                state.unavailable -= 1;
                return (StatusCode::SERVICE_UNAVAILABLE, "try later").into_response();
            }
            if let Some(message) = state.refuse.clone() {
                return error(-32005, &message);
            }
            let message = params["message"].clone();
            state.sends.push(message.clone());
            let n = state.sends.len();
            let context = message["contextId"]
                .as_str()
                .map_or_else(|| format!("ctx-{n}"), str::to_string);
            let text = message["parts"][0]["text"].as_str().unwrap_or_default();
            let answer = format!("fake says: {text}");
            let task_id = format!("task-{n}");
            state.tasks.insert(task_id.clone(), (context, answer));
            task_id
        }
        Some("GetTask") => {
            let task_id = params["id"].as_str().unwrap_or_default().to_string();
            if !state.tasks.contains_key(&task_id) {
                return error(-32001, "Task not found");
            }
            state.polls += 1;
            task_id
        }
        _ => return error(-32601, "Method not found"),
    };
    let (context, answer) = state.tasks[&task].clone();
    let result = task_json(&state, &task, &context, &answer);
    let result = match (body["method"].as_str(), &state.finish) {
        (Some("SendMessage"), Finish::Message) if !state.hold => json!({"message": {
            "messageId": format!("reply-{task}"), "contextId": context, "role": "ROLE_AGENT",
            "parts": [{"text": answer}]
        }}),
        (Some("SendMessage"), _) => json!({"task": result}),
        _ => result,
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// A task as `SendMessage` and `GetTask` answer it.
fn task_json(state: &FakeState, task: &str, context: &str, answer: &str) -> Value {
    let said = |text: &str| json!({"messageId": format!("status-{task}"), "role": "ROLE_AGENT", "parts": [{"text": text}]});
    let status = match &state.finish {
        _ if state.hold => json!({"state": "TASK_STATE_WORKING"}),
        Finish::Completed | Finish::Message => json!({"state": "TASK_STATE_COMPLETED"}),
        Finish::Failed(reason) => json!({"state": "TASK_STATE_FAILED", "message": said(reason)}),
        Finish::InputRequired(question) => {
            json!({"state": "TASK_STATE_INPUT_REQUIRED", "message": said(question)})
        }
    };
    let mut result = json!({"id": task, "contextId": context, "status": status});
    if !state.hold && matches!(state.finish, Finish::Completed | Finish::Message) {
        result["artifacts"] = json!([{"artifactId": "a1", "parts": [{"text": answer}]}]);
    }
    result
}
