//! `switchboard`: run the gateway, call it, manage sessions, serve MCP, check the config (SPEC §11).

/// `println!` for a command's output: a reader that went away (`switchboard … | head`) ends the
/// output quietly instead of panicking; any other write error still panics, as `println!` does.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout().lock(), $($arg)*) {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                panic!("failed printing to stdout: {e}");
            }
        }
    }};
}

mod approvals;
mod bench;
mod chat;
mod client_cmds;
mod cron_cmd;
mod demo;
mod dev;
mod doctor;
mod doctor_bots;
mod gateway;
mod import;
mod mcp;
mod ops;
mod otlp;
mod pairing;
mod service;
mod settings;
mod state_lock;
mod table;

use std::io::IsTerminal;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use switchboard_core::config::LogFormat;

/// jemalloc, for Rust's allocations and the C code's: glibc's malloc kept 500 MB after 100
/// messages of 1 MB (docs/decisions.md, "Memory comes back"). `.cargo/config.toml` sets its
/// options; the gateway adds a background thread ([`purge_in_background`]).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Lets a jemalloc thread give freed memory back to the system within seconds of a burst,
/// however idle the gateway is then. Started by the gateway only, not built in: the sandbox
/// (`__sandbox`) must be one thread to enter its namespaces (`unshare` refuses a process with
/// threads).
fn purge_in_background() {
    if let Err(e) = tikv_jemalloc_ctl::background_thread::write(true) {
        tracing::warn!(error = %e, "could not start the allocator's purging thread; freed memory comes back more slowly");
    }
}

#[derive(Parser)]
#[command(name = "switchboard", version, about = "An agent-session gateway")]
struct Cli {
    #[command(flatten)]
    global: settings::GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway in the foreground (logs to stderr).
    Gateway(gateway::GatewayArgs),
    /// Whether the running gateway is well: its store, sessions, channels and MCP servers.
    Health,
    /// The running gateway at a glance: store, agents, channels, run queue, recent problems.
    Status,
    /// The running gateway's recent log: `switchboard logs --follow --level warn`.
    Logs(ops::LogsArgs),
    /// Check what a gateway of this state dir and config needs (config, state dir, store,
    /// providers, each channel's credentials) and say what to fix; no gateway needs to run.
    Doctor,
    /// Channels of the running gateway: `switchboard channels status`.
    #[command(subcommand)]
    Channels(ops::ChannelsCommand),
    /// Tokens and cost: `switchboard usage --by day|agent|model [--days 30]`.
    Usage(ops::UsageArgs),
    /// Scheduled agent turns: list, add, run, enable, disable, rm, runs.
    #[command(subcommand)]
    Cron(cron_cmd::CronCommand),
    /// Call any gateway method: `switchboard call sessions.list --params '{"limit":5}'`.
    Call(CallArgs),
    /// List, read and manage sessions.
    #[command(subcommand)]
    Sessions(client_cmds::SessionsCommand),
    /// Talk to an agent; its reply streams in as it is written.
    Chat(chat::ChatArgs),
    /// Configured agents.
    #[command(subcommand)]
    Agents(client_cmds::AgentsCommand),
    /// The tools agents may call: `switchboard tools list --agent main`.
    #[command(subcommand)]
    Tools(client_cmds::ToolsCommand),
    /// Who may talk to a bot: pending DM pairing requests, and approving one by its code.
    #[command(subcommand)]
    Pairing(pairing::PairingCommand),
    /// Commands waiting for an operator's approval (tools.exec.ask): list, approve, deny.
    #[command(subcommand)]
    Approvals(approvals::ApprovalsCommand),
    /// Check or show the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Move in from the reference: `switchboard import openclaw [--from DIR] [--dry-run]`.
    #[command(subcommand)]
    Import(import::ImportCommand),
    /// Serve the session tools to an MCP client over stdio, acting as a session of the running
    /// gateway: `switchboard mcp --session agent:main:main`.
    Mcp(mcp::McpArgs),
    /// Show every session tool at work on a gateway started in this process (scripted model,
    /// temporary state dir).
    Demo(demo::DemoArgs),
    /// Load gateways with the standard workload in interleaved rounds, beside a do-nothing
    /// protocol-v4 server (the floor): `switchboard bench --target ours=ws://127.0.0.1:18789,token=T
    /// --target floor`.
    Bench(bench::BenchArgs),
    /// Run the gateway as a service: `switchboard service install [--user]` writes a systemd
    /// unit (docs/deploy.md).
    #[command(subcommand)]
    Service(service::ServiceCommand),
    /// Developer tools (benchmark set-up).
    #[command(hide = true, subcommand)]
    Dev(dev::DevCommand),
}

