//! `POST /a2a/<agentId>`: one JSON-RPC request of A2A 1.0, checked in the module doc's order,
//! answered as JSON or, for `SendStreamingMessage` and `SubscribeToTask`, as an SSE stream of
//! JSON-RPC answers under the request's id. A notification (a request without `id`) is done
//! and not answered: `204 No Content`, no body (JSON-RPC 2.0 §4.1).

use std::convert::Infallible;
use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_core::a2a_tasks::{A2aResult, TaskEvents};
use switchboard_protocol::a2a::{
    A2A_VERSION, A2aError, A2aErrorCode, JsonRpcResponse, Method, SendMessageResponse,
    StreamResponse, VERSION_HEADER,
};

use super::{error_response, refusal};
use crate::ServerState;
use crate::admission::{self, Pending};

/// A checked request: its id, method and params, and whether it is a notification (it has no
/// `id` member; `"id": null` is an id).
pub(crate) struct Call {
    pub(crate) id: Value,
    pub(crate) method: Method,
    pub(crate) params: Option<Value>,
    pub(crate) notification: bool,
}

/// A request refused: the error to answer under `id`, unless the request was a notification,
/// which is never answered.
struct Refused {
    id: Value,
    error: A2aError,
    notification: bool,
}

/// The URL's query parameters, in order.
type QueryPairs = Result<Query<Vec<(String, String)>>, QueryRejection>;

/// The handler.
pub(super) async fn call(
    State(state): State<Arc<ServerState>>,
    Path(agent): Path<String>,
    query: QueryPairs,
    pending: Option<Extension<Pending>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if !state.auth.check(crate::http::bearer(&headers)) {
        let mut response = refusal(
            StatusCode::UNAUTHORIZED,
            A2aErrorCode::InvalidRequest,
            "missing or wrong token: send Authorization: Bearer <gateway token> (the agent \
             card's bearer scheme)"
                .into(),
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"switchboard\""),
        );
        return response;
    }
    if let Some(message) = crate::http::not_json(&headers) {
        let status = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        return refusal(status, A2aErrorCode::InvalidRequest, message);
    }
    admission::authenticated(pending.as_ref());
    let body = match crate::body::read(&state, &headers, body).await {
        Ok(body) => body,
        Err(e) => return e.refusal("/a2a"),
    };
    let version = query
        .as_ref()
        .ok()
        .and_then(|Query(pairs)| query_version(pairs));
    let call = match read(&body, &headers, version) {
        Ok(call) => call,
        Err(refused) if refused.notification => {
            tracing::debug!(error = %refused.error, "an A2A notification was refused (not answered)");
            return StatusCode::NO_CONTENT.into_response();
        }
        Err(refused) => return error_response(StatusCode::OK, refused.id, refused.error),
    };
    let agent = match state.engine.a2a().agent(&agent) {
        Ok(agent) => agent,
        Err(_) if call.notification => return StatusCode::NOT_FOUND.into_response(),
        Err(e) => return error_response(StatusCode::NOT_FOUND, call.id, e),
    };
    if call.notification {
        notify(&state, &agent, call).await;
        return StatusCode::NO_CONTENT.into_response();
    }
    if call.method.streams() {
        return stream(state, agent, call).await;
    }
    let id = call.id.clone();
    match answer(&state, &agent, call).await {
        Ok(result) => (
            StatusCode::OK,
            axum::Json(JsonRpcResponse::result(id, result)),
        )
            .into_response(),
        Err(error) => error_response(StatusCode::OK, id, error),
    }
}

/// The body as a JSON-RPC 2.0 request of a known method, in a version this gateway speaks (the
/// `A2A-Version` header); otherwise the error, under the request's id when it has one.
pub(crate) fn check(body: &[u8], headers: &HeaderMap) -> Result<Call, (Value, A2aError)> {
    read(body, headers, None).map_err(|refused| (refused.id, refused.error))
}

/// The `A2A-Version` query parameter (its name read case-insensitively, as every service
/// parameter's, A2A 1.0 §3.2.6), if the URL has one.
fn query_version(pairs: &[(String, String)]) -> Option<&str> {
    pairs
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(VERSION_HEADER))
        .map(|(_, value)| value.as_str())
}

