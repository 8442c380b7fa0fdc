//! `switchboard gateway`: open the engine, bind, print where to connect, serve until a signal.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use switchboard_core::Engine;
use switchboard_core::config::GatewayBind;
use switchboard_core::engine::EngineOptions;
use switchboard_server::{GatewayAuth, ServerState};
use tokio_util::sync::CancellationToken;

use crate::settings::GlobalArgs;

#[derive(Args)]
pub struct GatewayArgs {
    /// Where to listen: `loopback`, `lan` or an IP address (overrides gateway.bind).
    #[arg(long, help_heading = "Gateway options")]
    bind: Option<String>,
    /// Port to listen on (overrides gateway.port; 0 picks a free one). The URL is recorded in
    /// the state dir, where client commands find it.
    #[arg(long, help_heading = "Gateway options")]
    port: Option<u16>,
}

pub async fn run(global: &GlobalArgs, args: GatewayArgs) -> Result<ExitCode> {
    let home = global.home();
    let _lock = crate::state_lock::take(&home)?;
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
    // Before the engine opens, so its first store operations count.
    let exporter = match config.observability.metrics.enabled {
        true => Some(
            switchboard_server::metrics::Exporter::install()
                .context("starting the metrics exporter (observability.metrics)")?,
        ),
        false => None,
    };
    // Sandboxed commands run through this binary (`switchboard_core::sandbox`).
    let options = EngineOptions {
        sandbox_helper: std::env::current_exe().ok(),
        ..EngineOptions::default()
    };
    let engine = Engine::open_with(&home, config, options)
        .await
        .with_context(|| format!("opening the gateway in {}", home.display()))?;
    engine.cron().start();
    engine.start_channels();
    let state = ServerState::new(engine.clone(), auth.clone());
    if let Some(exporter) = exporter {
        state.export_metrics(exporter);
    }
    let (local, listener) = switchboard_server::bind(state.clone(), addr).await?;
    // Recorded before the banner: whoever reads the banner finds it.
    let reachable = match local.ip().is_unspecified() {
        true => SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), local.port()),
        false => local,
    };
    crate::settings::record_url(&home, &format!("ws://{reachable}"))?;
    outln!(
        "switchboard {} gateway listening on ws://{local}",
        env!("CARGO_PKG_VERSION")
    );
    outln!("  web:    {}", web_line(&auth, reachable));
    outln!("  rpc:    http://{local}/rpc   health: http://{local}/health");
    outln!("  token:  {}", auth.source);
    outln!("  state:  {}", home.display());
    if engine.config().observability.metrics.enabled {
        let auth = engine.config().observability.metrics.auth;
        outln!("  metrics: http://{local}/metrics  (auth: {auth})");
    }
    tracing::info!(%local, "gateway ready");
    // The shutdown sequence (docs/architecture.md): on the signal the server stops accepting and
    // closes its connections while the engine lets runs finish for the grace period, then aborts
    // them, stops background work and flushes the store; a second signal aborts at once. Then
    // the connections' last request tasks end.
    let stop = CancellationToken::new();
    let mut serving = tokio::spawn(switchboard_server::serve(
        state.clone(),
        listener,
        stop.clone().cancelled_owned(),
    ));
    let ended_early = tokio::select! {
        () = shutdown_signal() => None,
        served = &mut serving => Some(served),
    };
    stop.cancel();
    let grace = Duration::from_secs(engine.config().gateway.shutdown_grace_seconds);
    tracing::info!(
        grace_seconds = grace.as_secs(),
        "shutting down: letting runs finish"
    );
    tokio::select! {
        () = engine.shutdown(grace) => {}
        () = shutdown_signal() => {
            tracing::warn!("a second signal: aborting the runs now");
            engine.shutdown(Duration::ZERO).await;
        }
    }
    let served = match ended_early {
        Some(served) => served,
        None => serving.await,
    };
    state.finish().await;
    crate::settings::forget_url(&home);
    served.context("the server task failed")??;
    tracing::info!("gateway stopped");
    Ok(ExitCode::SUCCESS)
}

/// The page's address. With the token in it only when stdout is a terminal: a service manager or
/// a redirect keeps what the gateway prints, and the token must not end up in its logs. Otherwise
/// the page's plain address and where the token to sign in with is.
fn web_line(auth: &GatewayAuth, reachable: SocketAddr) -> String {
    if auth.is_open() || std::io::stdout().is_terminal() {
        return auth.page_url(reachable);
    }
    format!(
        "http://{reachable}/  (sign in with the token from {}, or open http://{reachable}/#token=<token>)",
        auth.source
    )
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
