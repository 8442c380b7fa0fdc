//! Attachments of `chat.send` and `agent`: images become image blocks of the run's user message.
//! Anything that cannot be used is refused with an error that names the attachment and what is
//! accepted; nothing is dropped silently.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use switchboard_protocol::message::ContentBlock;
use switchboard_protocol::runs::ChatAttachment;

use crate::error::{CoreError, CoreResult};

/// The media types providers take.
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// The largest image, decoded (providers refuse larger ones).
pub const MAX_IMAGE_BYTES: usize = 5_000_000;
/// The most images one message carries.
pub const MAX_IMAGES: usize = 10;

/// The image blocks of `attachments`, checked.
pub fn image_blocks(method: &str, attachments: &[ChatAttachment]) -> CoreResult<Vec<ContentBlock>> {
    if attachments.len() > MAX_IMAGES {
        return Err(CoreError::invalid(format!(
            "{method}: {} attachments; at most {MAX_IMAGES} images per message",
            attachments.len()
        )));
    }
    attachments
        .iter()
        .enumerate()
        .map(|(i, a)| image_block(a).map_err(|why| refused(method, i, a, &why)))
        .collect()
}

fn refused(method: &str, index: usize, a: &ChatAttachment, why: &str) -> CoreError {
    let name = a
        .file_name
        .as_deref()
        .map(|n| format!(" ({n:?})"))
        .unwrap_or_default();
    CoreError::invalid(format!("{method}: attachments[{index}]{name}: {why}"))
}

fn image_block(a: &ChatAttachment) -> Result<ContentBlock, String> {
    let declared = a
        .mime_type
        .as_deref()
        .map(|m| m.trim().to_ascii_lowercase());
    let kind = a.kind.as_deref().map(str::trim);
    let is_image = match kind {
        Some(kind) => kind.eq_ignore_ascii_case("image"),
        None => declared.as_deref().is_some_and(|m| m.starts_with("image/")),
    };
    if !is_image {
        let what = kind.map(str::to_string).or(declared.clone());
        return Err(format!(
            "{} attachments are not accepted; only images ({})",
            what.as_deref().unwrap_or("untyped"),
            IMAGE_TYPES.join(", ")
        ));
    }
    let (prefix_type, data) = split_data_url(&a.content);
    let bytes = STANDARD
        .decode(data.trim())
        .map_err(|e| format!("content is not base64 ({e})"))?;
    if bytes.is_empty() {
        return Err("content is empty; send the image's bytes in base64".into());
    }
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "the image is {} bytes; at most {MAX_IMAGE_BYTES}",
            bytes.len()
        ));
    }
    let sniffed = sniff(&bytes);
    let mime = declared.or(prefix_type).or(sniffed.map(str::to_string));
    let Some(mime) = mime.filter(|m| IMAGE_TYPES.contains(&m.as_str())) else {
        return Err(format!(
            "the image type is not accepted; accepted: {}",
            IMAGE_TYPES.join(", ")
        ));
    };
    if sniffed.is_some_and(|s| s != mime) || sniffed.is_none() {
        return Err(format!(
            "the bytes are not a {mime} image (found {})",
            sniffed.unwrap_or("no known image format")
        ));
    }
    Ok(ContentBlock::Image {
        data: STANDARD.encode(&bytes),
        mime_type: mime,
    })
}

/// `data:<type>;base64,<data>` → (type, data); other text is the data itself.
fn split_data_url(content: &str) -> (Option<String>, &str) {
    let Some(rest) = content.trim_start().strip_prefix("data:") else {
        return (None, content);
    };
    match rest.split_once(',') {
        Some((head, data)) => {
            let mime = head.split(';').next().unwrap_or("").to_ascii_lowercase();
            ((!mime.is_empty()).then_some(mime), data)
        }
        None => (None, content),
    }
}

/// The image type the bytes' signature names.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let riff_webp = bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP";
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        _ if riff_webp => Some("image/webp"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];

    fn attachment(mime: Option<&str>, content: String) -> ChatAttachment {
        ChatAttachment {
            kind: Some("image".into()),
            mime_type: mime.map(str::to_string),
            file_name: Some("dot.png".into()),
            content,
        }
    }

    #[test]
    fn an_image_becomes_an_image_block_whatever_way_its_type_is_told() {
        let b64 = STANDARD.encode(PNG);
        for a in [
            attachment(Some("image/png"), b64.clone()),
            attachment(None, b64.clone()),
            attachment(None, format!("data:image/png;base64,{b64}")),
        ] {
            let blocks = image_blocks("chat.send", &[a]).unwrap();
            assert_eq!(
                blocks,
                vec![ContentBlock::Image {
                    data: b64.clone(),
                    mime_type: "image/png".into()
                }]
            );
        }
    }

    #[test]
    fn what_cannot_be_used_is_refused_naming_the_attachment_and_what_is_accepted() {
        let b64 = STANDARD.encode(PNG);
        let cases = [
            (
                ChatAttachment {
                    kind: Some("file".into()),
                    ..attachment(Some("application/pdf"), b64.clone())
                },
                "file attachments are not accepted; only images",
            ),
            (attachment(Some("image/png"), "%%%".into()), "not base64"),
            (
                attachment(Some("image/jpeg"), b64.clone()),
                "not a image/jpeg",
            ),
            (
                attachment(Some("image/tiff"), b64.clone()),
                "accepted: image/png",
            ),
            (
                attachment(None, STANDARD.encode(b"hello")),
                "the image type is not accepted",
            ),
            (
                attachment(None, STANDARD.encode(vec![0xFF; MAX_IMAGE_BYTES + 1])),
                "at most 5000000",
            ),
        ];
        for (a, expected) in cases {
            let err = image_blocks("chat.send", &[a]).unwrap_err().to_string();
            assert!(err.contains("attachments[0] (\"dot.png\")"), "{err}");
            assert!(err.contains(expected), "{err} should say {expected:?}");
        }
    }
}