/// [`check`], the version also taken from the URL's query (`query_version`) when no header
/// names one, and a refused notification told apart.
fn read(body: &[u8], headers: &HeaderMap, query_version: Option<&str>) -> Result<Call, Refused> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        let error = A2aError::new(
            A2aErrorCode::ParseError,
            format!(
                "the body is not JSON ({e}); expected a JSON-RPC 2.0 request: \
                 {{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"SendMessage\", \"params\": {{…}}}}"
            ),
        );
        Refused {
            id: Value::Null,
            error,
            notification: false,
        }
    })?;
    let given = match &value {
        Value::Object(map) => map.get("id").cloned().unwrap_or(Value::Null),
        _ => Value::Null,
    };
    // An id of another type is no id: the error goes under null, as JSON-RPC answers a
    // request whose id cannot be read (never the object or array that was sent).
    let usable = matches!(given, Value::Null | Value::String(_) | Value::Number(_));
    let id = if usable { given } else { Value::Null };
    let invalid = |why: String| {
        let message = format!(
            "{why}; expected a JSON-RPC 2.0 request: {{\"jsonrpc\": \"2.0\", \"id\": 1, \
             \"method\": \"SendMessage\", \"params\": {{…}}}} (one request; batches are not \
             taken)"
        );
        Refused {
            id: id.clone(),
            error: A2aError::new(A2aErrorCode::InvalidRequest, message),
            notification: false,
        }
    };
    let Value::Object(map) = &value else {
        return Err(invalid(format!(
            "the body is {}, not an object",
            switchboard_protocol::decode::kind_of(&value)
        )));
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("\"jsonrpc\" must be \"2.0\"".into()));
    }
    if !usable {
        return Err(invalid("\"id\" must be a string, a number or null".into()));
    }
    let Some(name) = map.get("method").and_then(Value::as_str) else {
        return Err(invalid("\"method\" is missing or not a string".into()));
    };
    // A valid request without an `id` member is a notification: whatever becomes of it, it is
    // not answered (JSON-RPC 2.0 §4.1).
    let notification = !map.contains_key("id");
    let refused = |error| Refused {
        id: id.clone(),
        error,
        notification,
    };
    check_version(headers, query_version).map_err(refused)?;
    let Some(method) = Method::parse(name) else {
        let known: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
        return Err(refused(A2aError::new(
            A2aErrorCode::MethodNotFound,
            format!(
                "unknown method {name:?}; this agent speaks A2A 1.0: {}",
                known.join(", ")
            ),
        )));
    };
    Ok(Call {
        method,
        params: map.get("params").cloned(),
        id,
        notification,
    })
}

/// The `A2A-Version` header (else the query parameter) names 1.x (a request without either is
/// 0.3's, the protocol says).
fn check_version(headers: &HeaderMap, query_version: Option<&str>) -> Result<(), A2aError> {
    let given = headers
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .or_else(|| query_version.map(str::trim).filter(|v| !v.is_empty()));
    let major = given.and_then(|v| v.split('.').next());
    if major == Some("1") {
        return Ok(());
    }
    let asked = match given {
        Some(v) => format!("A2A version {v:?}"),
        None => "no A2A-Version header or query parameter (read as A2A 0.3)".to_string(),
    };
    Err(A2aError::new(
        A2aErrorCode::VersionNotSupported,
        format!(
            "{asked} is not spoken here: this agent speaks A2A {A2A_VERSION}; send the header \
             {VERSION_HEADER}: {A2A_VERSION} (or ?{VERSION_HEADER}={A2A_VERSION} in the URL)"
        ),
    ))
}

/// A notification: done as the request would be, its answer dropped. A message starts its task
/// and the door returns once it is stored, as with `returnImmediately` (nobody reads a stream or
/// waits for the end); `SubscribeToTask` has nothing to do.
async fn notify(state: &ServerState, agent: &str, call: Call) {
    let method = call.method;
    let done = match method {
        Method::SendMessage | Method::SendStreamingMessage => match params(&call) {
            Ok(request) => state.engine.a2a().send(agent, request).await.map(drop),
            Err(e) => Err(e),
        },
        Method::SubscribeToTask => Ok(()),
        _ => answer(state, agent, call).await.map(drop),
    };
    if let Err(error) = done {
        tracing::debug!(method = method.as_str(), %error, "an A2A notification was refused (not answered)");
    }
}

/// A method's params, decoded; what is wrong with them, named, when they do not fit.
fn params<T: DeserializeOwned>(call: &Call) -> A2aResult<T> {
    switchboard_protocol::decode::params(call.method.as_str(), call.params.clone())
        .map_err(|e| A2aError::new(A2aErrorCode::InvalidParams, e.message))
}

fn to_value<T: Serialize>(value: T) -> A2aResult<Value> {
    serde_json::to_value(value).map_err(|e| A2aError::new(A2aErrorCode::Internal, e.to_string()))
}

