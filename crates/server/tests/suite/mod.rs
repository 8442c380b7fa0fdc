mod harness;
mod history;
mod mcp;
mod policy;
mod protocol;
mod runs;
mod sessions;
mod tools;
