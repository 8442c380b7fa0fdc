//! `switchboard gateway`: open the engine, bind, print where to connect, serve until a signal.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use switchboard_core::Engine;
use switchboard_core::config::GatewayBind;
use switchboard_server::{GatewayAuth, ServerState};

use crate::settings::GlobalArgs;

#[derive(Args)]
pub struct GatewayArgs {
    /// `loopback`, `lan` or an IP address (overrides gateway.bind).
    #[arg(long)]
    bind: Option<String>,
    /// Port (overrides gateway.port; 0 picks a free one).
    #[arg(long)]
    port: Option<u16>,
}

pub async fn run(global: &GlobalArgs, args: GatewayArgs) -> Result<ExitCode> {
    let home = global.home();
    let loaded = global.load_config()?;
    loaded.warn_unknown_paths();
    let mut config = loaded.config;
    if let Some(bind) = &args.bind {
        config.gateway.bind = GatewayBind::parse(bind)
            .with_context(|| format!("--bind {bind:?}: expected {}", GatewayBind::EXPECTED))?;
    }
    if let Some(port) = args.port {
        config.gateway.port = port;
    }
    let addr = SocketAddr::new(config.gateway.bind.ip(), config.gateway.port);
    let auth = GatewayAuth::load_or_create(&config, &home)
        .with_context(|| format!("reading or creating the token in {}", home.display()))?;
    let engine = Engine::open(&home, config)
        .await
        .with_context(|| format!("opening the store in {}", home.display()))?;
    engine.cron().start();
    let state = ServerState::new(engine.clone(), auth.clone());
    let (local, listener) = switchboard_server::bind(state.clone(), addr).await?;
    outln!(
        "switchboard {} gateway listening on ws://{local}",
        env!("CARGO_PKG_VERSION")
    );
    outln!("  rpc:    http://{local}/rpc   health: http://{local}/health");
    outln!("  token:  {}", auth.source);
    outln!("  state:  {}", home.display());
    tracing::info!(%local, "gateway ready");
    // The shutdown sequence (docs/architecture.md): stop accepting and close the connections,
    // let runs finish for the grace period then abort them, stop background work, flush the
    // store; then the connections' last request tasks end.
    switchboard_server::serve(state.clone(), listener, shutdown_signal()).await?;
    let grace = std::time::Duration::from_secs(engine.config().gateway.shutdown_grace_seconds);
    tracing::info!(
        grace_seconds = grace.as_secs(),
        "shutting down: letting runs finish"
    );
    engine.shutdown(grace).await;
    state.finish().await;
    tracing::info!("gateway stopped");
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
