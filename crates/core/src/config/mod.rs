//! Configuration (SPEC §3): the typed settings, their defaults, and how a JSON5 file becomes them.
//!
//! This module owns the shape of `config.json5` and every default; nothing else in the engine reads
//! the file or invents a default of its own. A [`Config`] that leaves this module has been
//! normalised (agent and provider ids lower-cased, secrets that name an unset environment variable
//! dropped) and validated as a whole, so callers can trust every value: the gateway never starts
//! half-configured.
//!
//! - [`load_file`] / [`load_str`] ([`load`]): JSON5 → `${ENV}` substitution → typed config
//!   (collecting unknown paths) → validation. Every problem is reported, not just the first.
//! - `validate`: the rules that serde cannot express (ranges, ids, cross-references).
//! - `resolve`: per-agent views ([`ResolvedAgent`]) and the redacted copy for `config show`.
//!
//! Paths and names follow the reference system (OpenClaw) so that an existing config reads
//! naturally; `docs/configuration.md` lists every setting and the decisions the spec left open.

mod a2a;
mod agent_refs;
mod chat;
mod choices;
mod discord;
mod error;
mod import;
mod load;
mod matrix;
mod mcp;
mod observability;
mod reference;
mod report;
mod resolve;
mod sandbox;
mod signal;
mod slack;
mod store;
mod telegram;
pub mod tool_groups;
mod tool_settings;
mod validate;
mod values;
mod whatsapp;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use a2a::{A2aRemote, AgentA2a, is_remote_name};
pub use chat::{
    Access, BotConfig, ChatAccount, ChatSection, DEFAULT_ACCOUNT, GroupSettings, MAX_INBOUND_CHARS,
    MAX_REPLY_PARTS, Platform,
};
pub use choices::{
    AuthMode, AutoJoin, ChatType, DmPolicy, DmScope, ExecAsk, GroupPolicy, LogFormat, MetricsAuth,
    ModelInput, OtlpProtocol, ProviderApi, SandboxMode, SearchProvider, SendAction, SessionScope,
    SessionToolsVisibility, ThinkingLevel, ThreadReplies, ToolProfile,
};
pub use discord::{DiscordBot, DiscordChannel};
pub use error::ConfigError;
pub use import::{ImportedConfig, LeftOut, import_reference};
pub(crate) use load::too_deep;
pub use load::{
    LoadedConfig, load_file, load_file_or_default, load_gateway_section, load_section, load_str,
    process_env,
};
pub use matrix::{MATRIX, MatrixBot, MatrixChannel};
pub use mcp::{McpConfig, McpServerConfig};
pub use observability::{LoggingConfig, MetricsConfig, ObservabilityConfig, OtlpConfig};
pub use resolve::{REDACTED, ResolvedAgent};
pub use sandbox::{SandboxConfig, SandboxLimits, SandboxOverride};
pub use signal::{SignalAccount, SignalChannel};
pub use slack::{SlackApp, SlackChannel};
pub use store::{
    DATABASE_URL_ENV, DEFAULT_TIMEOUT_SECONDS as DEFAULT_STORE_TIMEOUT_SECONDS, StoreConfig,
    StoreKind,
};
pub use telegram::{TelegramBot, TelegramChannel};
pub use tool_settings::{ExecToolConfig, WebFetch, WebSearch, WebTools};
pub use validate::normalize_origin;
pub use values::{GatewayBind, ModelRef};
pub use whatsapp::{WhatsAppChannel, WhatsAppNumber};

/// The provider id reserved for the providers built into switchboard (`builtin/echo`,
/// `builtin/scripted`); a configured provider may not use it.
pub const BUILTIN_PROVIDER: &str = "builtin";

/// The models of the [`BUILTIN_PROVIDER`]: `echo` replies with the user's text, `scripted` follows
/// directives written in the conversation.
pub const BUILTIN_MODELS: &[&str] = &["echo", "scripted"];

/// The model every agent uses when nothing else is configured.
pub const DEFAULT_MODEL: &str = "builtin/scripted";

