//! `builtin/echo`: replies with the text of the last user message (its string, or its text
//! blocks one per line), streamed word by word. Never calls a tool; no user message → empty reply.

use super::{EventSink, ModelRequest, ModelResponse, ProviderError, last_user, stream_text};

pub(super) async fn complete(
    request: &ModelRequest,
    events: EventSink<'_>,
) -> Result<ModelResponse, ProviderError> {
    let text = last_user(&request.messages)
        .map(|(_, text)| text)
        .unwrap_or_default();
    stream_text(&text, None, events).await;
    Ok(super::text_response(request, text))
}
