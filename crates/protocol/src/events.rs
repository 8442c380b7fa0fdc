//! The payloads of server events (SPEC §5.1), in the reference's shapes: `connect.challenge`
//! ([`ConnectChallenge`]), `tick`, `shutdown`, `agent` (a run's lifecycle and streams), `chat`
//! (the reply as it grows, then its final state) and `delivery` ([`DeliveryInfo`]).
//!
//! [`ServerEvent`] pairs each event name with its payload type, so a name and a payload cannot
//! disagree; likewise an [`AgentEvent`]'s `stream` and `data` are one value ([`AgentStream`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::delivery::DeliveryInfo;
use crate::frames::{ConnectChallenge, EventFrame};
use crate::message::ContentBlock;

/// The first event of a connection, before `connect`.
pub const CONNECT_CHALLENGE: &str = "connect.challenge";
/// Sent every `tickIntervalMs` to a connected client.
pub const TICK: &str = "tick";
/// Sent once before the gateway closes the connection to stop.
pub const SHUTDOWN: &str = "shutdown";
/// A run's lifecycle and streams.
pub const AGENT: &str = "agent";
/// A run's reply for chat views.
pub const CHAT: &str = "chat";
/// An outbox record changed.
pub const DELIVERY: &str = "delivery";
/// A session was created, changed, reset or deleted, or a run in it was queued, started or
/// ended (to connections that called `sessions.subscribe`).
pub const SESSIONS_CHANGED: &str = "sessions.changed";
/// Every event a server sends (the `features.events` of `hello-ok`), in that order.
pub const EVENTS: &[&str] = &[
    CONNECT_CHALLENGE,
    TICK,
    SHUTDOWN,
    AGENT,
    CHAT,
    DELIVERY,
    SESSIONS_CHANGED,
];

/// Any server event: `{"event": name, "payload": …}`, the named part of an [`EventFrame`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "payload")]
pub enum ServerEvent {
    #[serde(rename = "connect.challenge")]
    ConnectChallenge(ConnectChallenge),
    #[serde(rename = "tick")]
    Tick(TickEvent),
    #[serde(rename = "shutdown")]
    Shutdown(ShutdownEvent),
    #[serde(rename = "agent")]
    Agent(AgentEvent),
    #[serde(rename = "chat")]
    Chat(ChatEvent),
    #[serde(rename = "delivery")]
    Delivery(DeliveryInfo),
    #[serde(rename = "sessions.changed")]
    SessionsChanged(SessionsChanged),
}

impl ServerEvent {
    /// The event's name, one of [`EVENTS`].
    pub fn name(&self) -> &'static str {
        match self {
            Self::ConnectChallenge(_) => CONNECT_CHALLENGE,
            Self::Tick(_) => TICK,
            Self::Shutdown(_) => SHUTDOWN,
            Self::Agent(_) => AGENT,
            Self::Chat(_) => CHAT,
            Self::Delivery(_) => DELIVERY,
            Self::SessionsChanged(_) => SESSIONS_CHANGED,
        }
    }

    /// The event's frame as text, numbered with `seq` when given: the typed payload written
    /// straight into the frame (no `Value` in between), the frame [`Self::into_frame`] makes,
    /// its payload's keys in their declared order.
    pub fn to_text(&self, seq: Option<u64>) -> Result<String, serde_json::Error> {
        Ok(close_frame(&self.frame_head()?, seq))
    }

    /// The event's frame as text with its last `}` left off, which [`close_frame`] adds with a
    /// connection's `seq`: written once, one head serves every connection sending the event.
    pub fn frame_head(&self) -> Result<String, serde_json::Error> {
        const HEAD: &[u8] = br#"{"type":"event","#;
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(HEAD);
        // `{"event":…,"payload":…}`, whose fields join the frame's.
        serde_json::to_writer(&mut out, self)?;
        out.remove(HEAD.len());
        out.pop();
        // Only JSON was written, which is UTF-8.
        String::from_utf8(out).map_err(serde::ser::Error::custom)
    }

    /// The event as a frame, numbered with `seq` when given.
    pub fn into_frame(self, seq: Option<u64>) -> Result<EventFrame, serde_json::Error> {
        let event = self.name().to_string();
        let payload = match self {
            Self::ConnectChallenge(p) => serde_json::to_value(p),
            Self::Tick(p) => serde_json::to_value(p),
            Self::Shutdown(p) => serde_json::to_value(p),
            Self::Agent(p) => serde_json::to_value(p),
            Self::Chat(p) => serde_json::to_value(p),
            Self::Delivery(p) => serde_json::to_value(p),
            Self::SessionsChanged(p) => serde_json::to_value(p),
        }?;
        Ok(EventFrame {
            event,
            payload,
            seq,
        })
    }
}