/// The whole configuration file. `Config::default()` is what runs when there is no file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Config {
    /// The gateway's listener and its authentication.
    pub gateway: GatewayConfig,
    /// LLM providers and their models.
    pub models: ModelsConfig,
    /// Agent defaults and the configured agents.
    pub agents: AgentsConfig,
    /// Session keys, send policy and agent-to-agent limits.
    pub session: SessionConfig,
    /// Tool policy (session tools, sub-agents).
    pub tools: ToolsConfig,
    /// Chat channels.
    pub channels: ChannelsConfig,
    /// `POST /hooks/agent`.
    pub hooks: HooksConfig,
    /// Scheduled agent turns.
    pub cron: CronConfig,
    /// Retries of the delivery outbox.
    pub delivery: DeliveryConfig,
    /// MCP servers whose tools agents may call.
    pub mcp: McpConfig,
    /// Where sessions, transcripts and runs are kept (SQLite, or a shared PostgreSQL).
    pub store: StoreConfig,
    /// Metrics (and, later, traces) about the gateway itself.
    pub observability: ObservabilityConfig,
    /// The gateway's own log lines.
    pub logging: LoggingConfig,
}

/// `gateway`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GatewayConfig {
    /// Where to listen: `loopback`, `lan` (all interfaces) or an IP address.
    pub bind: GatewayBind,
    /// TCP port; 0 picks a free one.
    pub port: u16,
    /// Client authentication.
    pub auth: GatewayAuth,
    /// Largest accepted WebSocket frame or HTTP body, in bytes.
    pub max_payload_bytes: usize,
    /// On SIGTERM/Ctrl-C, how long running runs may go on before they are aborted.
    pub shutdown_grace_seconds: u64,
    /// Browser access: which web origins may call the gateway.
    pub control_ui: ControlUiConfig,
    /// Caps on connections that have not authenticated yet.
    pub limits: GatewayLimits,
}

/// `gateway.limits`: how many connections may be open before their first authenticated request
/// (docs/security.md, "Connections that never finish a request").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GatewayLimits {
    /// In total. When it is reached, a new connection closes the oldest one that has no request
    /// in flight; only when every one is serving a request is the new one refused (503).
    pub max_unauthenticated: usize,
    /// From one peer address (an IPv6 peer: its /64). A connection over it closes that
    /// address's oldest idle ones that have had a second to authenticate.
    pub max_unauthenticated_per_address: usize,
}

impl Default for GatewayLimits {
    fn default() -> Self {
        Self {
            max_unauthenticated: 256,
            max_unauthenticated_per_address: 32,
        }
    }
}

/// `gateway.controlUi`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ControlUiConfig {
    /// Web origins (`http(s)://host[:port]`) allowed besides the gateway's own loopback
    /// origins; normalised to lower case without a trailing slash.
    pub allowed_origins: Vec<String>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            bind: GatewayBind::Loopback,
            port: 18790,
            auth: GatewayAuth::default(),
            max_payload_bytes: 1024 * 1024,
            shutdown_grace_seconds: 10,
            control_ui: ControlUiConfig::default(),
            limits: GatewayLimits::default(),
        }
    }
}

/// `gateway.auth`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GatewayAuth {
    /// `token` (default) or `none` (loopback only).
    pub mode: AuthMode,
    /// The token clients must present; when absent the gateway generates one and stores it.
    pub token: Option<String>,
}

/// `models`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelsConfig {
    /// Providers by id (normalised to lower case). `builtin` is reserved.
    pub providers: BTreeMap<String, ProviderConfig>,
}

/// `models.providers.<id>`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProviderConfig {
    /// The wire format (required in the file).
    pub api: ProviderApi,
    /// Base URL of the API; absent means the format's public endpoint
    /// ([`ProviderApi::default_base_url`]).
    pub base_url: Option<String>,
    /// API key, sent as the format's auth header. Never logged.
    pub api_key: Option<String>,
    /// Extra HTTP headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// Per-request timeout; absent means the runtime's default.
    pub timeout_seconds: Option<u64>,
    /// Stream replies (SSE); absent means yes.
    pub stream: Option<bool>,
    /// Retries of a transient failure (rate limit, server error, network); absent means 2.
    pub max_retries: Option<u64>,
    /// The models this provider offers. Empty means "any model id is accepted".
    pub models: Vec<ModelEntry>,
}

