//! The shapes as the official SDKs write them (taken from `a2a-sdk` 1.3.0's JSON mapping).

use serde_json::json;

use super::*;

#[test]
fn a_message_from_the_python_sdk_reads_and_writes_back_the_same() {
    let wire = json!({
        "messageId": "m-1",
        "contextId": "c-1",
        "role": "ROLE_USER",
        "parts": [{"text": "@reply pong"}, {"data": {"k": 1}}]
    });
    let message: Message = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(message.role, Role::User);
    assert_eq!(message.text().as_deref(), Some("@reply pong"));
    assert_eq!(serde_json::to_value(&message).unwrap(), wire);
}

#[test]
fn stream_events_are_objects_with_one_member() {
    let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: None,
        },
        metadata: None,
    });
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING"}}})
    );
    let back: StreamResponse = serde_json::from_value(json!({"task": {
        "id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a", "parts": [{"text": "pong"}]}]
    }}))
    .unwrap();
    let StreamResponse::Task(task) = back else {
        panic!("not a task: {back:?}")
    };
    assert!(task.status.state.is_terminal());
    assert_eq!(task.artifacts[0].parts[0].text.as_deref(), Some("pong"));
}

#[test]
fn the_security_requirement_is_a_map_of_string_lists() {
    let requirement = SecurityRequirement {
        schemes: [("bearer".to_string(), StringList::default())].into(),
    };
    assert_eq!(
        serde_json::to_value(requirement).unwrap(),
        json!({"schemes": {"bearer": {"list": []}}})
    );
}

#[test]
fn error_codes_and_method_names_are_the_protocol_s() {
    assert_eq!(A2aErrorCode::TaskNotFound.code(), -32001);
    assert_eq!(A2aErrorCode::VersionNotSupported.code(), -32009);
    assert_eq!(
        A2aError::new(A2aErrorCode::ContentTypeNotSupported, "x").kind(),
        Some(A2aErrorCode::ContentTypeNotSupported)
    );
    for method in Method::ALL {
        assert_eq!(Method::parse(method.as_str()), Some(method));
    }
    assert_eq!(Method::parse("message/send"), None);
}
