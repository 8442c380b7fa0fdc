//! The HTTP side of the A2A client: thin JSON-RPC over reqwest (docs/a2a.md). It finds
//! a remote's JSON-RPC endpoint from its agent card, sends `SendMessage` and `GetTask` with the
//! `A2A-Version: 1.0` header and the remote's bearer token, and says of every failure whether
//! another attempt could succeed (the outbox's [`ChannelError`] verdicts). Nothing here logs
//! the token, and no error message quotes it.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::wire::{
    AGENT_CARD_PATH, AgentCard, GetTaskParams, JSONRPC_BINDING, Message, RpcRequest, RpcResponse,
    SendConfiguration, SendMessageParams, SendMessageResult, Task, VERSION, VERSION_HEADER,
};
use switchboard_protocol::a2a::Method;

use crate::channel::{ChannelError, describe_http_error};
use crate::config::A2aRemote;

/// The longest excerpt of a remote's error body quoted in a message.
const MAX_QUOTED: usize = 200;

/// One remote, as the client calls it.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
}

/// Where to send a remote's JSON-RPC calls, and as whom.
pub struct Endpoint<'a> {
    pub url: String,
    pub token: Option<&'a str>,
}

impl Client {
    pub fn new(http: reqwest::Client) -> Self {
        Self { http }
    }

    /// The remote's JSON-RPC endpoint: the JSON-RPC interface its agent card names
    /// (`<url>/.well-known/agent-card.json`), or `url` itself when it serves no card there (a
    /// 404, or something that is not a card), so `url` may be the endpoint. The token goes only
    /// to `url`'s origin: a card that names an endpoint elsewhere is refused, not followed.
    pub async fn endpoint<'a>(&self, remote: &'a A2aRemote) -> Result<Endpoint<'a>, ChannelError> {
        let token = remote.token.as_deref();
        let card_url = format!("{}{AGENT_CARD_PATH}", remote.url);
        let mut request = self.http.get(&card_url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .map_err(|e| unreachable(&card_url, &e))?;
        let status = response.status();
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(ChannelError::Retry(format!("{card_url} answered {status}")));
        }
        let card = match status.is_success() {
            true => response.json::<AgentCard>().await.ok(),
            false => None,
        };
        let Some(card) = card else {
            return Ok(Endpoint {
                url: remote.url.clone(),
                token,
            });
        };
        let offered: Vec<String> = card
            .supported_interfaces
            .iter()
            .map(|i| i.protocol_binding.clone())
            .collect();
        let Some(interface) = card
            .supported_interfaces
            .into_iter()
            .find(|i| i.protocol_binding.eq_ignore_ascii_case(JSONRPC_BINDING))
        else {
            return Err(ChannelError::Permanent(format!(
                "{card_url} offers no JSONRPC interface (it offers: {}); this client speaks \
                 A2A's JSON-RPC binding only",
                offered.join(", ")
            )));
        };
        if token.is_some() && origin(&interface.url) != origin(&remote.url) {
            return Err(ChannelError::Permanent(format!(
                "{card_url} names its JSON-RPC endpoint {} on another origin; the token is sent \
                 only to {}: set the remote's url to that endpoint to trust it",
                interface.url, remote.url
            )));
        }
        Ok(Endpoint {
            url: interface.url,
            token,
        })
    }

    /// `SendMessage`, answered at once with the task (`returnImmediately`) or the remote's
    /// direct message.
    pub async fn send_message(
        &self,
        endpoint: &Endpoint<'_>,
        message: Message,
    ) -> Result<SendMessageResult, ChannelError> {
        let params = SendMessageParams {
            message,
            configuration: SendConfiguration {
                return_immediately: true,
                accepted_output_modes: vec!["text/plain".into()],
            },
        };
        self.call(endpoint, Method::SendMessage, params).await
    }

    /// `GetTask`.
    pub async fn get_task(&self, endpoint: &Endpoint<'_>, id: &str) -> Result<Task, ChannelError> {
        self.call(endpoint, Method::GetTask, GetTaskParams { id })
            .await
    }

    async fn call<P: Serialize, R: DeserializeOwned>(
        &self,
        endpoint: &Endpoint<'_>,
        method: Method,
        params: P,
    ) -> Result<R, ChannelError> {
        let (url, method) = (&endpoint.url, method.as_str());
        let id = uuid::Uuid::now_v7().to_string();
        let body = RpcRequest {
            jsonrpc: "2.0",
            id: &id,
            method,
            params,
        };
        let mut request = self
            .http
            .post(url)
            .header(VERSION_HEADER, VERSION)
            .json(&body);
        if let Some(token) = endpoint.token {
            request = request.bearer_auth(token);
        }
        // The remote agent's spans join this delivery's trace (SPEC §10b), if it traces.
        if let Some(traceparent) = crate::trace::current() {
            request = request.header(crate::trace::TRACEPARENT, traceparent);
        }
        let response = request.send().await.map_err(|e| unreachable(url, &e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| {
            ChannelError::Retry(format!("{method} to {url}: {}", describe_http_error(&e)))
        })?;
        if !status.is_success() {
            let excerpt: String = text.chars().take(MAX_QUOTED).collect();
            let message = format!("{method} to {url} answered {status}: {excerpt}");
            return Err(match status.as_u16() {
                408 | 425 | 429 | 500..=599 => ChannelError::Retry(message),
                401 | 403 => ChannelError::Permanent(format!(
                    "{message} (the remote refused this gateway's credentials: check \
                     agents.list[].a2a.remotes.<name>.token)"
                )),
                _ => ChannelError::Permanent(message),
            });
        }
        let answer: RpcResponse<R> = serde_json::from_str(&text).map_err(|e| {
            ChannelError::Permanent(format!(
                "{method} to {url}: the answer is not an A2A 1.0 JSON-RPC response ({e})"
            ))
        })?;
        match (answer.result, answer.error) {
            (_, Some(error)) => Err(ChannelError::Permanent(format!(
                "the remote refused {method}: {} (JSON-RPC error {})",
                error.message, error.code
            ))),
            (Some(result), None) => Ok(result),
            (None, None) => Err(ChannelError::Permanent(format!(
                "{method} to {url}: the answer has neither a result nor an error"
            ))),
        }
    }
}

/// `scheme://host:port` of `url` (`None` when it does not parse).
fn origin(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    Some(format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str()?,
        url.port_or_known_default()?
    ))
}

fn unreachable(url: &str, e: &reqwest::Error) -> ChannelError {
    ChannelError::Retry(format!("could not reach {url}: {}", describe_http_error(e)))
}