impl ProviderApi {
    /// The public endpoint used when `baseUrl` is not set.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderApi::OpenAiCompletions => "https://api.openai.com/v1",
            ProviderApi::AnthropicMessages => "https://api.anthropic.com",
        }
    }
}

/// `models.providers.<id>.models[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelEntry {
    /// The model id sent to the provider (required in the file).
    pub id: String,
    /// A display name.
    pub name: Option<String>,
    /// Context window in tokens.
    pub context_window: Option<u64>,
    /// Largest completion in tokens.
    pub max_tokens: Option<u64>,
    /// Prices, for the `est $` figure of announces.
    pub cost: Option<ModelCost>,
    /// What the model takes in; absent = text and images. A model without `image` refuses
    /// image attachments.
    pub input: Option<Vec<ModelInput>>,
}

/// `models.providers.<id>.models[].cost`: USD per million tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelCost {
    /// Input (prompt) tokens.
    pub input: f64,
    /// Output (completion) tokens.
    pub output: f64,
    /// Cached input tokens read; absent means priced as input.
    pub cache_read: Option<f64>,
    /// Input tokens written to the cache; absent means priced as input.
    pub cache_write: Option<f64>,
}

impl ModelCost {
    /// The price in USD of `input` and `output` tokens.
    pub fn usd(&self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input + output as f64 * self.output) / 1_000_000.0
    }

    /// The price in USD of one model call's tokens, in the reference's shape:
    /// `{input, output, cacheRead, cacheWrite, total}`. Cache reads and writes are priced as
    /// input where no price of their own is set.
    pub fn breakdown(
        &self,
        input: u64,
        output: u64,
        cache_read: u64,
        cache_write: u64,
    ) -> serde_json::Value {
        let usd = |tokens: u64, per_million: f64| tokens as f64 * per_million / 1_000_000.0;
        let parts = [
            usd(input, self.input),
            usd(output, self.output),
            usd(cache_read, self.cache_read.unwrap_or(self.input)),
            usd(cache_write, self.cache_write.unwrap_or(self.input)),
        ];
        serde_json::json!({
            "input": parts[0], "output": parts[1], "cacheRead": parts[2], "cacheWrite": parts[3],
            "total": parts.iter().sum::<f64>(),
        })
    }
}

/// `agents`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentsConfig {
    /// Settings every agent inherits.
    pub defaults: AgentDefaults,
    /// The configured agents, ids normalised. Empty means one implicit agent, `main`.
    pub list: Vec<AgentEntry>,
}

/// `agents.defaults`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentDefaults {
    /// The model of agents that do not name one.
    pub model: ModelRef,
    /// Upper bound of one run.
    pub timeout_seconds: u64,
    /// Size of the `main` lane (concurrent runs across sessions).
    pub max_concurrent: u32,
    /// Sandbox settings of agents that do not override them.
    pub sandbox: SandboxConfig,
    /// Sub-agent settings.
    pub subagents: SubagentDefaults,
    /// How much models think before answering, unless the agent or the session says otherwise.
    pub thinking_level: ThinkingLevel,
}

impl Default for AgentDefaults {
    fn default() -> Self {
        Self {
            model: ModelRef::new(DEFAULT_MODEL),
            timeout_seconds: 600,
            max_concurrent: 4,
            sandbox: SandboxConfig::default(),
            subagents: SubagentDefaults::default(),
            thinking_level: ThinkingLevel::Off,
        }
    }
}

/// `agents.defaults.subagents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubagentDefaults {
    /// Model of spawned sub-agents; absent means the spawning agent's model.
    pub model: Option<ModelRef>,
    /// Size of the `subagent` lane.
    pub max_concurrent: u32,
    /// Minutes after a kept sub-agent *finished* before it is archived; 0 archives at once.
    pub archive_after_minutes: u64,
}

impl Default for SubagentDefaults {
    fn default() -> Self {
        Self {
            model: None,
            max_concurrent: 8,
            archive_after_minutes: 60,
        }
    }
}

