//! `chat.send` attachments: an image reaches the provider in its wire format and stays in the
//! transcript as an image block; a model that takes no images refuses it before anything is
//! stored.

use serde_json::{Value, json};
use switchboard_core::config::{
    Config, ModelEntry, ModelInput, ModelRef, ProviderApi, ProviderConfig,
};
use switchboard_core::store::RunStatus;
use switchboard_protocol::runs::{ChatAttachment, ChatSendAnswer, ChatSendParams};
use switchboard_testkit::{MockApi, MockLlm};

use super::support::{GUARD, TestEngine};

/// A 1×1 PNG's first bytes (the signature is what is checked).
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==";

fn provider(api: ProviderApi, base: String, text_only: bool) -> ProviderConfig {
    let input = text_only.then(|| vec![ModelInput::Text]);
    ProviderConfig {
        api,
        base_url: Some(base),
        max_retries: Some(0),
        timeout_seconds: Some(10),
        models: vec![ModelEntry {
            id: "m1".into(),
            input,
            ..ModelEntry::default()
        }],
        ..ProviderConfig::default()
    }
}

fn send(session: &str, attachments: Vec<ChatAttachment>) -> ChatSendParams {
    ChatSendParams {
        session_key: session.into(),
        message: "what is in this picture?".into(),
        attachments,
        ..ChatSendParams::default()
    }
}

fn png(mime: Option<&str>) -> ChatAttachment {
    ChatAttachment {
        kind: Some("image".into()),
        mime_type: mime.map(str::to_string),
        file_name: Some("dot.png".into()),
        content: PNG.into(),
    }
}

/// The image part of the last request's last user message, in either format.
fn image_part(request: &Value, api: MockApi) -> Value {
    let messages = request["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    let parts = user["content"].as_array().unwrap();
    let kind = match api {
        MockApi::OpenAi => "image_url",
        MockApi::Anthropic => "image",
    };
    parts
        .iter()
        .find(|p| p["type"] == kind)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} part in {user}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_reaches_both_wire_formats_and_stays_in_the_transcript() {
    let mock = MockLlm::start().await;
    let mut config = Config::default();
    let formats = [
        ("oa", ProviderApi::OpenAiCompletions, mock.openai_base_url()),
        (
            "an",
            ProviderApi::AnthropicMessages,
            mock.anthropic_base_url(),
        ),
    ];
    for (id, api, base) in formats.clone() {
        config
            .models
            .providers
            .insert(id.into(), provider(api, base, false));
    }
    let t = TestEngine::open(config).await;
    for (i, (id, _, _)) in formats.iter().enumerate() {
        let session = format!("pictures-{id}");
        t.create(&session).await;
        let patch = switchboard_core::store::EntryPatch {
            model: switchboard_protocol::sessions::Patch::Set(format!("{id}/m1")),
            ..Default::default()
        };
        t.engine
            .store()
            .patch(&t.key(&session), patch)
            .await
            .unwrap();
        let mime = (i == 0).then_some("image/png");
        let answer = t
            .engine
            .sessions()
            .chat_send(send(&session, vec![png(mime)]), true)
            .await
            .unwrap();
        let ChatSendAnswer::Started(started) = answer else {
            panic!("not started: {answer:?}");
        };
        let run = switchboard_core::RunId::from_string(started.run_id.clone());
        let record = t.engine.runtime().wait(&run, GUARD).await.unwrap().record;
        assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
        let transcript = t.transcript(&session).await;
        assert_eq!(
            transcript[0]["content"],
            json!([
                {"type": "text", "text": "what is in this picture?"},
                {"type": "image", "data": PNG, "mimeType": "image/png"}
            ])
        );
    }
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        image_part(&requests[0].body, MockApi::OpenAi),
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}})
    );
    assert_eq!(
        image_part(&requests[1].body, MockApi::Anthropic)["source"],
        json!({"type": "base64", "media_type": "image/png", "data": PNG})
    );
    mock.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_image_input_refuses_the_image_and_stores_nothing() {
    let mock = MockLlm::start().await;
    let mut config = Config::default();
    let text_only = provider(ProviderApi::OpenAiCompletions, mock.openai_base_url(), true);
    config.models.providers.insert("plain".into(), text_only);
    config.agents.defaults.model = ModelRef::new("plain/m1");
    let t = TestEngine::open(config).await;
    let err = t
        .engine
        .sessions()
        .chat_send(send("main", vec![png(None)]), true)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the model plain/m1 does not take images"),
        "{err}"
    );
    // The built-in models read text only, and say so the same way.
    t.create("local").await;
    let patch = switchboard_core::store::EntryPatch {
        model: switchboard_protocol::sessions::Patch::Set("builtin/scripted".into()),
        ..Default::default()
    };
    t.engine
        .store()
        .patch(&t.key("local"), patch)
        .await
        .unwrap();
    let err = t
        .engine
        .sessions()
        .chat_send(send("local", vec![png(None)]), true)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("builtin/scripted does not take images"),
        "{err}"
    );
    // A non-image attachment is refused whatever the model.
    let pdf = ChatAttachment {
        kind: Some("file".into()),
        mime_type: Some("application/pdf".into()),
        ..png(None)
    };
    let err = t
        .engine
        .sessions()
        .chat_send(send("main", vec![pdf]), true)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("only images"), "{err}");
    // Refused before anything was stored or queued.
    assert!(t.transcript("main").await.is_empty());
    assert!(mock.requests().is_empty());
    mock.stop().await;
}
