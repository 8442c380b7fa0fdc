//! The bus between the gateways sharing a store: the [`Bus`] a shared store provides and the
//! [`BusMessage`]s that travel on it. Messages are typed everywhere but at the backend's edge,
//! which encodes an [`Envelope`] with [`encode`] and decodes what it receives with [`decode`]:
//! a payload that does not decode is an error that says why, for the backend to log.
//!
//! One message is one JSON object: the sender, a number, and the message's fields beside its
//! kind `t`, e.g. `{"from":"…","n":7,"t":"delta","runId":"…","sessionKey":"…","text":"Hel"}`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::ids::RunId;
use crate::keys::SessionKey;

/// Messages between the gateways sharing a store (a run's events, its end, an abort).
pub trait Bus: Send + Sync {
    /// Sends `message` to the other gateways, in the order published (best effort: a gateway
    /// not listening at that moment misses it).
    fn publish(&self, message: Envelope);
    /// What the other gateways publish from now on (this gateway's own messages included:
    /// receivers tell them apart by [`Envelope::from`]).
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<std::sync::Arc<Envelope>>;
}

/// A message and the runtime that sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The sending runtime's name on the bus (a new one at each start).
    pub from: String,
    #[serde(flatten)]
    pub message: BusMessage,
}

/// One message between gateways: an event of a run the sender runs, or a request to abort.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "camelCase")]
pub enum BusMessage {
    /// The run was queued.
    Queued(RunRef),
    /// The run started.
    Started(RunRef),
    /// A piece of the run's assistant text, numbered in its run (the receiver adds up the
    /// turn's text itself); `fresh` when it starts a model turn's text.
    Delta {
        #[serde(flatten)]
        run: RunRef,
        text: String,
        #[serde(default)]
        seq: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        fresh: bool,
    },
    /// A piece of the run's thinking.
    Thinking {
        #[serde(flatten)]
        run: RunRef,
        text: String,
    },
    /// The run's model called a tool (long arguments are replaced by `{"truncated": true}`).
    #[serde(rename_all = "camelCase")]
    ToolCall {
        #[serde(flatten)]
        run: RunRef,
        id: String,
        name: String,
        arguments: Value,
    },
    /// A tool answered (a long text is cut).
    #[serde(rename_all = "camelCase")]
    ToolResult {
        #[serde(flatten)]
        run: RunRef,
        id: String,
        name: String,
        is_error: bool,
        text: String,
    },
    /// The run ended; its outcome is read from the store where it arrives (it may be long).
    Ended(RunRef),
    /// Stop the session's running run (or `run_id`) wherever it runs.
    #[serde(rename_all = "camelCase")]
    Abort {
        #[serde(deserialize_with = "canonical_key")]
        session_key: SessionKey,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<RunId>,
    },
}

/// The run an event is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRef {
    pub run_id: RunId,
    #[serde(deserialize_with = "canonical_key")]
    pub session_key: SessionKey,
}

/// A session key another gateway sent: one it serialised from its own, so canonical.
fn canonical_key<'de, D: Deserializer<'de>>(de: D) -> Result<SessionKey, D::Error> {
    String::deserialize(de).map(SessionKey::from_canonical)
}

/// What travels: the envelope and the number that keeps equal messages apart.
#[derive(Serialize, Deserialize)]
struct Wire<E> {
    /// PostgreSQL delivers one of two equal notifications sent in one transaction: a number of
    /// the publisher's own keeps two equal deltas apart.
    n: u64,
    #[serde(flatten)]
    envelope: E,
}

/// The payload of `envelope`, numbered `n` (unique among the messages of one publisher).
pub fn encode(envelope: &Envelope, n: u64) -> Result<String, serde_json::Error> {
    serde_json::to_string(&Wire { n, envelope })
}

/// The envelope a payload holds, or why it holds none.
pub fn decode(payload: &str) -> Result<Envelope, serde_json::Error> {
    serde_json::from_str::<Wire<Envelope>>(payload).map(|wire| wire.envelope)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn run() -> RunRef {
        RunRef {
            run_id: RunId::from_string("r1"),
            session_key: SessionKey::from_canonical("agent:main:main".into()),
        }
    }

    #[test]
    fn every_message_goes_and_comes_back_whole() {
        let messages = [
            BusMessage::Queued(run()),
            BusMessage::Started(run()),
            BusMessage::Delta {
                run: run(),
                text: "Hel".into(),
                seq: 1,
                fresh: true,
            },
            BusMessage::Thinking {
                run: run(),
                text: "hm".into(),
            },
            BusMessage::ToolCall {
                run: run(),
                id: "c1".into(),
                name: "sessions_list".into(),
                arguments: json!({"limit": 3}),
            },
            BusMessage::ToolResult {
                run: run(),
                id: "c1".into(),
                name: "sessions_list".into(),
                is_error: true,
                text: "no".into(),
            },
            BusMessage::Ended(run()),
            BusMessage::Abort {
                session_key: SessionKey::from_canonical("agent:main:main".into()),
                run_id: None,
            },
        ];
        for (n, message) in messages.into_iter().enumerate() {
            let envelope = Envelope {
                from: "g1".into(),
                message,
            };
            let payload = encode(&envelope, n as u64).unwrap();
            assert_eq!(decode(&payload).unwrap(), envelope, "{payload}");
        }
    }

    #[test]
    fn the_payload_is_flat_and_named_as_documented() {
        let envelope = Envelope {
            from: "g1".into(),
            message: BusMessage::ToolResult {
                run: run(),
                id: "c1".into(),
                name: "x".into(),
                is_error: false,
                text: "ok".into(),
            },
        };
        let payload: Value = serde_json::from_str(&encode(&envelope, 7).unwrap()).unwrap();
        assert_eq!(
            payload,
            json!({"n": 7, "from": "g1", "t": "toolResult", "runId": "r1",
                   "sessionKey": "agent:main:main", "id": "c1", "name": "x",
                   "isError": false, "text": "ok"})
        );
    }

    #[test]
    fn a_payload_that_is_not_a_message_says_why() {
        let unknown = decode(r#"{"n":1,"from":"g1","t":"gossip"}"#).unwrap_err();
        assert!(unknown.to_string().contains("gossip"), "{unknown}");
        let missing =
            decode(r#"{"n":1,"from":"g1","t":"delta","runId":"r1","text":"x"}"#).unwrap_err();
        assert!(missing.to_string().contains("sessionKey"), "{missing}");
        assert!(decode("not json").is_err());
    }
}