/// `agents.list[]`. Every optional field inherits from `agents.defaults`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentEntry {
    /// The agent id (required in the file), normalised like every agent id.
    pub id: String,
    /// Whether this is the default agent (at most one).
    pub default: bool,
    /// Display name.
    pub name: Option<String>,
    /// The agent's own system prompt.
    pub system_prompt: Option<String>,
    /// The agent's model.
    pub model: Option<ModelRef>,
    /// What this agent may spawn.
    pub subagents: AgentSubagents,
    /// Per-agent sandbox overrides.
    pub sandbox: SandboxOverride,
    /// Per-agent tool policy.
    pub tools: AgentTools,
    /// The folder its file tools and commands work in (`~` and paths relative to the state
    /// dir accepted); absent: `<state dir>/workspace/<agentId>`.
    pub workspace: Option<String>,
    /// Overrides `agents.defaults.thinkingLevel`.
    pub thinking_level: Option<ThinkingLevel>,
    /// The remote A2A agents this agent may message (`sessions_send` to `a2a:<name>`).
    pub a2a: AgentA2a,
}

/// `agents.list[].subagents`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentSubagents {
    /// Other agent ids this agent may spawn (`"*"` = any); its own id is always allowed.
    pub allow_agents: Vec<String>,
    /// Model of sub-agents spawned by this agent.
    pub model: Option<ModelRef>,
}

/// A tool allow/deny list (`agents.list[].tools`, `tools.subagents.tools`). Empty `allow` means
/// every tool; `deny` wins over `allow`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolPolicy {
    /// Tool names allowed (empty = all).
    pub allow: Vec<String>,
    /// Tool names refused.
    pub deny: Vec<String>,
}

/// `agents.list[].tools`: the agent's profile (over `tools.profile`), its allow/deny, which
/// narrow the global ones, and narrower sets for its models' providers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentTools {
    /// Overrides `tools.profile`.
    pub profile: Option<ToolProfile>,
    /// Tool names, groups (`group:fs`) or globs allowed (empty = all the profile gives).
    pub allow: Vec<String>,
    /// Tool names, groups or globs refused.
    pub deny: Vec<String>,
    /// As `tools.byProvider`, for this agent only: applied after the global entry.
    pub by_provider: BTreeMap<String, AgentToolPolicy>,
}

/// A profile with allow/deny: an entry of `tools.byProvider` (global or an agent's).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentToolPolicy {
    /// Overrides `tools.profile`.
    pub profile: Option<ToolProfile>,
    /// Tool names, groups (`group:fs`) or globs allowed (empty = all the profile gives).
    pub allow: Vec<String>,
    /// Tool names, groups or globs refused.
    pub deny: Vec<String>,
}

/// `session`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionConfig {
    /// How direct chats are bucketed.
    pub scope: SessionScope,
    /// The rest of every agent's main key (`agent:<id>:<mainKey>`).
    pub main_key: String,
    /// How DMs map onto keys.
    pub dm_scope: DmScope,
    /// Which sessions may be sent to.
    pub send_policy: SendPolicyConfig,
    /// Limits of agent-to-agent traffic.
    pub agent_to_agent: SessionAgentToAgent,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            scope: SessionScope::default(),
            main_key: "main".to_owned(),
            dm_scope: DmScope::default(),
            send_policy: SendPolicyConfig::default(),
            agent_to_agent: SessionAgentToAgent::default(),
        }
    }
}

/// `session.sendPolicy`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SendPolicyConfig {
    /// Rules; a matching `deny` wins over a matching `allow`.
    pub rules: Vec<SendPolicyRule>,
    /// The decision when no rule matches.
    pub default: SendAction,
}

/// `session.sendPolicy.rules[]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SendPolicyRule {
    /// The criteria; every one stated must match (none stated = matches every session).
    pub r#match: SendPolicyMatch,
    /// The decision when the rule matches (required in the file).
    pub action: SendAction,
}

/// `session.sendPolicy.rules[].match`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SendPolicyMatch {
    /// Channel name, lower case (`discord`, `telegram`, …).
    pub channel: Option<String>,
    /// Chat type (`dm` = `direct`).
    pub chat_type: Option<ChatType>,
    /// Compared against the canonical key and its legacy rest.
    pub key_prefix: Option<String>,
}

/// `session.agentToAgent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionAgentToAgent {
    /// Reply-back turns after a `sessions_send` (0 disables reply-back).
    pub max_ping_pong_turns: u32,
    /// Longest chain of sessions one send may extend (cycle guard, SPEC §6.3).
    pub max_hops: u32,
}