/// An event's frame from its [`ServerEvent::frame_head`], numbered with `seq` when given.
pub fn close_frame(head: &str, seq: Option<u64>) -> String {
    let mut text = String::with_capacity(head.len() + 24);
    text.push_str(head);
    if let Some(seq) = seq {
        text.push_str(",\"seq\":");
        text.push_str(&seq.to_string());
    }
    text.push('}');
    text
}

/// `sessions.changed`, in the reference's shape: which session, why, and for run phases which
/// run. Clients reload the rows they show (`sessions.list`, `sessions.describe`).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsChanged {
    pub session_key: String,
    pub agent_id: Option<String>,
    /// `create`, `update`, `reset` or `delete`.
    pub reason: String,
    /// A run's `queued`, `start` or `end` (with `reason: "update"`).
    pub phase: Option<String>,
    pub run_id: Option<String>,
    pub ts: i64,
}

/// `tick`: the connection is alive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TickEvent {
    /// The server's clock (ms).
    pub ts: i64,
}

/// `shutdown`: the gateway is stopping; the connection closes next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownEvent {
    /// Why, for people (`gateway stopping`).
    pub reason: String,
}

/// `agent`: one step of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    /// The run.
    pub run_id: String,
    /// The run's session (canonical key).
    pub session_key: String,
    /// When the server sent the event (ms).
    pub ts: i64,
    /// `stream` and its `data`.
    #[serde(flatten)]
    pub stream: AgentStream,
}

impl AgentEvent {
    pub fn new(
        run_id: impl Into<String>,
        session_key: impl Into<String>,
        ts: i64,
        stream: AgentStream,
    ) -> Self {
        Self {
            run_id: run_id.into(),
            session_key: session_key.into(),
            ts,
            stream,
        }
    }
}

/// An `agent` event's `stream` (`lifecycle`, `assistant`, `thinking`, `tool`) with its `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stream", content = "data", rename_all = "lowercase")]
pub enum AgentStream {
    /// The run was queued, started or ended.
    Lifecycle(Lifecycle),
    /// A piece of the reply.
    Assistant(AssistantDelta),
    /// A piece of the model's reasoning.
    Thinking(ThinkingDelta),
    /// A tool call or its result.
    Tool(ToolStep),
    /// The run's output tokens so far (after each model call). The reference's Control UI shows
    /// them when the turn is done ("Done in 1 second · 5 output tokens").
    Usage(RunUsage),
}

/// `usage` data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunUsage {
    /// Output tokens of the run's model calls so far.
    pub output_tokens: u64,
}

/// `lifecycle` data, told apart by `phase`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "lowercase")]
pub enum Lifecycle {
    /// Stored and waiting for its session or lane.
    Queued,
    /// The model is working on it.
    Start,
    /// The run ended.
    End {
        /// How it ended.
        status: EndStatus,
        /// Why it ended `error`, `timeout` or `aborted`; `null` (always present) otherwise.
        #[serde(default)]
        error: Option<String>,
    },
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndStatus {
    Ok,
    Error,
    Timeout,
    Aborted,
}

impl EndStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Timeout => "timeout",
            Self::Aborted => "aborted",
        }
    }
}

/// `assistant` data: the new piece of the reply, numbered. A client adds the pieces up; `text`,
/// the whole so far, rides along only now and then ([`StreamedPiece`]).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantDelta {
    /// The new piece of text.
    pub delta: String,
    /// The piece's number in its run, from 1: a gap is a piece missed.
    pub seq: u64,
    /// All the text of this model turn so far, when the snapshot rides along.
    pub text: Option<String>,
    /// `true` when `text` starts anew (a model turn's first piece): shown text is replaced.
    pub replace: Option<bool>,
}

/// One streamed piece of a reply as both events carry it: the piece, its number and, at a
/// bounded rate, the whole text so far. The reference's clients need the snapshot: its TUI
/// shows `message` and ignores `deltaText`, and its Control UI checks one against the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamedPiece<'a> {
    pub delta: &'a str,
    pub seq: u64,
    pub so_far: Option<&'a str>,
}

