//! What A2A 1.0 requires of a request's values beyond their types, checked before anything is
//! stored: a message's required fields (`messageId`, `role`, non-empty `parts`), `pageSize`
//! within 1–100, `historyLength` not negative. Each refusal is `InvalidParams` naming the field
//! and what is accepted (A2A 1.0 §3.3.2, "Validation Errors").

use switchboard_protocol::a2a::{A2aError, A2aErrorCode, Message, Role};

use super::{A2aResult, invalid_params};

/// `ListTasks`' page size when none is asked, and its bounds (A2A 1.0 `ListTasksRequest`:
/// "If unspecified, at most 50 tasks will be returned. The minimum value is 1. The maximum
/// value is 100.").
pub(super) const DEFAULT_PAGE: usize = 50;
pub(super) const MIN_PAGE: i32 = 1;
pub(super) const MAX_PAGE: i32 = 100;

/// The page size `given` asks for, or why it is refused.
pub(super) fn page_size(given: Option<i32>) -> A2aResult<usize> {
    match given {
        None => Ok(DEFAULT_PAGE),
        Some(n) if (MIN_PAGE..=MAX_PAGE).contains(&n) => Ok(n.unsigned_abs() as usize),
        Some(n) => Err(invalid_params(format!(
            "pageSize {n} is out of range: give {MIN_PAGE} to {MAX_PAGE}, or leave it out for \
             {DEFAULT_PAGE}"
        ))),
    }
}

/// How many of a task's most recent history messages `given` asks for (`None`: no limit), or
/// why it is refused; `field` is its name in the request (`historyLength`,
/// `configuration.historyLength`).
pub(super) fn history_length(field: &str, given: Option<i32>) -> A2aResult<Option<usize>> {
    match given {
        None => Ok(None),
        Some(n) if n >= 0 => Ok(Some(n.unsigned_abs() as usize)),
        Some(n) => Err(invalid_params(format!(
            "{field} {n} is negative: give 0 (no history), a positive number (at most that many \
             of the most recent messages), or leave it out (the whole history)"
        ))),
    }
}

/// The text a client's message asks the agent to answer, once its required fields are there;
/// otherwise why it is refused.
pub(super) fn message_text(message: &Message) -> A2aResult<String> {
    if message.message_id.trim().is_empty() {
        return Err(invalid_params(
            "message.messageId is required: a unique id for this message (a repeat of the \
             same id is the same message, answered with its task)",
        ));
    }
    match message.role {
        Role::User => {}
        Role::Unspecified => {
            return Err(invalid_params(
                "message.role is required: send \"role\": \"ROLE_USER\" (the accepted role of a \
                 message sent to an agent; ROLE_AGENT is the agent's own)",
            ));
        }
        Role::Agent => {
            return Err(invalid_params(
                "message.role ROLE_AGENT is the agent's role: a message sent to an agent is \
                 \"ROLE_USER\" (the accepted role)",
            ));
        }
    }
    if message.parts.is_empty() {
        return Err(invalid_params(
            "message.parts is empty: send at least one part, e.g. [{\"text\": \"…\"}]",
        ));
    }
    match message.text() {
        None => Err(A2aError::new(
            A2aErrorCode::ContentTypeNotSupported,
            "the message has no text: send parts with text ({\"text\": \"…\"}); this agent \
             reads text parts only (raw, url and data parts are not read)",
        )),
        Some(text) if text.trim().is_empty() => Err(invalid_params(
            "message.parts: the text parts are empty: put what the agent should answer in \
             {\"text\": \"…\"}",
        )),
        Some(text) => Ok(text),
    }
}

#[cfg(test)]
mod tests {
    use switchboard_protocol::a2a::Part;

    use super::*;

    fn code(result: A2aResult<impl std::fmt::Debug>) -> (i64, String) {
        let e = result.unwrap_err();
        (e.code, e.message)
    }

    #[test]
    fn page_size_is_1_to_100_and_50_when_left_out() {
        // A2A 1.0 a2a.proto, ListTasksRequest.page_size: "If unspecified, at most 50 tasks will
        // be returned. The minimum value is 1. The maximum value is 100."
        assert_eq!(page_size(None).unwrap(), 50);
        assert_eq!(page_size(Some(1)).unwrap(), 1);
        assert_eq!(page_size(Some(100)).unwrap(), 100);
        for n in [0, -1, 101, 1000, i32::MIN, i32::MAX] {
            let (code, message) = code(page_size(Some(n)));
            assert_eq!(code, -32602);
            assert!(
                message.contains("pageSize") && message.contains("1 to 100"),
                "{message}"
            );
        }
    }

    #[test]
    fn history_length_is_not_negative() {
        // A2A 1.0 §3.2.4: unset, "0: No history should be returned", "> 0: Return at most this
        // many recent messages"; §6.5 refuses -5: "Must be non-negative integer, got -5".
        assert_eq!(history_length("historyLength", None).unwrap(), None);
        assert_eq!(history_length("historyLength", Some(0)).unwrap(), Some(0));
        assert_eq!(history_length("historyLength", Some(3)).unwrap(), Some(3));
        let (code, message) = code(history_length("configuration.historyLength", Some(-1)));
        assert_eq!(code, -32602);
        assert!(
            message.starts_with("configuration.historyLength -1"),
            "{message}"
        );
    }

    #[test]
    fn a_message_needs_an_id_the_user_role_and_parts() {
        // A2A 1.0 a2a.proto, Message: `message_id`, `role` and `parts` are
        // "(google.api.field_behavior) = REQUIRED", and §5.7: "Implementations SHOULD validate
        // these requirements and reject messages with missing required fields. Arrays marked as
        // required MUST contain at least one element."; ROLE_USER: "The message is from the
        // client to the server."
        let good = Message {
            message_id: "m".into(),
            role: Role::User,
            parts: vec![Part::text("hi")],
            ..Message::default()
        };
        assert_eq!(message_text(&good).unwrap(), "hi");
        let refused = |m: Message| code(message_text(&m));
        let no_role = Message {
            role: Role::Unspecified,
            ..good.clone()
        };
        assert!(refused(no_role).1.starts_with("message.role is required"));
        let agent = Message {
            role: Role::Agent,
            ..good.clone()
        };
        assert!(refused(agent).1.contains("ROLE_USER"));
        let empty = Message {
            parts: Vec::new(),
            ..good.clone()
        };
        assert_eq!(refused(empty).0, -32602);
        let blank = Message {
            parts: vec![Part::text(" ")],
            ..good.clone()
        };
        assert_eq!(refused(blank).0, -32602);
        let data = Message {
            parts: vec![Part {
                data: Some(serde_json::json!({"k": 1})),
                ..Part::default()
            }],
            ..good
        };
        assert_eq!(refused(data).0, -32005);
    }
}