impl Default for SessionAgentToAgent {
    fn default() -> Self {
        Self {
            max_ping_pong_turns: 5,
            max_hops: 6,
        }
    }
}

/// `tools`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolsConfig {
    /// The base tool set of every agent (`agents.list[].tools.profile` overrides it); absent:
    /// every tool, with `group:runtime` only where a policy names it.
    pub profile: Option<ToolProfile>,
    /// Tools, groups or globs every agent may call (empty = all the profile gives).
    pub allow: Vec<String>,
    /// Tools, groups or globs no agent may call.
    pub deny: Vec<String>,
    /// Cross-agent list/history/send.
    pub agent_to_agent: ToolsAgentToAgent,
    /// Tools of sub-agent sessions.
    pub subagents: SubagentTools,
    /// Narrower tool sets for agents on a provider (`openai`) or a model (`openai/gpt-4o`),
    /// the more exact key first.
    pub by_provider: BTreeMap<String, AgentToolPolicy>,
    /// `web_fetch` and `web_search`.
    pub web: WebTools,
    /// `exec`: approvals.
    pub exec: ExecToolConfig,
}

/// `tools.agentToAgent`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolsAgentToAgent {
    /// Whether a session may address another agent's sessions at all.
    pub enabled: bool,
    /// Agent-id patterns (`*` wildcards) both sides must match; empty = every agent.
    pub allow: Vec<String>,
}

/// `tools.subagents`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubagentTools {
    /// Allow/deny applied on top of "every tool except the session tools".
    pub tools: ToolPolicy,
}

/// `channels`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ChannelsConfig {
    /// Generic HTTP in/out.
    pub webhook: WebhookChannel,
    /// Telegram Bot API.
    pub telegram: TelegramChannel,
    /// Discord: the Gateway in, the REST API out.
    pub discord: DiscordChannel,
    /// Slack: Socket Mode in, the Web API out.
    pub slack: SlackChannel,
    /// WhatsApp Business Cloud API: its webhook in, the Graph API out.
    pub whatsapp: WhatsAppChannel,
    /// Signal through a signal-cli daemon: its event stream in, its JSON-RPC `send` out.
    pub signal: SignalChannel,
    /// Matrix: the client-server API (`/sync` in, `send` out).
    pub matrix: MatrixChannel,
}

/// `channels.webhook`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WebhookChannel {
    /// Whether `POST /channels/webhook/<accountId>` is served.
    pub enabled: bool,
    /// Accounts by id (normalised to lower case).
    pub accounts: BTreeMap<String, WebhookAccount>,
}

/// `channels.webhook.accounts.<id>`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WebhookAccount {
    /// Where replies are `POST`ed; absent = inbound only.
    pub url: Option<String>,
    /// The token inbound requests must present (required while the channel is enabled).
    pub token: Option<String>,
    /// The agent that answers; absent = the default agent.
    pub agent_id: Option<String>,
    /// Senders (`from`) who own this account's chats: they may use owner commands such as
    /// `/send on|off|inherit`. Empty = nobody, through this channel.
    pub owners: Vec<String>,
}

/// `hooks`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HooksConfig {
    /// Whether `POST /hooks/agent` is served.
    pub enabled: bool,
    /// The token hook requests must present (required while enabled).
    pub token: Option<String>,
}

/// `cron`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CronConfig {
    /// Whether scheduled jobs run.
    pub enabled: bool,
    /// Size of the `cron` lane.
    pub max_concurrent_runs: u32,
}

impl Default for CronConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_concurrent_runs: 1,
        }
    }
}

/// `delivery`: how the outbox retries a delivery a channel did not take (SPEC §9.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeliveryConfig {
    /// Attempts before a delivery is marked `failed`.
    pub max_attempts: u32,
    /// Wait before the second attempt; it doubles with each further one.
    pub retry_initial_ms: u64,
    /// Longest wait between two attempts.
    pub retry_max_ms: u64,
    /// How long one attempt may take.
    pub timeout_seconds: u64,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        Self {
            max_attempts: 10,
            retry_initial_ms: 1_000,
            retry_max_ms: 300_000,
            timeout_seconds: 10,
        }
    }
}