impl StreamedPiece<'_> {
    /// Whether the piece starts its model turn's text anew: its snapshot is the piece alone.
    pub fn starts_anew(&self) -> bool {
        self.so_far
            .is_some_and(|whole| whole.len() == self.delta.len())
    }

    /// `replace: true` on a piece that starts the text anew, absent otherwise.
    fn replaces(&self) -> Option<bool> {
        self.starts_anew().then_some(true)
    }

    /// The `agent` event's `assistant` data.
    pub fn assistant(&self) -> AssistantDelta {
        AssistantDelta {
            delta: self.delta.to_string(),
            seq: self.seq,
            text: self.so_far.map(str::to_string),
            replace: self.replaces(),
        }
    }

    /// The `chat` event of state `delta`.
    pub fn chat(&self, run_id: &str, session_key: &str) -> ChatEvent {
        ChatEvent {
            run_id: run_id.to_string(),
            session_key: session_key.to_string(),
            state: ChatState::Delta,
            seq: Some(self.seq),
            delta_text: Some(self.delta.to_string()),
            replace: self.replaces(),
            message: self.so_far.map(ChatMessage::assistant),
            error_message: None,
        }
    }
}

/// `thinking` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingDelta {
    /// The new piece of reasoning.
    pub delta: String,
}

/// `tool` data, told apart by `phase`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "phase",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum ToolStep {
    /// The model called a tool.
    Call {
        /// The call's id; its result carries the same.
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// The arguments as the model sent them.
        arguments: Value,
    },
    /// The tool answered.
    Result {
        /// The id of the call answered.
        tool_call_id: String,
        /// The tool's name.
        name: String,
        /// True when the tool answered an error.
        is_error: bool,
        /// The answer, as the model reads it.
        text: String,
    },
}

/// `chat`: the run's reply for chat views.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatEvent {
    /// The run.
    pub run_id: String,
    /// The run's session (canonical key).
    pub session_key: String,
    /// `delta` while the reply grows, then `final`, `aborted` or `error`.
    pub state: ChatState,
    /// A `delta`'s number in its run, from 1.
    pub seq: Option<u64>,
    /// A `delta`'s new piece of text.
    pub delta_text: Option<String>,
    /// `true` when the text starts anew with this `delta` (a model turn's first piece).
    pub replace: Option<bool>,
    /// The reply so far (on a `delta`, now and then) or in full (`final`); absent when there is
    /// none.
    pub message: Option<ChatMessage>,
    /// Why the run ended without a reply.
    pub error_message: Option<String>,
}

impl ChatEvent {
    /// A `chat` event without a streamed piece: a run's end (`final`, `aborted`, `error`) with
    /// its reply or why it has none.
    pub fn ended(
        run_id: &str,
        session_key: &str,
        state: ChatState,
        reply: Option<&str>,
        error: Option<&str>,
    ) -> Self {
        Self {
            run_id: run_id.to_string(),
            session_key: session_key.to_string(),
            state,
            seq: None,
            delta_text: None,
            replace: None,
            message: reply.map(ChatMessage::assistant),
            error_message: error.map(str::to_string),
        }
    }
}

/// Where a `chat` reply stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatState {
    Delta,
    Final,
    Aborted,
    Error,
}

impl ChatState {
    /// The final state of a run that ended so: `ok` → `final`, `aborted` → `aborted`, else
    /// `error`.
    pub fn ended(status: EndStatus) -> Self {
        match status {
            EndStatus::Ok => Self::Final,
            EndStatus::Aborted => Self::Aborted,
            EndStatus::Error | EndStatus::Timeout => Self::Error,
        }
    }
}

/// The reply of a `chat` event: an assistant message of text blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatMessage {
    /// Always `assistant`.
    pub role: String,
    /// The reply, as one text block.
    pub content: Vec<ContentBlock>,
}

