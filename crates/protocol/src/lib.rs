//! Wire types of the switchboard gateway: WebSocket frames, the handshake, method params and
//! results, transcript messages and the error set. This crate is the contract shared by the
//! server, the CLI and the tests; it holds no I/O and no engine logic.
//!
//! Field names are camelCase on the wire, like the reference gateway's protocol (version 4), so
//! its clients can talk to us.
//!
//! A type whose optional fields may each be absent, and are left out while `None`, says so once
//! for all of them with serde_with's `apply`: `Option => #[serde(default, skip_serializing_if =
//! "Option::is_none")]`, the attribute each field would otherwise carry (a field that must be
//! written as `null` opts out with `#[serde_with(skip_apply)]`). Where the defaults are given
//! another way (`#[serde(default)]` on the type, or field by field), `#[skip_serializing_none]`
//! only leaves `None` out.

#[macro_use]
mod names;

pub mod a2a;
pub mod agent_tools;
pub mod agents;
pub mod chat;
pub mod checked;
pub mod cron;
pub mod decode;
pub mod delivery;
pub mod empty;
pub mod events;
pub mod exchanges;
pub mod exec_tools;
pub mod file_tools;
pub mod frames;
pub mod inbound;
pub mod lenient;
pub mod list_json;
pub mod message;
pub mod overview;
pub mod pairing;
pub mod reading;
pub mod reference_fields;
pub mod runs;
pub mod session_tools;
pub mod sessions;
pub mod strict;
pub mod tools;
pub mod usage;
pub mod web_tools;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod wire_tests;

pub use frames::{ErrorCode, ErrorShape, EventFrame, Frame, RequestFrame, ResponseFrame};

/// The gateway protocol version we speak (the reference's v4).
pub const PROTOCOL_VERSION: u32 = 4;
