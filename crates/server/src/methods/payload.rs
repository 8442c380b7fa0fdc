//! A method's answer as it goes on the wire. Most answers are a [`Value`]; the large reads
//! (`sessions.list`, `chat.history`) are encoded once, from their typed rows, as JSON text that
//! is spliced into the frame as it is: no `Value` tree of every row, no second encoding.

use serde::Serialize;
use serde_json::Value;
use switchboard_protocol::frames::{Frame, ResponseFrame};
use switchboard_protocol::{ErrorCode, ErrorShape};

/// What a method answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Value(Value),
    /// The payload's compact JSON text, written from the typed answer.
    Json(String),
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::Value(value)
    }
}

impl Payload {
    /// `value` encoded once, as the text the frame carries.
    pub fn encode<T: Serialize>(value: &T) -> Result<Self, ErrorShape> {
        serde_json::to_string(value)
            .map(Payload::Json)
            .map_err(encode_error)
    }

    /// A payload already written as JSON text (`switchboard_protocol::list_json`).
    pub fn json_bytes(written: serde_json::Result<Vec<u8>>) -> Result<Self, ErrorShape> {
        let text = written.map_err(encode_error)?;
        String::from_utf8(text).map(Payload::Json).map_err(|e| {
            ErrorShape::new(
                ErrorCode::Internal,
                format!("could not encode the result: {e}"),
            )
        })
    }

    /// The payload as a value (for a caller that needs to look into it).
    pub fn into_value(self) -> Result<Value, ErrorShape> {
        match self {
            Payload::Value(value) => Ok(value),
            Payload::Json(text) => serde_json::from_str(&text).map_err(encode_error),
        }
    }

    /// The `res` frame that answers request `id` with this payload: the text
    /// `Frame::Res(ResponseFrame::ok(id, payload))` encodes to.
    pub fn response_frame(self, id: &str) -> Result<String, serde_json::Error> {
        match self {
            Payload::Value(value) => {
                serde_json::to_string(&Frame::Res(ResponseFrame::ok(id, value)))
            }
            Payload::Json(json) => {
                let id = serde_json::to_string(id)?;
                Ok(splice(&[
                    r#"{"type":"res","id":"#,
                    &id,
                    r#","ok":true,"payload":"#,
                    &json,
                    "}",
                ]))
            }
        }
    }

