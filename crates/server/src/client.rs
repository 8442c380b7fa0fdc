//! A client of the gateway protocol (v4) over WebSocket, used by the CLI and the tests. Requests
//! go one at a time; events that arrive in between are kept for `next_event`.

use std::collections::VecDeque;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use switchboard_protocol::frames::{ClientInfo, ConnectAuth, ConnectParams};
use switchboard_protocol::{
    ErrorShape, EventFrame, Frame, PROTOCOL_VERSION, RequestFrame, ResponseFrame,
};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to {url}: {message}")]
    Connect {
        url: String,
        message: String,
        /// Nothing listens there: the connection was refused.
        refused: bool,
    },
    /// The gateway answered with an error.
    #[error("{}: {}", .0.code.as_str(), .0.message)]
    Gateway(ErrorShape),
    #[error("connection closed{}", .0.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Closed(Option<String>),
    #[error("protocol error: {0}")]
    Protocol(String),
}

pub struct GatewayClient {
    socket: Socket,
    next_id: u64,
    events: VecDeque<EventFrame>,
    /// The `hello-ok` payload.
    pub hello: Value,
}

impl GatewayClient {
    /// Opens the socket without connecting (tests use it to send raw frames).
    pub async fn open(url: &str) -> Result<Self, ClientError> {
        let (socket, _) = tokio_tungstenite::connect_async_with_config(url, None, true)
            .await
            .map_err(|e| ClientError::Connect {
                url: url.to_string(),
                refused: matches!(&e, tokio_tungstenite::tungstenite::Error::Io(io)
                    if io.kind() == std::io::ErrorKind::ConnectionRefused),
                message: e.to_string(),
            })?;
        Ok(Self {
            socket,
            next_id: 0,
            events: VecDeque::new(),
            hello: Value::Null,
        })
    }

    /// Opens the socket, reads the challenge and completes `connect` with `token`.
    pub async fn connect(url: &str, token: Option<&str>) -> Result<Self, ClientError> {
        let mut client = Self::open(url).await?;
        let challenge = client.next_event().await?;
        if challenge.event != "connect.challenge" {
            return Err(ClientError::Protocol(format!(
                "expected connect.challenge, got {}",
                challenge.event
            )));
        }
        let params = serde_json::to_value(connect_params(token))
            .map_err(|e| ClientError::Protocol(format!("could not encode connect: {e}")))?;
        client.hello = client.request("connect", params).await?;
        Ok(client)
    }

    /// Sends a request and waits for its response (events in between are queued).
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.send_request(method, params).await?;
        self.response(&id).await
    }

    /// Like `request`, but answers the whole response frame.
    pub async fn request_frame(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<ResponseFrame, ClientError> {
        let id = self.send_request(method, params).await?;
        self.response_frame(&id).await
    }

    /// Sends a request without waiting for its answer; answers its id (for `response`). Once
    /// this returns the request is on the wire: the gateway runs it whatever the caller does
    /// next, closing the connection included.
    pub async fn send_request(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<String, ClientError> {
        self.next_id += 1;
        let id = format!("c{}", self.next_id);
        let frame = Frame::Req(RequestFrame::new(id.clone(), method, Some(params)));
        let text = serde_json::to_string(&frame)
            .map_err(|e| ClientError::Protocol(format!("could not encode the request: {e}")))?;
        self.send_text(text).await?;
        Ok(id)
    }

    /// Waits for the answer to the request `id` sent with `send_request`.
    pub async fn response(&mut self, id: &str) -> Result<Value, ClientError> {
        let response = self.response_frame(id).await?;
        match (response.ok, response.payload, response.error) {
            (true, payload, _) => Ok(payload.unwrap_or(Value::Null)),
            (false, _, Some(error)) => Err(ClientError::Gateway(error)),
            (false, _, None) => Err(ClientError::Protocol("error response without error".into())),
        }
    }

    async fn response_frame(&mut self, id: &str) -> Result<ResponseFrame, ClientError> {
        loop {
            match self.next_frame().await? {
                // `agent` answers `accepted` first, then the outcome under the same id.
                Frame::Res(res) if res.id == id && is_accepted(&res) => {}
                Frame::Res(res) if res.id == id => return Ok(res),
                Frame::Res(res) => {
                    return Err(ClientError::Protocol(format!(
                        "response to unknown id {:?}",
                        res.id
                    )));
                }
                Frame::Event(event) => self.events.push_back(event),
                Frame::Req(_) => return Err(ClientError::Protocol("server sent a request".into())),
            }
        }
    }

    pub async fn send_text(&mut self, text: String) -> Result<(), ClientError> {
        self.socket
            .send(Message::text(text))
            .await
            .map_err(|e| ClientError::Closed(Some(e.to_string())))
    }

    /// Sends any WebSocket message, raw frames included (tests of what the server refuses).
    pub async fn send_message(&mut self, message: Message) -> Result<(), ClientError> {
        self.socket
            .send(message)
            .await
            .map_err(|e| ClientError::Closed(Some(e.to_string())))
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.socket
            .send(Message::binary(bytes))
            .await
            .map_err(|e| ClientError::Closed(Some(e.to_string())))
    }

    /// The next event (queued ones first).
    pub async fn next_event(&mut self) -> Result<EventFrame, ClientError> {
        if let Some(event) = self.events.pop_front() {
            return Ok(event);
        }
        loop {
            if let Frame::Event(event) = self.next_frame().await? {
                return Ok(event);
            }
        }
    }

    /// The next frame from the server; a close becomes `Closed` with its reason.
    pub async fn next_frame(&mut self) -> Result<Frame, ClientError> {
        loop {
            let message = match self.socket.next().await {
                None => return Err(ClientError::Closed(None)),
                Some(Err(e)) => return Err(ClientError::Closed(Some(e.to_string()))),
                Some(Ok(m)) => m,
            };
            match message {
                Message::Text(text) => {
                    return serde_json::from_str(text.as_str())
                        .map_err(|e| ClientError::Protocol(format!("bad frame from server: {e}")));
                }
                Message::Close(frame) => {
                    return Err(ClientError::Closed(
                        frame.map(|f| format!("{} {}", u16::from(f.code), f.reason)),
                    ));
                }
                _ => {}
            }
        }
    }

    pub async fn close(mut self) {
        let _ = self.socket.close(None).await;
    }
}

fn is_accepted(res: &ResponseFrame) -> bool {
    res.ok
        && res
            .payload
            .as_ref()
            .and_then(|p| p.get("status"))
            .and_then(Value::as_str)
            == Some("accepted")
}

/// The `connect` params a backend client sends.
pub fn connect_params(token: Option<&str>) -> ConnectParams {
    ConnectParams {
        min_protocol: PROTOCOL_VERSION,
        max_protocol: PROTOCOL_VERSION,
        client: ClientInfo {
            // One of the client ids the reference accepts, so this client talks to it as well
            // (its CLI's backend id; the version says which client it is).
            id: "gateway-client".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            platform: std::env::consts::OS.into(),
            mode: "backend".into(),
            display_name: None,
        },
        role: Some("operator".into()),
        scopes: ["operator.admin", "operator.read", "operator.write"]
            .map(String::from)
            .to_vec(),
        auth: Some(ConnectAuth {
            token: token.map(str::to_string),
            password: None,
        }),
        node_id: None,
    }
}
