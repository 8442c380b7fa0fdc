//! The agent card: who an agent is, where its JSON-RPC interface is, what it can do and how a
//! caller authenticates (`GET /.well-known/agent-card.json`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An agent's self-description.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    pub name: String,
    pub description: String,
    /// Where to call it, in order of preference.
    pub supported_interfaces: Vec<AgentInterface>,
    pub provider: Option<AgentProvider>,
    /// The agent's (here: the gateway's) version.
    pub version: String,
    pub documentation_url: Option<String>,
    pub capabilities: AgentCapabilities,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    pub default_input_modes: Vec<String>,
    pub default_output_modes: Vec<String>,
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    pub icon_url: Option<String>,
}

/// One interface of an agent: a URL, the binding spoken there and the protocol version.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    pub url: String,
    /// `JSONRPC` here.
    pub protocol_binding: String,
    pub tenant: Option<String>,
    pub protocol_version: String,
}

/// Who provides the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    pub url: String,
    pub organization: String,
}

/// What the agent's interface offers beyond `SendMessage`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask`.
    pub streaming: Option<bool>,
    /// The push-notification config methods.
    pub push_notifications: Option<bool>,
    pub extended_agent_card: Option<bool>,
}

/// Something the agent is good at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
}

/// One way to authenticate (only HTTP auth is modelled: the gateway's bearer token).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityScheme {
    pub http_auth_security_scheme: Option<HttpAuthSecurityScheme>,
}

/// HTTP authentication: `Authorization: <scheme> <credentials>`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    pub description: Option<String>,
    /// `Bearer`.
    pub scheme: String,
    pub bearer_format: Option<String>,
}

/// The schemes a call must satisfy together (by name, each with its scopes).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityRequirement {
    pub schemes: BTreeMap<String, StringList>,
}

/// A list of strings (the protocol's wrapper for a map's list values).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringList {
    #[serde(default)]
    pub list: Vec<String>,
}