#[derive(Args)]
struct CallArgs {
    /// Method name, e.g. `health` or `sessions.list`.
    method: String,
    /// Params as a JSON object.
    #[arg(long, default_value = "{}")]
    params: String,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate the config file; unknown settings count as errors here.
    Check,
    /// Print the effective configuration (secrets redacted) as JSON.
    Show,
}

/// What is logged: `SWITCHBOARD_LOG`, else `RUST_LOG`, else `default` (tracing's filter syntax).
/// Whatever was asked, the WebSocket library logs warnings and errors only: its debug and trace
/// output dumps whole frames, and a `connect` frame carries the gateway token.
fn log_filter(default: &str) -> tracing_subscriber::EnvFilter {
    let asked = ["SWITCHBOARD_LOG", "RUST_LOG"].into_iter().find_map(|var| {
        let spec = std::env::var(var).ok()?;
        (!spec.trim().is_empty()).then_some((var, spec))
    });
    let filter = match asked {
        Some((var, spec)) => tracing_subscriber::EnvFilter::try_new(&spec).unwrap_or_else(|e| {
            eprintln!("warning: {var}={spec:?} is not a log filter ({e}); using {default:?}");
            tracing_subscriber::EnvFilter::new(default)
        }),
        None => tracing_subscriber::EnvFilter::new(default),
    };
    ["tungstenite=warn", "tokio_tungstenite=warn"]
        .into_iter()
        .filter_map(|directive| directive.parse().ok())
        .fold(filter, |filter, directive| filter.add_directive(directive))
}

/// The client options (`--url`, `--token`, `--json`) are global so they may follow any client
/// subcommand; `gateway` and `demo` listen instead of connecting, so their help does not list
/// them, and one given on their command line is an error rather than silently ignored (from the
/// environment, `SWITCHBOARD_URL` and `SWITCHBOARD_TOKEN` are meant for the clients and pass).
fn parse_cli() -> Cli {
    const CLIENT_ONLY: [&str; 3] = ["url", "token", "json"];
    const LISTENERS: [&str; 3] = ["gateway", "demo", "service"];
    // A subcommand's own (hidden) arg of the same name stops clap from propagating the global
    // one into it, so the help does not list it, while the parser still recognises it.
    let mut command = Cli::command();
    for name in LISTENERS {
        command = command.mut_subcommand(name, |sub| {
            sub.arg(clap::Arg::new("url").long("url").hide(true))
                .arg(clap::Arg::new("token").long("token").hide(true))
                .arg(
                    clap::Arg::new("json")
                        .long("json")
                        .action(clap::ArgAction::SetTrue)
                        .hide(true),
                )
        });
    }
    let matches = command.get_matches();
    if let Some((name, sub)) = matches.subcommand()
        && LISTENERS.contains(&name)
        && let Some(arg) = CLIENT_ONLY
            .into_iter()
            .find(|arg| sub.value_source(arg) == Some(ValueSource::CommandLine))
    {
        Cli::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "--{arg} is a client option; `switchboard {name}` does not connect to a \
                     gateway, so it would be ignored"
                ),
            )
            .exit();
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Logs to standard error (text or JSON lines, `logging.format`) and, for the gateway with
/// `observability.otlp` set, spans to the collector; answers the trace provider to shut down
/// at exit.
fn init_logging(
    cli: &Cli,
    default_level: &str,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<Option<opentelemetry_sdk::trace::SdkTracerProvider>> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // Colour only on a terminal (and not under NO_COLOR): a log file or a pipe gets plain text.
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let (format, otlp) = match cli.command {
        Command::Gateway(_) => (cli.global.log_format(), cli.global.otlp()),
        _ => (LogFormat::Text, Default::default()),
    };
    let (spans, provider) = match otlp::layer(&otlp, runtime)? {
        Some((layer, provider)) => (Some(layer), Some(provider)),
        None => (None, None),
    };
    let registry = tracing_subscriber::registry().with(spans);
    let log = tracing_subscriber::fmt::layer().with_writer(|| switchboard_server::logs::Tee);
    match format {
        // One object a line: the event's fields at the top, the spans it is in under `spans`,
        // outermost first (a run's: its run, session and trace ids).
        LogFormat::Json => registry
            .with(
                log.json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(true)
                    .with_filter(log_filter(default_level)),
            )
            .init(),
        LogFormat::Text => registry
            .with(log.with_ansi(colour).with_filter(log_filter(default_level)))
            .init(),
    }
    if provider.is_some() {
        tracing::info!(protocol = %otlp.protocol, "traces are exported over OTLP");
    }
    Ok(provider)
}