/// The answer of a method that is not streamed.
async fn answer(state: &ServerState, agent: &str, call: Call) -> A2aResult<Value> {
    let tasks = state.engine.a2a();
    match call.method {
        Method::SendMessage => send(state, agent, &call).await,
        Method::GetTask => to_value(tasks.get(agent, params(&call)?).await?),
        Method::ListTasks => to_value(tasks.list(agent, params(&call)?).await?),
        Method::CancelTask => to_value(tasks.cancel(agent, params(&call)?).await?),
        Method::CreateTaskPushNotificationConfig => {
            to_value(tasks.create_push(agent, params(&call)?).await?)
        }
        Method::GetTaskPushNotificationConfig => {
            to_value(tasks.get_push(agent, params(&call)?).await?)
        }
        Method::ListTaskPushNotificationConfigs => {
            to_value(tasks.list_push(agent, params(&call)?).await?)
        }
        Method::DeleteTaskPushNotificationConfig => {
            tasks.delete_push(agent, params(&call)?).await?;
            Ok(Value::Object(Default::default()))
        }
        Method::GetExtendedAgentCard => Err(A2aError::new(
            A2aErrorCode::ExtendedAgentCardNotConfigured,
            "this agent has no extended card: its public card \
             (/.well-known/agent-card.json under the agent's URL) is all there is",
        )),
        Method::SendStreamingMessage | Method::SubscribeToTask => Err(A2aError::new(
            A2aErrorCode::Internal,
            "a streamed method reached the plain answer",
        )),
    }
}

/// `SendMessage`: the task once it ended (or at once with `returnImmediately`); a gateway that
/// stops meanwhile answers the task as it stands.
async fn send(state: &ServerState, agent: &str, call: &Call) -> A2aResult<Value> {
    let tasks = state.engine.a2a();
    let request: switchboard_protocol::a2a::SendMessageRequest = params(call)?;
    let immediately = request
        .configuration
        .as_ref()
        .is_some_and(|c| c.return_immediately);
    let sent = tasks.send(agent, request).await?;
    if immediately {
        return to_value(SendMessageResponse::Task(sent.task));
    }
    let task = tokio::select! {
        task = tasks.finished(agent, &sent) => task?,
        () = state.stop.cancelled() => sent.task,
    };
    to_value(SendMessageResponse::Task(task))
}

/// `SendStreamingMessage` and `SubscribeToTask`: the task first, then its events until its
/// final status. A refusal before the stream starts is a plain JSON-RPC error.
async fn stream(state: Arc<ServerState>, agent: String, call: Call) -> Response {
    let tasks = state.engine.a2a().clone();
    let started = match call.method {
        Method::SendStreamingMessage => match params(&call) {
            Ok(request) => {
                let events = tasks.events_from_now();
                tasks.send(&agent, request).await.map(|sent| {
                    (
                        StreamResponse::Task(sent.task.clone()),
                        tasks.follow(events, &sent),
                    )
                })
            }
            Err(e) => Err(e),
        },
        _ => match params(&call) {
            Ok(request) => subscribe(&tasks, &agent, request).await,
            Err(e) => Err(e),
        },
    };
    match started {
        Ok((first, events)) => sse(state, call.id, first, events).into_response(),
        Err(error) => error_response(StatusCode::OK, call.id, error),
    }
}

async fn subscribe(
    tasks: &switchboard_core::a2a_tasks::A2aTasks,
    agent: &str,
    request: switchboard_protocol::a2a::TaskIdRequest,
) -> A2aResult<(StreamResponse, TaskEvents)> {
    let get = switchboard_protocol::a2a::GetTaskRequest {
        tenant: None,
        id: request.id.clone(),
        history_length: None,
    };
    let events = tasks.subscribe(agent, request).await?;
    let task = tasks.get(agent, get).await?;
    Ok((StreamResponse::Task(task), events))
}

/// The SSE body: each event a JSON-RPC answer under `id`; ends after the final status, or
/// when the gateway stops.
fn sse(
    state: Arc<ServerState>,
    id: Value,
    first: StreamResponse,
    events: TaskEvents,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stop = state.stop.clone();
    let start = (Some(first), events, id, stop);
    let stream = futures_util::stream::unfold(start, |(first, mut events, id, stop)| async move {
        let next = match first {
            Some(first) => Some(first),
            None => tokio::select! {
                next = events.next() => next,
                () = stop.cancelled() => None,
            },
        };
        let event = next?;
        let answer = match serde_json::to_value(&event) {
            Ok(result) => JsonRpcResponse::result(id.clone(), result),
            Err(e) => JsonRpcResponse::error(
                id.clone(),
                A2aError::new(A2aErrorCode::Internal, e.to_string()),
            ),
        };
        let data = serde_json::to_string(&answer).unwrap_or_default();
        Some((Ok(Event::default().data(data)), (None, events, id, stop)))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
