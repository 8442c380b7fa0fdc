//! The agent card of an agent: its JSON-RPC interface under the gateway's URL, streaming and
//! push notifications, the gateway token as its bearer scheme, and its skills — talking to the
//! agent, and each tool it may use.

use std::collections::BTreeMap;

use switchboard_protocol::a2a::{
    A2A_VERSION, AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HttpAuthSecurityScheme,
    JSONRPC_BINDING, SecurityRequirement, SecurityScheme, StringList,
};

use super::A2aTasks;

/// The name of the bearer scheme in the card.
const BEARER: &str = "bearer";
const TEXT: &str = "text/plain";

impl A2aTasks {
    /// `agent`'s card, served from `base_url` (`http://host:port`, no trailing slash);
    /// `secured` when the gateway asks for its token.
    pub async fn card(&self, agent: &str, base_url: &str, secured: bool) -> AgentCard {
        // An agent's tools include the MCP servers' once they first connected.
        self.runtime.tools_ready().await;
        let resolved = self.config.agent(agent);
        let name = resolved.name.clone().unwrap_or_else(|| agent.to_string());
        let main = self.config.main_session_key(agent);
        let mut skills = vec![AgentSkill {
            id: "conversation".into(),
            name: format!("Talk to {name}"),
            description: format!(
                "Send {name} a message; it answers in its session for your contextId \
                 (agent:{agent}:a2a:<contextId>), remembering the conversation."
            ),
            tags: vec!["chat".into()],
            examples: Vec::new(),
            input_modes: vec![TEXT.into()],
            output_modes: vec![TEXT.into()],
        }];
        skills.extend(
            self.runtime
                .tools_for(&main, &resolved)
                .iter()
                .map(|tool| AgentSkill {
                    id: format!("tool:{}", tool.name()),
                    name: tool.name().to_string(),
                    description: tool.description().to_string(),
                    tags: vec!["tool".into()],
                    examples: Vec::new(),
                    input_modes: Vec::new(),
                    output_modes: Vec::new(),
                }),
        );
        let (security_schemes, security_requirements) = match secured {
            true => bearer_scheme(),
            false => (BTreeMap::new(), Vec::new()),
        };
        AgentCard {
            name,
            description: format!(
                "The switchboard agent {agent}: an agent with durable sessions, reached over A2A."
            ),
            supported_interfaces: vec![AgentInterface {
                url: format!("{base_url}/a2a/{agent}"),
                protocol_binding: JSONRPC_BINDING.into(),
                tenant: None,
                protocol_version: A2A_VERSION.into(),
            }],
            provider: None,
            version: env!("CARGO_PKG_VERSION").into(),
            documentation_url: None,
            capabilities: AgentCapabilities {
                streaming: Some(true),
                push_notifications: Some(true),
                extended_agent_card: Some(false),
            },
            security_schemes,
            security_requirements,
            default_input_modes: vec![TEXT.into()],
            default_output_modes: vec![TEXT.into()],
            skills,
            icon_url: None,
        }
    }
}

/// The gateway token as an HTTP bearer scheme, required on every call.
fn bearer_scheme() -> (BTreeMap<String, SecurityScheme>, Vec<SecurityRequirement>) {
    let scheme = SecurityScheme {
        http_auth_security_scheme: Some(HttpAuthSecurityScheme {
            description: Some("the gateway token: Authorization: Bearer <token>".into()),
            scheme: "Bearer".into(),
            bearer_format: None,
        }),
    };
    let requirement = SecurityRequirement {
        schemes: [(BEARER.to_string(), StringList::default())].into(),
    };
    ([(BEARER.to_string(), scheme)].into(), vec![requirement])
}