/// The async runtime's workers: one core fewer than the machine has (at least one), unless
/// `TOKIO_WORKER_THREADS` says otherwise. The gateway's other threads do real work beside them
/// (the SQLite writer, the pool of blocking reads, the transcript mirrors), and a task woken on
/// another worker costs a cross-core wake-up: on 2 cores, one worker took 13–20% less CPU a
/// turn, a send and a parallel turn, with more turns a second (BENCHMARKS.md).
fn worker_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
}

fn main() -> std::process::ExitCode {
    // The command sandbox's helper stages: before any thread starts (a process with threads
    // may not enter a new user namespace).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = switchboard_core::sandbox::helper_main(&args) {
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let cli = parse_cli();
    // An MCP server's stderr usually lands in its client's log: only what needs attention. The
    // MCP SDK logs every request at info and every error answer at warn; the client sees those.
    let default_level = match cli.command {
        Command::Mcp(_) => "warn,rmcp=error",
        _ => "info,rmcp=error",
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    runtime.enable_all();
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        runtime.worker_threads(worker_threads());
    }
    let runtime = match runtime.build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if let Command::Gateway(_) = cli.command {
        // Beside the store's opening; the first HTTP client built waits for them.
        switchboard_core::runtime::providers::read_roots_ahead();
    }
    let traces = match init_logging(&cli, default_level, runtime.handle()) {
        Ok(traces) => traces,
        Err(e) => {
            eprintln!("error: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Gateway(args) => {
                purge_in_background();
                gateway::run(&cli.global, args).await
            }
            Command::Health => ops::health(&cli.global).await,
            Command::Status => ops::status(&cli.global).await,
            Command::Doctor => doctor::run(&cli.global).await,
            Command::Logs(args) => ops::logs(&cli.global, args).await,
            Command::Channels(cmd) => ops::channels(&cli.global, cmd).await,
            Command::Usage(args) => ops::usage(&cli.global, args).await,
            Command::Cron(cmd) => cron_cmd::run(&cli.global, cmd).await,
            Command::Call(args) => client_cmds::call(&cli.global, &args.method, &args.params).await,
            Command::Sessions(cmd) => client_cmds::sessions(&cli.global, cmd).await,
            Command::Agents(cmd) => client_cmds::agents(&cli.global, cmd).await,
            Command::Pairing(cmd) => pairing::run(&cli.global, cmd).await,
            Command::Approvals(cmd) => approvals::run(&cli.global, cmd).await,
            Command::Tools(cmd) => client_cmds::tools(&cli.global, cmd).await,
            Command::Chat(args) => chat::run(&cli.global, args).await,
            Command::Mcp(args) => mcp::run(&cli.global, args).await,
            Command::Config(ConfigCommand::Check) => settings::config_check(&cli.global),
            Command::Config(ConfigCommand::Show) => settings::config_show(&cli.global),
            Command::Import(cmd) => import::run(&cli.global, cmd).await,
            Command::Demo(args) => demo::run(&cli.global, args).await,
            Command::Dev(cmd) => dev::run(&cli.global, cmd).await,
            Command::Service(cmd) => service::run(&cli.global, cmd),
            Command::Bench(args) => bench::run(args).await,
        }
    });
    // What the exporter still holds goes out before the process ends.
    if let Some(provider) = traces
        && let Err(e) = provider.shutdown()
    {
        eprintln!("warning: the last traces were not all exported: {e}");
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
