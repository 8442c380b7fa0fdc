//! The rules serde cannot express: ranges, id grammars, URLs, cross-references between settings,
//! and the normalisation that goes with them (agent, provider and account ids lower-cased; empty
//! secrets treated as absent). Every problem is collected; nothing stops at the first.
//!
//! [`expected_at`] is the single description of what each setting accepts, shared by these checks
//! and by the messages for values serde rejects, so both kinds of error read the same.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use super::error::{self, ConfigError, Seg, one_of, push_index, push_key, quote};
use super::{
    AgentToolPolicy, AuthMode, AutoJoin, BUILTIN_MODELS, BUILTIN_PROVIDER, ChatType, Config,
    DmPolicy, DmScope, GatewayBind, GroupPolicy, LogFormat, MetricsAuth, ModelInput, ModelRef,
    OtlpProtocol, ProviderApi, ProviderConfig, SandboxMode, SendAction, SessionScope,
    SessionToolsVisibility, ThinkingLevel,
};
use crate::keys::normalize_agent_id;

pub(crate) const MODEL_ID_EXPECTED: &str = "the model id the provider knows (e.g. \"gpt-4o-mini\")";
pub(crate) const AGENT_ID_EXPECTED: &str = "an agent id (letters, digits, '-' and '_')";
const PORT_EXPECTED: &str = "an integer 1–65535 (0 picks a free port)";
pub(super) const URL_EXPECTED: &str = "an http:// or https:// URL";
const MAIN_KEY_EXPECTED: &str = "a non-empty key without ':' or whitespace";
const PROVIDER_ID_EXPECTED: &str = "a provider id matching ^[a-z0-9][a-z0-9_.-]*$";
pub(super) const ACCOUNT_ID_EXPECTED: &str = "an account id matching ^[a-z0-9][a-z0-9_.-]*$";
const COST_EXPECTED: &str = "a number >= 0 (USD per million tokens)";
const POSITIVE_EXPECTED: &str = "a positive integer";

const MAX_PAYLOAD_BYTES: RangeInclusive<u64> = 1024..=64 * 1024 * 1024;
const SHUTDOWN_GRACE_SECONDS: RangeInclusive<u64> = 0..=3600;
const MAX_UNAUTHENTICATED: RangeInclusive<u64> = 1..=65_536;
const PROVIDER_TIMEOUT_SECONDS: RangeInclusive<u64> = 1..=3600;
const PROVIDER_MAX_RETRIES: RangeInclusive<u64> = 0..=10;
const AGENT_TIMEOUT_SECONDS: RangeInclusive<u64> = 1..=86_400;
const MAX_CONCURRENT: RangeInclusive<u64> = 1..=256;
const SUBAGENT_MAX_CONCURRENT: RangeInclusive<u64> = 1..=1024;
const ARCHIVE_AFTER_MINUTES: RangeInclusive<u64> = 0..=525_600;
const MAX_PING_PONG_TURNS: RangeInclusive<u64> = 0..=5;
const MAX_HOPS: RangeInclusive<u64> = 1..=64;
pub(super) const POLL_TIMEOUT_SECONDS: RangeInclusive<u64> = 0..=300;
const CRON_MAX_CONCURRENT_RUNS: RangeInclusive<u64> = 1..=64;
const DELIVERY_MAX_ATTEMPTS: RangeInclusive<u64> = 1..=100;
const DELIVERY_RETRY_MS: RangeInclusive<u64> = 10..=86_400_000;
const DELIVERY_TIMEOUT_SECONDS: RangeInclusive<u64> = 1..=300;

const ORIGIN_EXPECTED: &str = "a web origin: http:// or https://, a host, an optional port, no path (e.g. \"http://192.168.1.5:18790\")";

/// A web origin as browsers send it in `Origin` (lower case, no trailing slash), or `None` when
/// `text` is not `http(s)://host[:port]`.
pub fn normalize_origin(text: &str) -> Option<String> {
    let origin = text.trim().trim_end_matches('/').to_ascii_lowercase();
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))?;
    let well_formed = !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '_'));
    well_formed.then_some(origin)
}

