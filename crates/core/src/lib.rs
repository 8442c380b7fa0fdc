//! The switchboard engine, free of any transport: configuration, session keys, the store, and
//! session management. Adapters (the gateway, the CLI, later MCP) sit on top of its plain async
//! API; the runtime, session tools and access rules join in later milestones.

pub mod access;
pub mod clock;
pub mod config;
pub mod cron;
pub mod engine;
pub mod error;
pub mod keys;
pub mod runtime;
pub mod sessions;
pub mod store;
pub mod tools;

pub use engine::{Engine, EngineOptions};
pub use error::{CoreError, CoreResult};