impl ChatMessage {
    /// An assistant message holding `text`.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: "assistant".into(),
            content: vec![ContentBlock::text(text)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::round_trip;
    use serde_json::json;

    fn agent(stream: AgentStream) -> AgentEvent {
        AgentEvent::new("r1", "agent:main:main", 5, stream)
    }

    fn agent_json(stream: &str, data: Value) -> Value {
        json!({"runId": "r1", "sessionKey": "agent:main:main", "stream": stream, "ts": 5, "data": data})
    }

    #[test]
    fn an_events_text_is_its_frame() {
        let events = [
            ServerEvent::Agent(agent(AgentStream::Lifecycle(Lifecycle::End {
                status: EndStatus::Error,
                error: Some("no \"model\"".into()),
            }))),
            ServerEvent::Tick(TickEvent { ts: 7 }),
            ServerEvent::Chat(ChatEvent::ended(
                "r1",
                "agent:main:main",
                ChatState::Final,
                Some("hé"),
                None,
            )),
        ];
        for event in events {
            for seq in [None, Some(12)] {
                let text = event.to_text(seq).unwrap();
                let frame = crate::Frame::Event(event.clone().into_frame(seq).unwrap());
                let parsed: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(parsed, serde_json::to_value(frame).unwrap(), "{text}");
                assert!(text.starts_with(r#"{"type":"event","event":""#), "{text}");
            }
        }
    }

    #[test]
    fn lifecycle_events_have_the_reference_shapes() {
        round_trip(
            agent(AgentStream::Lifecycle(Lifecycle::Queued)),
            agent_json("lifecycle", json!({"phase": "queued"})),
        );
        round_trip(
            agent(AgentStream::Lifecycle(Lifecycle::Start)),
            agent_json("lifecycle", json!({"phase": "start"})),
        );
        round_trip(
            agent(AgentStream::Lifecycle(Lifecycle::End {
                status: EndStatus::Ok,
                error: None,
            })),
            agent_json(
                "lifecycle",
                json!({"phase": "end", "status": "ok", "error": null}),
            ),
        );
        round_trip(
            agent(AgentStream::Lifecycle(Lifecycle::End {
                status: EndStatus::Timeout,
                error: Some("run timed out".into()),
            })),
            agent_json(
                "lifecycle",
                json!({"phase": "end", "status": "timeout", "error": "run timed out"}),
            ),
        );
        for status in [
            EndStatus::Ok,
            EndStatus::Error,
            EndStatus::Timeout,
            EndStatus::Aborted,
        ] {
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                json!(status.as_str())
            );
        }
    }

    #[test]
    fn stream_events_have_the_reference_shapes() {
        round_trip(
            agent(AgentStream::Assistant(AssistantDelta {
                delta: "lo".into(),
                seq: 2,
                text: Some("hello".into()),
                replace: None,
            })),
            agent_json(
                "assistant",
                json!({"delta": "lo", "seq": 2, "text": "hello"}),
            ),
        );
        round_trip(
            agent(AgentStream::Assistant(AssistantDelta {
                delta: "lo".into(),
                seq: 3,
                text: None,
                replace: None,
            })),
            agent_json("assistant", json!({"delta": "lo", "seq": 3})),
        );
        round_trip(
            agent(AgentStream::Thinking(ThinkingDelta { delta: "hm".into() })),
            agent_json("thinking", json!({"delta": "hm"})),
        );
        round_trip(
            agent(AgentStream::Usage(RunUsage { output_tokens: 5 })),
            agent_json("usage", json!({"outputTokens": 5})),
        );
        round_trip(
            agent(AgentStream::Tool(ToolStep::Call {
                tool_call_id: "c1".into(),
                name: "sessions_list".into(),
                arguments: json!({"limit": 5}),
            })),
            agent_json(
                "tool",
                json!({"phase": "call", "toolCallId": "c1", "name": "sessions_list", "arguments": {"limit": 5}}),
            ),
        );
        round_trip(
            agent(AgentStream::Tool(ToolStep::Result {
                tool_call_id: "c1".into(),
                name: "sessions_list".into(),
                is_error: false,
                text: "{\"count\":0}".into(),
            })),
            agent_json(
                "tool",
                json!({
                    "phase": "result", "toolCallId": "c1", "name": "sessions_list",
                    "isError": false, "text": "{\"count\":0}",
                }),
            ),
        );
    }

    #[test]
    fn chat_events_have_the_reference_shapes() {
        let chat = |state, message: Option<&str>, error: Option<&str>| {
            ChatEvent::ended("r1", "agent:main:main", state, message, error)
        };
        let reply = json!({"role": "assistant", "content": [{"type": "text", "text": "hello"}]});
        round_trip(
            chat(ChatState::Delta, Some("hello"), None),
            json!({"runId": "r1", "sessionKey": "agent:main:main", "state": "delta", "message": reply}),
        );
        let piece = |delta, seq, so_far| StreamedPiece { delta, seq, so_far };
        round_trip(
            piece("lo", 4, Some("hello")).chat("r1", "agent:main:main"),
            json!({"runId": "r1", "sessionKey": "agent:main:main", "state": "delta", "seq": 4,
                "deltaText": "lo", "message": reply}),
        );
        round_trip(
            piece("lo", 5, None).chat("r1", "agent:main:main"),
            json!({"runId": "r1", "sessionKey": "agent:main:main", "state": "delta", "seq": 5,
                "deltaText": "lo"}),
        );
        // A model turn's first piece starts the text anew.
        let first = piece("hello", 6, Some("hello"));
        assert_eq!(first.chat("r1", "k").replace, Some(true));
        assert_eq!(first.assistant().replace, Some(true));
        round_trip(
            chat(ChatState::ended(EndStatus::Ok), Some("hello"), None),
            json!({"runId": "r1", "sessionKey": "agent:main:main", "state": "final", "message": reply}),
        );
        round_trip(
            chat(
                ChatState::ended(EndStatus::Timeout),
                None,
                Some("run timed out"),
            ),
            json!({
                "runId": "r1", "sessionKey": "agent:main:main", "state": "error",
                "errorMessage": "run timed out",
            }),
        );
        round_trip(
            chat(ChatState::ended(EndStatus::Aborted), None, None),
            json!({"runId": "r1", "sessionKey": "agent:main:main", "state": "aborted"}),
        );
        assert_eq!(ChatState::ended(EndStatus::Error), ChatState::Error);
    }

    #[test]
    fn server_events_pair_names_with_payloads() {
        let events = [
            (
                ServerEvent::ConnectChallenge(ConnectChallenge {
                    nonce: "n".into(),
                    ts: 1,
                }),
                json!({"nonce": "n", "ts": 1}),
            ),
            (ServerEvent::Tick(TickEvent { ts: 2 }), json!({"ts": 2})),
            (
                ServerEvent::Shutdown(ShutdownEvent {
                    reason: "gateway stopping".into(),
                }),
                json!({"reason": "gateway stopping"}),
            ),
            (
                ServerEvent::Agent(agent(AgentStream::Lifecycle(Lifecycle::Start))),
                agent_json("lifecycle", json!({"phase": "start"})),
            ),
            (
                ServerEvent::Chat(
                    StreamedPiece {
                        delta: "hi",
                        seq: 1,
                        so_far: Some("hi"),
                    }
                    .chat("r1", "agent:main:main"),
                ),
                json!({
                    "runId": "r1", "sessionKey": "agent:main:main", "state": "delta", "seq": 1,
                    "deltaText": "hi", "replace": true,
                    "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
                }),
            ),
            (
                ServerEvent::Delivery(DeliveryInfo {
                    id: "d1".into(),
                    kind: "reply".into(),
                    status: crate::delivery::DeliveryStatus::Delivered,
                    channel: "webchat".into(),
                    to: "agent:main:main".into(),
                    account_id: None,
                    thread_id: None,
                    session_key: Some("agent:main:main".into()),
                    run_id: Some("r1".into()),
                    text: "hi".into(),
                    attempts: 1,
                    next_attempt_at: None,
                    detail: None,
                    created_at: 1,
                    updated_at: 2,
                    delivered_at: Some(2),
                }),
                json!({
                    "id": "d1", "kind": "reply", "status": "delivered", "channel": "webchat",
                    "to": "agent:main:main", "sessionKey": "agent:main:main", "runId": "r1",
                    "text": "hi", "attempts": 1, "createdAt": 1, "updatedAt": 2, "deliveredAt": 2,
                }),
            ),
            (
                ServerEvent::SessionsChanged(SessionsChanged {
                    session_key: "agent:main:main".into(),
                    agent_id: Some("main".into()),
                    reason: "update".into(),
                    phase: Some("end".into()),
                    run_id: Some("r1".into()),
                    ts: 5,
                }),
                json!({"sessionKey": "agent:main:main", "agentId": "main", "reason": "update",
                    "phase": "end", "runId": "r1", "ts": 5}),
            ),
        ];
        assert_eq!(events.len(), EVENTS.len());
        for (i, (event, payload)) in events.into_iter().enumerate() {
            let name = event.name();
            assert_eq!(name, EVENTS[i]);
            round_trip(event.clone(), json!({"event": name, "payload": payload}));
            let frame = event.into_frame(Some(3)).unwrap();
            assert_eq!(
                serde_json::to_value(&frame).unwrap(),
                json!({"event": name, "payload": payload, "seq": 3})
            );
        }
        let unnumbered = ServerEvent::Tick(TickEvent { ts: 2 })
            .into_frame(None)
            .unwrap();
        assert_eq!(
            serde_json::to_value(&unnumbered).unwrap(),
            json!({"event": "tick", "payload": {"ts": 2}})
        );
    }
}
