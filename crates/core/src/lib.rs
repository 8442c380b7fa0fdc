//! The switchboard engine, free of any transport: configuration, session keys, the store, and
//! session management. Adapters (the gateway, the CLI, later MCP) sit on top of its plain async
//! API; the runtime, session tools and access rules join in later milestones.

pub mod access;
pub mod channels;
pub mod clock;
pub mod config;
pub mod cron;
pub mod delivery;
pub mod engine;
pub mod error;
pub mod keys;
pub mod runtime;
pub mod sessions;
pub mod store;
pub mod subagents;
pub mod tools;

pub use engine::{Engine, EngineOptions};
pub use error::{CoreError, CoreResult};

/// An HTTP client with the TLS provider this build uses (tests and adapters share it).
pub use runtime::providers::http::client as http_client;
