//! Identifier newtypes that travel through the runtime, the store and the records: [`RunId`]
//! here, [`SessionKey`](crate::keys::SessionKey) in `keys`. Plain strings on the wire; a type of
//! their own inside, so a run id is never passed where a session key belongs.

use std::borrow::Borrow;
use std::fmt;

/// The id of one run (a v7 UUID for the runs this gateway starts; any non-empty string a caller
/// chose when it names one).
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct RunId(String);

impl RunId {
    /// A new, time-ordered id.
    pub fn new() -> Self {
        Self(uuid::Uuid::now_v7().to_string())
    }

    /// Wraps an id read back from the store or given by a caller.
    pub fn from_string(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id of the run a caller's `idempotencyKey` names, when the key is usable as one
    /// (1 to 128 visible ASCII characters): the reference's clients name a run before they send
    /// it and match its events by that name.
    pub fn of_idempotency_key(key: &str) -> Option<Self> {
        let usable =
            !key.is_empty() && key.len() <= 128 && key.chars().all(|c| c.is_ascii_graphic());
        usable.then(|| Self(key.to_string()))
    }

    /// The id named by `name`, the same for the same name: a step that is made again (a tool
    /// call of a run resumed after a stop) names the run it made the first time.
    pub fn named(name: &str) -> Self {
        Self(uuid_named(name).to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A UUID made from `name` (the first 16 bytes of its SHA-256, marked as a v4 UUID): the same
/// name gives the same UUID.
pub fn uuid_named(name: &str) -> uuid::Uuid {
    let digest = ring::digest::digest(&ring::digest::SHA256, name.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.as_ref()[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

impl Default for RunId {
    fn default() -> Self {
        Self::new()
    }
}

/// Reads as the string it is (`len`, comparisons, `Option::as_deref`).
impl std::ops::Deref for RunId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for RunId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Maps keyed by `RunId` can be queried with a `&str`.
impl Borrow<str> for RunId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> Self {
        id.0
    }
}

impl PartialEq<str> for RunId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for RunId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for RunId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl PartialEq<RunId> for String {
    fn eq(&self, other: &RunId) -> bool {
        *self == other.0
    }
}

impl PartialEq<RunId> for &str {
    fn eq(&self, other: &RunId) -> bool {
        *self == other.0
    }
}
