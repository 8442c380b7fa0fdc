//! `switchboard mcp --session KEY`: the session tools as a stdio MCP server, for any MCP client
//! (coding agents, IDEs). It talks to the running gateway (`tools.list` / `tools.invoke`), acting
//! as the given session under that session's own rules. See docs/mcp.md.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use switchboard_server::mcp::{Acting, McpServer, RemoteInvoker, serve_stdio};

use crate::settings::GlobalArgs;

#[derive(Args)]
pub struct McpArgs {
    /// The session to act as: a session key (e.g. agent:main:main), a legacy key, `main` (the
    /// default agent's main session) or a sessionId. It must exist on the gateway.
    #[arg(long)]
    session: String,
}

pub async fn run(global: &GlobalArgs, args: McpArgs) -> Result<ExitCode> {
    let session = args.session.trim();
    if session.is_empty() {
        anyhow::bail!("--session needs a session key, e.g. --session agent:main:main");
    }
    let (url, token) = global.target()?;
    let invoker = Arc::new(RemoteInvoker::new(url, token));
    let server = McpServer::new(invoker, Acting::Session(session.to_string()));
    serve_stdio(server)
        .await
        .context("serving MCP on stdin/stdout")?;
    Ok(ExitCode::SUCCESS)
}
