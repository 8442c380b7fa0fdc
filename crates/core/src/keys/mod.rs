//! Session keys (SPEC §2): the grammar of the strings that address a session, and everything that
//! can be read from a key without the store.
//!
//! This module owns agent-id normalisation (SPEC §1), the canonical key form, the aliases (`main`,
//! `global`), the legacy forms, and classification (kind, channel, chat type, chat and thread ids).
//! It does no I/O and knows nothing of the store or the config file: resolving a sessionId or a label
//! to a key is the tools' job (they ask [`looks_like_session_id`] first), and the configured agent,
//! main key and scope arrive in a [`KeyContext`]. Visibility and send policy (SPEC §8) live in
//! `access`; they read keys through this module.
//!
//! # Canonical keys
//!
//! A canonical key is `agent:<agentId>:<rest>` or the literal `global`. It is entirely lower-case,
//! has no whitespace, control or invisible formatting characters, no path separator (`/`, `\`), no
//! empty `:` segment, is at most
//! [`MAX_KEY_BYTES`] bytes, its agent id matches `^[a-z0-9][a-z0-9_-]{0,63}$`, and its rest is
//! neither `global` nor `unknown`.
//!
//! # Canonicalisation rules ([`canonicalize`])
//!
//! 1. Surrounding whitespace is trimmed; an empty input is [`KeyError::Empty`]; more than
//!    [`MAX_KEY_BYTES`] bytes is [`KeyError::TooLong`]; whitespace, control characters, invisible
//!    formatting characters (zero-width, bidi controls, BOM) or path separators (`/`, `\`) inside
//!    are [`KeyError::Invalid`].
//! 2. The input is lower-cased.
//! 3. `main` is the caller's main key: [`main_session_key`]`(ctx.agent_id, ctx)`.
//! 4. `global` is the shared bucket under [`Scope::Global`] and [`KeyError::Reserved`] under
//!    [`Scope::PerSender`]; `unknown` is always reserved.
//! 5. `agent:<id>:<rest>`: the id goes through [`normalize_agent_id`] (`agent:Ops Team!:x` is
//!    invalid because of the space, `agent:OPS!:x` becomes `agent:ops:x`). `agent:`, `agent:<id>`
//!    and `agent:<id>:` are invalid (missing agent id / rest), `agent::x` too (empty agent id).
//! 6. Anything else is a legacy key and gets the caller's prefix: `cron:job-1` becomes
//!    `agent:<ctx.agent_id>:cron:job-1`.
//! 7. The rest must have no empty `:` segment. The legacy `dm` marker becomes `direct`: `dm:<peer>`,
//!    `<channel>:dm:<peer>` and `<channel>:<account>:dm:<peer>` (only where the first segment can be
//!    a channel, i.e. is not `cron`, `hook`, `node`, `node-…`, `subagent`, `direct` or `dm`).
//! 8. A rest of exactly `global` or `unknown` is reserved.
//! 9. Under [`Scope::Global`], a rest equal to the configured main key (of any agent) is `global`.
//! 10. A result longer than [`MAX_KEY_BYTES`] (a long legacy key plus its prefix) is too long.
//!
//! Canonicalisation is total (a key or an error whose text names the accepted forms) and idempotent:
//! `canonicalize(canonicalize(x)?.as_str(), ctx) == canonicalize(x, ctx)` for the same `ctx`.
//! A configured main key that is not itself a valid rest is replaced by `main` by the key functions
//! ([`normalize_main_key`] lets the config loader reject it up front).
//!
//! # Classification (on the rest; SPEC §2.1)
//!
//! | rest | kind | channel | chat type |
//! |---|---|---|---|
//! | the main key (and `global`) | main | – | direct |
//! | `<channel>:group:<id>[:thread:<t>\|:topic:<t>]` | group | `<channel>` | group |
//! | `<channel>:channel:<id>[:thread:<t>\|:topic:<t>]` | group | `<channel>` | channel |
//! | `direct:<peer>` | other | – | direct |
//! | `<channel>:direct:<peer>`, `<channel>:<account>:direct:<peer>` | other | `<channel>` | direct |
//! | `cron:…`, `hook:…`, `node-…`, `node:…` | cron, hook, node | `internal` | – |
//! | `subagent:…`, anything else | other | – | – |
//!
//! A group id may itself contain `:` (Matrix room ids); a trailing `:thread:<t>` / `:topic:<t>` is
//! split off only when an id remains before it.

mod agent_id;
mod canonical;
mod error;
mod key;
mod kind;
mod shape;

#[cfg(test)]
mod proptests;

pub use agent_id::normalize_agent_id;
pub use canonical::{
    KeyContext, Scope, canonicalize, group_key, looks_like_session_id, main_session_key,
    normalize_main_key,
};
pub use error::{ACCEPTED_FORMS, KeyError};
pub use key::{SessionKey, display_key, key_channel};
pub use kind::{ChatType, KindsFilter, SessionKind};

/// The agent id used when none is configured, and what an empty id normalises to.
pub const DEFAULT_AGENT_ID: &str = "main";

/// The default `session.mainKey`, and the alias every caller may use for its own main session.
pub const DEFAULT_MAIN_KEY: &str = "main";

/// The shared direct-chat bucket under `session.scope = "global"`; reserved otherwise.
pub const GLOBAL_KEY: &str = "global";

/// Always reserved: never a session anyone can address.
pub const UNKNOWN_KEY: &str = "unknown";

/// The longest key accepted or produced, in bytes.
pub const MAX_KEY_BYTES: usize = 512;
