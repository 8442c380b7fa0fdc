//! The client-server API's shapes as the channel reads them: a `/sync` answer's rooms and their
//! events, whichever way they were read (`client.rs`: through `matrix-sdk`, decrypted or not).
//! Only the fields the channel reads are decoded.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

pub(super) use crate::channels::kit::http::ApiError;

/// Why an encrypted event is not read when the bot does not encrypt.
pub const UNREADABLE: &str = "encryption is off (channels.matrix.encryption)";

/// The homeserver does not know the token (or the password login was refused).
pub fn is_refusal(e: &ApiError) -> bool {
    let refused = [
        "M_UNKNOWN_TOKEN",
        "M_MISSING_TOKEN",
        "M_FORBIDDEN",
        "M_USER_DEACTIVATED",
    ];
    refused.iter().any(|code| e.is(code)) && matches!(e.status, 401 | 403)
}

/// One `/sync` answer: the rooms' new events and the next position.
#[derive(Debug, Default, Deserialize)]
pub struct Sync {
    pub next_batch: String,
    #[serde(default)]
    pub rooms: Rooms,
}

#[derive(Debug, Default, Deserialize)]
pub struct Rooms {
    #[serde(default)]
    pub join: BTreeMap<String, JoinedRoom>,
    #[serde(default)]
    pub invite: BTreeMap<String, InvitedRoom>,
}

#[derive(Debug, Default, Deserialize)]
pub struct JoinedRoom {
    #[serde(default)]
    pub timeline: Timeline,
}

#[derive(Debug, Default, Deserialize)]
pub struct Timeline {
    #[serde(default)]
    pub events: Vec<Event>,
}

#[derive(Debug, Default, Deserialize)]
pub struct InvitedRoom {
    #[serde(default)]
    pub invite_state: InviteState,
}

#[derive(Debug, Default, Deserialize)]
pub struct InviteState {
    #[serde(default)]
    pub events: Vec<Event>,
}

/// A room event (in a timeline or an invite's stripped state).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Event {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub event_id: String,
    #[serde(default)]
    pub sender: String,
    pub state_key: Option<String>,
    #[serde(default)]
    pub content: Value,
    /// What the homeserver adds (`prev_content` of a state event).
    #[serde(default)]
    pub unsigned: Value,
    /// Why an encrypted event could not be decrypted (set by the client, not the wire).
    #[serde(skip)]
    pub unreadable: Option<String>,
}

impl Event {
    /// Why the event cannot be read, when it is an encrypted one: why it could not be
    /// decrypted, or (not decrypted at all) that the bot does not encrypt.
    pub fn unreadable(&self) -> Option<&str> {
        match (&self.unreadable, self.kind.as_str()) {
            (Some(why), _) => Some(why),
            (None, "m.room.encrypted") => Some(UNREADABLE),
            _ => None,
        }
    }
}