    /// The body of a `POST /rpc` answer that carries this payload: `{"ok":true,"payload":…}`.
    pub fn rpc_body(self) -> Result<String, serde_json::Error> {
        match self {
            Payload::Value(value) => {
                serde_json::to_string(&switchboard_protocol::frames::RpcResponse {
                    ok: true,
                    payload: Some(value),
                    error: None,
                })
            }
            Payload::Json(json) => Ok(splice(&[r#"{"ok":true,"payload":"#, &json, "}"])),
        }
    }
}

/// The parts, one after another, in one allocation.
fn splice(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    parts.iter().for_each(|p| out.push_str(p));
    out
}

fn encode_error(e: serde_json::Error) -> ErrorShape {
    ErrorShape::new(
        ErrorCode::Internal,
        format!("could not encode the result: {e}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_spliced_frame_is_the_frame_serde_writes() {
        let payload = json!({"sessions": [{"key": "main", "label": "ü \"q\""}], "count": 1});
        let id = "req-\"1\"";
        let spliced = Payload::encode(&payload)
            .unwrap()
            .response_frame(id)
            .unwrap();
        let written = Payload::Value(payload.clone()).response_frame(id).unwrap();
        assert_eq!(spliced, written);
        let body = Payload::encode(&payload).unwrap().rpc_body().unwrap();
        assert_eq!(body, Payload::Value(payload.clone()).rpc_body().unwrap());
        assert_eq!(
            Payload::encode(&payload).unwrap().into_value().unwrap(),
            payload
        );
    }

    /// The frame before: the typed answer turned into a value, then the frame of that value.
    fn frame_via_value<T: Serialize>(id: &str, answer: &T) -> Value {
        let old = Payload::Value(serde_json::to_value(answer).unwrap());
        serde_json::from_str(&old.response_frame(id).unwrap()).unwrap()
    }

    fn frame_encoded<T: Serialize>(id: &str, answer: &T) -> Value {
        let text = Payload::encode(answer).unwrap().response_frame(id).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn a_list_page_encoded_from_its_rows_is_the_page_encoded_through_a_value() {
        use switchboard_protocol::list_json::list_page_json;
        use switchboard_protocol::sessions::SessionsListResult;
        let every_field: Value = serde_json::from_str(
            r#"{
            "key": "agent:main:dm:ü-\"q\"", "kind": "group", "channel": "telegram", "agentId": "main",
            "sessionId": "0b6e", "createdAt": 1, "updatedAt": -2, "chatType": "group",
            "displayName": "Zoë 🎉", "label": "läbel\n", "model": "mock/m", "contextTokens": 128000,
            "inputTokens": 18446744073709551615, "outputTokens": 2, "totalTokens": 3, "costUsd": 0.000123,
            "thinkingLevel": "high", "verboseLevel": "on", "systemSent": true, "abortedLastRun": true,
            "sendPolicy": "deny", "lastChannel": "telegram", "lastTo": "+1", "spawnedBy": "main",
            "deliveryContext": {"channel": "telegram", "to": "+1", "accountId": "a", "threadId": "t"},
            "archivedAt": 5, "transcriptPath": "/tmp/ü.jsonl", "runState": "running",
            "status": "running", "hasActiveRun": true, "activeRunIds": ["r1"], "lastRunId": "r0",
            "startedAt": 1, "endedAt": 2, "runtimeMs": 1,
            "subagent": {"state": "announcing", "outcome": "ok", "task": "t", "endedAt": 9},
            "messages": [
                {"seq": 1, "role": "user", "content": "hi", "timestamp": 1},
                {"seq": 2, "role": "assistant", "content": [{"type": "text", "text": "ok"}], "provider": "p",
                 "model": "m", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
                 "stopReason": "stop", "timestamp": 2},
                {"seq": 3, "role": "system", "foreign": null}
            ]
        }"#,
        )
        .unwrap();
        let no_field = json!({"key": "main", "kind": "main", "channel": "unknown", "agentId": "main",
            "sessionId": "x", "createdAt": 0, "updatedAt": 0});
        let page: SessionsListResult = serde_json::from_value(json!({
            "count": 2, "sessions": [every_field, no_field], "nextCursor": "c", "warning": "w",
            "defaults": {"model": "m", "modelProvider": "mock", "contextTokens": 1}
        }))
        .unwrap();
        assert_eq!(frame_encoded("7", &page), frame_via_value("7", &page));
        let bare: SessionsListResult =
            serde_json::from_value(json!({"count": 0, "sessions": []})).unwrap();
        assert_eq!(frame_encoded("8", &bare), frame_via_value("8", &bare));
        // As `sessions.list` writes it: field by field, the same text as serde_json's.
        for page in [&page, &bare] {
            let written = Payload::json_bytes(list_page_json(page)).unwrap();
            assert_eq!(written, Payload::encode(page).unwrap());
        }
    }

    #[test]
    fn a_history_page_encoded_from_its_messages_is_the_page_encoded_through_a_value() {
        use switchboard_protocol::chat::ChatHistoryResult;
        let page: ChatHistoryResult = serde_json::from_value(json!({
            "sessionKey": "main", "sessionId": "x", "nextBefore": 4,
            "messages": [
                {"seq": 4, "role": "toolResult", "toolCallId": "c", "toolName": "t",
                 "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
                 "isError": false, "details": {"a": [1.5, null, "ü"]}, "timestamp": 3},
                {"seq": 5, "role": "user", "content": [{"type": "text", "text": "é\u{0}"}], "timestamp": 4,
                 "provenance": {"kind": "compaction"}, "__openclaw": {"id": "00000005", "seq": 5, "kind": "compaction"}}
            ]
        }))
        .unwrap();
        assert_eq!(frame_encoded("9", &page), frame_via_value("9", &page));
    }
}