/// What a chat channel's setting accepts, the same in every channel and in each of its
/// accounts (`channels.<channel>.dmPolicy`, `channels.<channel>.accounts.<id>.dmPolicy`).
fn channel_expected(shape: &str) -> Option<String> {
    let (channel, setting) = shape.strip_prefix("channels.")?.split_once('.')?;
    let setting = match setting.strip_prefix("accounts.") {
        Some(account) => account.split_once('.')?.1,
        None => setting,
    };
    Some(match setting {
        "textChunkLimit" => integer(&(1..=u64::from(super::chat::text_limit(channel)?))),
        "maxReplyParts" => integer(&super::chat::REPLY_PARTS),
        "maxInboundChars" => integer(&super::chat::INBOUND_CHARS),
        "pollTimeoutSeconds" => integer(&POLL_TIMEOUT_SECONDS),
        "apiBase" => URL_EXPECTED.to_owned(),
        "gatewayUrl" => super::discord::WS_URL_EXPECTED.to_owned(),
        "homeserver" => URL_EXPECTED.to_owned(),
        "autoJoin" => one_of(AutoJoin::NAMES),
        "dmPolicy" => one_of(DmPolicy::NAMES),
        "groupPolicy" => one_of(GroupPolicy::NAMES),
        _ => return None,
    })
}

pub(in crate::config) fn integer(range: &RangeInclusive<u64>) -> String {
    format!("an integer {}–{}", range.start(), range.end())
}

/// What the setting at `segs` accepts, in words; `None` for settings whose type says it all.
pub(crate) fn expected_at(segs: &[Seg]) -> Option<String> {
    let shape = error::shape(segs);
    if let Some(text) = channel_expected(&shape) {
        return Some(text);
    }
    let text = match shape.as_str() {
        "gateway.bind" => GatewayBind::EXPECTED.to_owned(),
        "gateway.port" => PORT_EXPECTED.to_owned(),
        "gateway.auth.mode" => one_of(AuthMode::NAMES),
        "observability.metrics.auth" => one_of(MetricsAuth::NAMES),
        "observability.otlp.protocol" => one_of(OtlpProtocol::NAMES),
        "observability.otlp.endpoint" => URL_EXPECTED.to_owned(),
        "observability.otlp.sampleRatio" => super::observability::SAMPLE_RATIO_EXPECTED.to_owned(),
        "logging.format" => one_of(LogFormat::NAMES),
        "gateway.maxPayloadBytes" => integer(&MAX_PAYLOAD_BYTES),
        "gateway.shutdownGraceSeconds" => integer(&SHUTDOWN_GRACE_SECONDS),
        "gateway.limits.maxUnauthenticated" | "gateway.limits.maxUnauthenticatedPerAddress" => {
            integer(&MAX_UNAUTHENTICATED)
        }
        "models.providers.*.api" => one_of(ProviderApi::NAMES),
        "models.providers.*.baseUrl" | "channels.webhook.accounts.*.url" => URL_EXPECTED.to_owned(),
        "models.providers.*.timeoutSeconds" => integer(&PROVIDER_TIMEOUT_SECONDS),
        "models.providers.*.maxRetries" => integer(&PROVIDER_MAX_RETRIES),
        "models.providers.*.models[].contextWindow" | "models.providers.*.models[].maxTokens" => {
            POSITIVE_EXPECTED.to_owned()
        }
        "models.providers.*.models[].cost.input"
        | "models.providers.*.models[].cost.output"
        | "models.providers.*.models[].cost.cacheRead"
        | "models.providers.*.models[].cost.cacheWrite" => COST_EXPECTED.to_owned(),
        "agents.defaults.model"
        | "agents.defaults.subagents.model"
        | "agents.list[].model"
        | "agents.list[].subagents.model" => ModelRef::EXPECTED.to_owned(),
        "agents.defaults.timeoutSeconds" => integer(&AGENT_TIMEOUT_SECONDS),
        "agents.defaults.maxConcurrent" => integer(&MAX_CONCURRENT),
        "agents.defaults.sandbox.mode" | "agents.list[].sandbox.mode" => one_of(SandboxMode::NAMES),
        "agents.defaults.sandbox.sessionToolsVisibility"
        | "agents.list[].sandbox.sessionToolsVisibility" => one_of(SessionToolsVisibility::NAMES),
        "agents.defaults.subagents.maxConcurrent" => integer(&SUBAGENT_MAX_CONCURRENT),
        "agents.defaults.subagents.archiveAfterMinutes" => integer(&ARCHIVE_AFTER_MINUTES),
        "agents.list[].id" => AGENT_ID_EXPECTED.to_owned(),
        "models.providers.*.models[].id" => MODEL_ID_EXPECTED.to_owned(),
        "models.providers.*.models[].input[]" => one_of(ModelInput::NAMES),
        "session.scope" => one_of(SessionScope::NAMES),
        "session.mainKey" => MAIN_KEY_EXPECTED.to_owned(),
        "session.dmScope" => one_of(DmScope::NAMES),
        "agents.defaults.thinkingLevel" | "agents.list[].thinkingLevel" => {
            one_of(ThinkingLevel::NAMES)
        }
        "session.sendPolicy.rules[].match.chatType" => one_of(ChatType::NAMES),
        "session.sendPolicy.rules[].action" | "session.sendPolicy.default" => {
            one_of(SendAction::NAMES)
        }
        "session.agentToAgent.maxPingPongTurns" => integer(&MAX_PING_PONG_TURNS),
        "session.agentToAgent.maxHops" => integer(&MAX_HOPS),
        "cron.maxConcurrentRuns" => integer(&CRON_MAX_CONCURRENT_RUNS),
        "delivery.maxAttempts" => integer(&DELIVERY_MAX_ATTEMPTS),
        "delivery.retryInitialMs" | "delivery.retryMaxMs" => integer(&DELIVERY_RETRY_MS),
        "delivery.timeoutSeconds" => integer(&DELIVERY_TIMEOUT_SECONDS),
        "mcp.servers.*.timeoutSeconds" => super::mcp::timeout_expected(),
        "mcp.servers.*.url" => URL_EXPECTED.to_owned(),
        _ => return None,
    };
    Some(text)
}

impl Config {
    /// Normalises and validates a config built in code (files go through [`super::load_str`],
    /// which does this too). Returns every problem at once.
    pub fn validated(mut self) -> Result<Config, ConfigError> {
        ConfigError::collect(validate(&mut self, &BTreeMap::new()))?;
        Ok(self)
    }
}

/// Normalises `config` in place and returns its problems. `unset_secrets` maps the paths of
/// secrets dropped because their `${VAR}` was unset to the variable, for "required" messages.
pub(crate) fn validate(
    config: &mut Config,
    unset_secrets: &BTreeMap<String, String>,
) -> Vec<ConfigError> {
    let mut check = Checker {
        problems: Vec::new(),
        unset_secrets,
    };
    check.gateway(config);
    check.providers(config);
    check.agents(config);
    check.session(config);
    check.tools(config);
    check.channels(config);
    check.hooks_and_cron(config);
    check.mcp(&mut config.mcp);
    check.delivery(config);
    check.store(&config.store);
    check.observability(&mut config.observability);
    check.agent_refs(config);
    check.problems
}

pub(super) struct Checker<'a> {
    pub(super) problems: Vec<ConfigError>,
    pub(super) unset_secrets: &'a BTreeMap<String, String>,
}

impl Checker<'_> {
    pub(super) fn invalid(
        &mut self,
        path: impl Into<String>,
        value: impl Into<String>,
        allowed: impl Into<String>,
    ) {
        self.problems.push(ConfigError::Invalid {
            path: path.into(),
            value: value.into(),
            allowed: allowed.into(),
        });
    }

    pub(super) fn range(&mut self, path: &str, value: u64, range: &RangeInclusive<u64>) {
        if !range.contains(&value) {
            self.invalid(path, value.to_string(), integer(range));
        }
    }

    /// A secret that must be present because the feature using it is on.
    pub(super) fn required_secret(
        &mut self,
        path: &str,
        secret: &mut Option<String>,
        because: &str,
    ) {
        clear_if_empty(secret);
        if secret.is_none() {
            let mut expected = format!("a token ({because})");
            if let Some(var) = self.unset_secrets.get(path) {
                expected.push_str(&format!("; environment variable {var} is not set"));
            }
            self.problems.push(ConfigError::Missing {
                path: path.to_owned(),
                expected,
            });
        }
    }

    /// A setting that must be present, and why.
    pub(super) fn missing(&mut self, path: &str, expected: &str) {
        self.problems.push(ConfigError::Missing {
            path: path.to_owned(),
            expected: expected.to_owned(),
        });
    }

    pub(super) fn url(&mut self, path: &str, url: &str) {
        if !is_http_url(url) {
            self.invalid(path, quote(url), URL_EXPECTED);
        }
    }

    pub(super) fn names(&mut self, path: &str, names: &mut [String], what: &str) {
        for (index, name) in names.iter_mut().enumerate() {
            *name = name.trim().to_owned();
            if name.is_empty() {
                self.invalid(push_index(path, index), "\"\"", what);
            }
        }
    }

    pub(super) fn tool_policy(
        &mut self,
        path: &str,
        allow: &mut Vec<String>,
        deny: &mut Vec<String>,
    ) {
        for (path, names) in [
            (format!("{path}.allow"), allow),
            (format!("{path}.deny"), deny),
        ] {
            self.names(&path, names, "a tool name");
            for (i, name) in names.iter().enumerate() {
                if let Err(known) = super::tool_groups::known_group(name) {
                    self.invalid(format!("{path}[{i}]"), quote(name), known);
                }
            }
        }
    }

    /// A `byProvider` map: each entry's lists checked, its key (a provider or
    /// `provider/model`) matched without regard to case.
    fn by_provider(&mut self, path: &str, entries: &mut BTreeMap<String, AgentToolPolicy>) {
        let written = std::mem::take(entries);
        for (name, mut policy) in written {
            self.tool_policy(&push_key(path, &name), &mut policy.allow, &mut policy.deny);
            entries.insert(name.trim().to_ascii_lowercase(), policy);
        }
    }

    fn gateway(&mut self, config: &mut Config) {
        let gateway = &mut config.gateway;
        clear_if_empty(&mut gateway.auth.token);
        if gateway.auth.mode == AuthMode::None && !gateway.bind.is_loopback() {
            self.invalid(
                "gateway.auth.mode",
                quote(AuthMode::None.as_str()),
                format!(
                    "\"token\" while gateway.bind is {} (binding beyond loopback requires a token)",
                    quote(&gateway.bind.to_string())
                ),
            );
        }
        let bytes = u64::try_from(gateway.max_payload_bytes).unwrap_or(u64::MAX);
        self.range("gateway.maxPayloadBytes", bytes, &MAX_PAYLOAD_BYTES);
        self.range(
            "gateway.shutdownGraceSeconds",
            gateway.shutdown_grace_seconds,
            &SHUTDOWN_GRACE_SECONDS,
        );
        let limits = &gateway.limits;
        let total = u64::try_from(limits.max_unauthenticated).unwrap_or(u64::MAX);
        let per_address = u64::try_from(limits.max_unauthenticated_per_address).unwrap_or(u64::MAX);
        self.range(
            "gateway.limits.maxUnauthenticated",
            total,
            &MAX_UNAUTHENTICATED,
        );
        if !MAX_UNAUTHENTICATED.contains(&per_address) {
            let path = "gateway.limits.maxUnauthenticatedPerAddress";
            self.range(path, per_address, &MAX_UNAUTHENTICATED);
        } else if MAX_UNAUTHENTICATED.contains(&total) && per_address > total {
            self.invalid(
                "gateway.limits.maxUnauthenticatedPerAddress",
                per_address.to_string(),
                format!("an integer 1–{total} (at most gateway.limits.maxUnauthenticated)"),
            );
        }
        for (i, origin) in gateway.control_ui.allowed_origins.iter_mut().enumerate() {
            match normalize_origin(origin) {
                Some(normalized) => *origin = normalized,
                None => self.invalid(
                    format!("gateway.controlUi.allowedOrigins[{i}]"),
                    quote(origin),
                    ORIGIN_EXPECTED,
                ),
            }
        }
    }

    fn providers(&mut self, config: &mut Config) {
        let configured = std::mem::take(&mut config.models.providers);
        let mut normalized = BTreeMap::new();
        for (raw_id, mut provider) in configured {
            let path = push_key("models.providers", &raw_id);
            let id = raw_id.trim().to_ascii_lowercase();
            if id == BUILTIN_PROVIDER {
                self.invalid(
                    &path,
                    quote(&raw_id),
                    "a provider id other than \"builtin\" (reserved for builtin/echo and builtin/scripted)",
                );
            } else if !is_id(&id) {
                self.invalid(&path, quote(&raw_id), PROVIDER_ID_EXPECTED);
            } else if normalized.contains_key(&id) {
                self.invalid(
                    &path,
                    quote(&raw_id),
                    format!("a provider id used once (\"{id}\" is already configured)"),
                );
            }
            self.provider(&path, &mut provider);
            normalized.insert(id, provider);
        }
        config.models.providers = normalized;
    }

    fn provider(&mut self, path: &str, provider: &mut ProviderConfig) {
        clear_if_empty(&mut provider.api_key);
        if let Some(url) = &provider.base_url {
            self.url(&format!("{path}.baseUrl"), url);
        }
        for name in provider.headers.keys() {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_graphic() && c != ':') {
                self.invalid(
                    push_key(&format!("{path}.headers"), name),
                    quote(name),
                    "an HTTP header name (visible ASCII, no ':')",
                );
            }
        }
        if let Some(seconds) = provider.timeout_seconds {
            self.range(
                &format!("{path}.timeoutSeconds"),
                seconds,
                &PROVIDER_TIMEOUT_SECONDS,
            );
        }
        if let Some(retries) = provider.max_retries {
            self.range(
                &format!("{path}.maxRetries"),
                retries,
                &PROVIDER_MAX_RETRIES,
            );
        }
        let mut seen = BTreeSet::new();
        for (index, model) in provider.models.iter_mut().enumerate() {
            let model_path = format!("{path}.models[{index}]");
            model.id = model.id.trim().to_owned();
            if model.id.is_empty() {
                self.problems.push(ConfigError::Missing {
                    path: format!("{model_path}.id"),
                    expected: MODEL_ID_EXPECTED.to_owned(),
                });
            } else if !seen.insert(model.id.clone()) {
                self.invalid(
                    format!("{model_path}.id"),
                    quote(&model.id),
                    "a model id listed once per provider",
                );
            }
            for (field, value) in [
                ("contextWindow", model.context_window),
                ("maxTokens", model.max_tokens),
            ] {
                if value == Some(0) {
                    self.invalid(format!("{model_path}.{field}"), "0", POSITIVE_EXPECTED);
                }
            }
            if let Some(cost) = &model.cost {
                let prices = [
                    ("input", Some(cost.input)),
                    ("output", Some(cost.output)),
                    ("cacheRead", cost.cache_read),
                    ("cacheWrite", cost.cache_write),
                ];
                for (field, price) in prices {
                    if let Some(price) = price.filter(|p| !(p.is_finite() && *p >= 0.0)) {
                        self.invalid(
                            format!("{model_path}.cost.{field}"),
                            price.to_string(),
                            COST_EXPECTED,
                        );
                    }
                }
            }
        }
    }

    /// Checks (and lower-cases the provider part of) every reference in `model`.
    fn model_ref(
        &mut self,
        path: &str,
        model: &mut ModelRef,
        providers: &BTreeMap<String, ProviderConfig>,
    ) {
        let primary_path = if model.fallbacks.is_empty() {
            path.to_owned()
        } else {
            format!("{path}.primary")
        };
        self.model_name(&primary_path, &mut model.primary, providers);
        for (index, fallback) in model.fallbacks.iter_mut().enumerate() {
            self.model_name(&format!("{path}.fallbacks[{index}]"), fallback, providers);
        }
    }

    fn model_name(
        &mut self,
        path: &str,
        reference: &mut String,
        providers: &BTreeMap<String, ProviderConfig>,
    ) {
        let trimmed = reference.trim();
        let Some((provider, model)) = ModelRef::split(trimmed) else {
            self.invalid(path, quote(reference), "a \"provider/model\" reference");
            return;
        };
        let provider = provider.to_ascii_lowercase();
        let known = if provider == BUILTIN_PROVIDER {
            BUILTIN_MODELS.contains(&model)
        } else {
            providers
                .get(&provider)
                .is_some_and(|p| p.models.is_empty() || p.models.iter().any(|m| m.id == model))
        };
        if known {
            *reference = format!("{provider}/{model}");
            return;
        }
        let mut choices: Vec<String> = BUILTIN_MODELS
            .iter()
            .map(|m| format!("{BUILTIN_PROVIDER}/{m}"))
            .collect();
        for (id, p) in providers {
            if p.models.is_empty() {
                choices.push(format!("{id}/<any model>"));
            }
            choices.extend(p.models.iter().map(|m| format!("{id}/{}", m.id)));
        }
        let choices: Vec<&str> = choices.iter().map(String::as_str).collect();
        self.invalid(path, quote(reference), one_of(&choices));
    }

    fn agents(&mut self, config: &mut Config) {
        let providers = &config.models.providers;
        let agents = &mut config.agents;
        let defaults = &mut agents.defaults;
        self.model_ref("agents.defaults.model", &mut defaults.model, providers);
        self.range(
            "agents.defaults.timeoutSeconds",
            defaults.timeout_seconds,
            &AGENT_TIMEOUT_SECONDS,
        );
        self.range(
            "agents.defaults.maxConcurrent",
            defaults.max_concurrent.into(),
            &MAX_CONCURRENT,
        );
        if let Some(model) = &mut defaults.subagents.model {
            self.model_ref("agents.defaults.subagents.model", model, providers);
        }
        self.range(
            "agents.defaults.subagents.maxConcurrent",
            defaults.subagents.max_concurrent.into(),
            &SUBAGENT_MAX_CONCURRENT,
        );
        self.range(
            "agents.defaults.subagents.archiveAfterMinutes",
            defaults.subagents.archive_after_minutes,
            &ARCHIVE_AFTER_MINUTES,
        );
        self.sandbox(&defaults.sandbox);

        let mut ids: Vec<String> = Vec::new();
        let mut first_default: Option<usize> = None;
        for (index, agent) in agents.list.iter_mut().enumerate() {
            let path = format!("agents.list[{index}]");
            if agent.id.trim().is_empty() {
                self.problems.push(ConfigError::Missing {
                    path: format!("{path}.id"),
                    expected: AGENT_ID_EXPECTED.to_owned(),
                });
            } else {
                let id = normalize_agent_id(&agent.id);
                if let Some(previous) = ids.iter().position(|seen| *seen == id) {
                    self.invalid(
                        format!("{path}.id"),
                        quote(&agent.id),
                        format!(
                            "an id no other agent has (agents.list[{previous}] is already \"{id}\")"
                        ),
                    );
                }
                agent.id = id;
            }
            ids.push(agent.id.clone());
            if agent.default {
                match first_default {
                    Some(previous) => self.invalid(
                        format!("{path}.default"),
                        "true",
                        format!(
                            "false: only one agent can be the default (agents.list[{previous}] is)"
                        ),
                    ),
                    None => first_default = Some(index),
                }
            }
            if let Some(model) = &mut agent.model {
                self.model_ref(&format!("{path}.model"), model, providers);
            }
            if let Some(model) = &mut agent.subagents.model {
                self.model_ref(&format!("{path}.subagents.model"), model, providers);
            }
            for (position, allowed) in agent.subagents.allow_agents.iter_mut().enumerate() {
                let trimmed = allowed.trim();
                if trimmed.is_empty() {
                    self.invalid(
                        format!("{path}.subagents.allowAgents[{position}]"),
                        "\"\"",
                        "an agent id or \"*\"",
                    );
                } else if trimmed != "*" {
                    *allowed = normalize_agent_id(trimmed);
                } else {
                    *allowed = "*".to_owned();
                }
            }
            let tools = &mut agent.tools;
            self.tool_policy(&format!("{path}.tools"), &mut tools.allow, &mut tools.deny);
            self.by_provider(&format!("{path}.tools.byProvider"), &mut tools.by_provider);
            self.a2a(&format!("{path}.a2a"), &mut agent.a2a);
        }
    }

    fn session(&mut self, config: &mut Config) {
        let session = &mut config.session;
        let main_key = &session.main_key;
        if main_key.is_empty()
            || main_key.contains(':')
            || main_key.chars().any(char::is_whitespace)
        {
            self.invalid("session.mainKey", quote(main_key), MAIN_KEY_EXPECTED);
        }
        for (index, rule) in session.send_policy.rules.iter_mut().enumerate() {
            let path = format!("session.sendPolicy.rules[{index}].match");
            if let Some(channel) = &mut rule.r#match.channel {
                *channel = channel.trim().to_ascii_lowercase();
                if channel.is_empty() {
                    self.invalid(
                        format!("{path}.channel"),
                        "\"\"",
                        "a channel name (e.g. \"telegram\")",
                    );
                }
            }
            if rule.r#match.key_prefix.as_deref() == Some("") {
                self.invalid(
                    format!("{path}.keyPrefix"),
                    "\"\"",
                    "a non-empty session key prefix",
                );
            }
        }
        let limits = &session.agent_to_agent;
        self.range(
            "session.agentToAgent.maxPingPongTurns",
            limits.max_ping_pong_turns.into(),
            &MAX_PING_PONG_TURNS,
        );
        self.range(
            "session.agentToAgent.maxHops",
            limits.max_hops.into(),
            &MAX_HOPS,
        );
    }

    fn tools(&mut self, config: &mut Config) {
        let tools = &mut config.tools;
        self.names(
            "tools.agentToAgent.allow",
            &mut tools.agent_to_agent.allow,
            "an agent id pattern",
        );
        for pattern in &mut tools.agent_to_agent.allow {
            *pattern = pattern.to_ascii_lowercase();
        }
        self.tool_policy("tools", &mut tools.allow, &mut tools.deny);
        self.tool_settings(&tools.web, &tools.exec);
        self.by_provider("tools.byProvider", &mut tools.by_provider);
        let subagents = &mut tools.subagents.tools;
        self.tool_policy(
            "tools.subagents.tools",
            &mut subagents.allow,
            &mut subagents.deny,
        );
    }

    fn channels(&mut self, config: &mut Config) {
        let webhook = &mut config.channels.webhook;
        let accounts = std::mem::take(&mut webhook.accounts);
        let mut normalized = BTreeMap::new();
        for (raw_id, mut account) in accounts {
            let path = push_key("channels.webhook.accounts", &raw_id);
            let id = raw_id.trim().to_ascii_lowercase();
            if !is_id(&id) {
                self.invalid(&path, quote(&raw_id), ACCOUNT_ID_EXPECTED);
            } else if normalized.contains_key(&id) {
                self.invalid(
                    &path,
                    quote(&raw_id),
                    format!("an account id used once (\"{id}\" is already configured)"),
                );
            }
            if let Some(url) = &account.url {
                self.url(&format!("{path}.url"), url);
            }
            if webhook.enabled {
                self.required_secret(
                    &format!("{path}.token"),
                    &mut account.token,
                    "required while channels.webhook.enabled is true",
                );
            }
            clear_if_empty(&mut account.token);
            normalize_optional_agent(&mut account.agent_id);
            normalized.insert(id, account);
        }
        webhook.accounts = normalized;

        let chats = &mut config.channels;
        self.chat(&mut chats.telegram);
        self.chat(&mut chats.discord);
        self.chat(&mut chats.slack);
        self.chat(&mut chats.whatsapp);
        self.chat(&mut chats.signal);
        self.chat(&mut chats.matrix);
    }

    fn hooks_and_cron(&mut self, config: &mut Config) {
        let hooks = &mut config.hooks;
        if hooks.enabled {
            self.required_secret(
                "hooks.token",
                &mut hooks.token,
                "required while hooks.enabled is true",
            );
        }
        clear_if_empty(&mut hooks.token);
        self.range(
            "cron.maxConcurrentRuns",
            config.cron.max_concurrent_runs.into(),
            &CRON_MAX_CONCURRENT_RUNS,
        );
    }

    fn delivery(&mut self, config: &Config) {
        let d = &config.delivery;
        self.range(
            "delivery.maxAttempts",
            d.max_attempts.into(),
            &DELIVERY_MAX_ATTEMPTS,
        );
        self.range(
            "delivery.retryInitialMs",
            d.retry_initial_ms,
            &DELIVERY_RETRY_MS,
        );
        self.range("delivery.retryMaxMs", d.retry_max_ms, &DELIVERY_RETRY_MS);
        if d.retry_max_ms < d.retry_initial_ms {
            self.invalid(
                "delivery.retryMaxMs",
                d.retry_max_ms.to_string(),
                format!("at least delivery.retryInitialMs ({})", d.retry_initial_ms),
            );
        }
        self.range(
            "delivery.timeoutSeconds",
            d.timeout_seconds,
            &DELIVERY_TIMEOUT_SECONDS,
        );
    }
}

/// An empty secret is an absent one (`token: ""`, or a variable set to nothing).
pub(super) fn clear_if_empty(secret: &mut Option<String>) {
    if secret.as_deref().is_some_and(|s| s.trim().is_empty()) {
        *secret = None;
    }
}

pub(super) fn normalize_optional_agent(agent_id: &mut Option<String>) {
    if let Some(id) = agent_id {
        if id.trim().is_empty() {
            *agent_id = None;
        } else {
            *id = normalize_agent_id(id);
        }
    }
}

/// `^[a-z0-9][a-z0-9_.-]*$`.
pub(super) fn is_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' || c == '.'
        })
}

/// `http://host…` or `https://host…` with a non-empty host and no whitespace.
pub(super) fn is_http_url(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    rest.is_some_and(|rest| {
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        !host.is_empty() && !url.chars().any(char::is_whitespace)
    })
}
