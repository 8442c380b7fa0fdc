//! The closed sets of strings a setting can take (`sandbox.mode`, `session.dmScope`, …), as enums
//! whose serde names are exactly the strings in the file, each with its list of names for error
//! messages and its default.

use serde::{Deserialize, Serialize};

/// Declares a closed set of strings as a Rust enum whose serde names are exactly those strings,
/// with the list of names (for error messages) and a default.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
        default = $default:ident;
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every accepted spelling, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The spelling used in the config file.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $text, )+
                }
            }

            /// The value spelt `text` (exactly), if any.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $( $text => Some(Self::$variant), )+
                    _ => None,
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::$default
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// `gateway.auth.mode`.
    pub enum AuthMode {
        /// Clients present the gateway token (generated and stored when none is configured).
        Token = "token",
        /// No authentication; only accepted while the gateway binds to loopback.
        None = "none",
    }
    default = Token;
}

string_enum! {
    /// `models.providers.<id>.api`: the wire format a provider speaks.
    pub enum ProviderApi {
        /// OpenAI Chat Completions (OpenAI, Ollama, vLLM, OpenRouter, …).
        OpenAiCompletions = "openai-completions",
        /// Anthropic Messages.
        AnthropicMessages = "anthropic-messages",
    }
    default = OpenAiCompletions;
}

string_enum! {
    /// `sandbox.mode`: which sessions of an agent are sandboxed (SPEC §8.1).
    pub enum SandboxMode {
        /// No session is sandboxed.
        Off = "off",
        /// Every session except the agent's main one.
        NonMain = "non-main",
        /// Every session.
        All = "all",
    }
    default = Off;
}

string_enum! {
    /// `tools.profile`: the base set of tools before `allow`/`deny` (SPEC §6.5).
    pub enum ToolProfile {
        /// `session_status` only.
        Minimal = "minimal",
        /// Files, commands, sessions: `group:fs`, `group:runtime`, `group:sessions`.
        Coding = "coding",
        /// `group:messaging` and the session tools that talk.
        Messaging = "messaging",
        /// Every tool (the default).
        Full = "full",
    }
    default = Full;
}

string_enum! {
    /// `sandbox.sessionToolsVisibility`: what a sandboxed session may see and message.
    pub enum SessionToolsVisibility {
        /// Only the sessions it spawned directly.
        Spawned = "spawned",
        /// The normal rules, as if it were not sandboxed.
        All = "all",
    }
    default = Spawned;
}

string_enum! {
    /// `session.scope`: how direct chats are bucketed.
    pub enum SessionScope {
        /// One bucket per sender (subject to `dmScope`).
        PerSender = "per-sender",
        /// All direct chat shares the `global` bucket.
        Global = "global",
    }
    default = PerSender;
}

string_enum! {
    /// `session.dmScope`: how direct messages map onto session keys (SPEC §2.1).
    pub enum DmScope {
        /// Every DM goes to the agent's main session.
        Main = "main",
        /// `direct:<peer>`.
        PerPeer = "per-peer",
        /// `<channel>:direct:<peer>`.
        PerChannelPeer = "per-channel-peer",
        /// `<channel>:<account>:direct:<peer>`.
        PerAccountChannelPeer = "per-account-channel-peer",
    }
    default = Main;
}

string_enum! {
    /// How much a model thinks before it answers (`thinkingLevel`): OpenAI's `reasoning_effort`,
    /// Anthropic's extended thinking budget.
    pub enum ThinkingLevel {
        Off = "off",
        Minimal = "minimal",
        Low = "low",
        Medium = "medium",
        High = "high",
    }
    default = Off;
}

string_enum! {
    /// `dmPolicy` of a chat channel (`channels.telegram`, `channels.discord`, …): who may talk
    /// to the bot in a private chat (a DM).
    pub enum DmPolicy {
        /// The users in `allowFrom` and those an owner approved: an unknown sender gets a
        /// one-time code, and nothing runs until `switchboard pairing approve` accepts it.
        Pairing = "pairing",
        /// Only the users in `allowFrom` (ids or usernames, `*` for anyone) and those an owner
        /// approved by pairing before; nobody else is answered, and no code is given.
        Allowlist = "allowlist",
        /// Anyone.
        Open = "open",
        /// Nobody: private messages are ignored.
        Disabled = "disabled",
    }
    default = Pairing;
}

string_enum! {
    /// `groupPolicy` of a chat channel: which groups (Telegram's groups, Discord's and Slack's
    /// channels) the bot answers in.
    pub enum GroupPolicy {
        /// Only the ones listed (Telegram's `groups`, Discord's `channels`; `"*"` lists every one).
        Allowlist = "allowlist",
        /// Every one the bot is in.
        Open = "open",
        /// None: group messages are ignored.
        Disabled = "disabled",
    }
    default = Allowlist;
}

string_enum! {
    /// `autoJoin` of the Matrix channel: which invitations to a room the bot accepts.
    pub enum AutoJoin {
        /// Every one (who may talk is still decided per message by the policies).
        Always = "always",
        /// Rooms listed in `autoJoinAllowlist` (ids, aliases, `*`) or in `rooms`, and
        /// invitations from `allowFrom` users or owners.
        Allowlist = "allowlist",
        /// None: the bot is joined to rooms by hand (the reference's default).
        Off = "off",
    }
    default = Off;
}

string_enum! {
    /// `threadReplies` (and `dm.threadReplies`) of the Matrix channel: where the bot replies.
    pub enum ThreadReplies {
        /// Top-level; a threaded message stays on its room's session.
        Off = "off",
        /// In the thread when the message was written in one (its own session).
        Inbound = "inbound",
        /// In a thread rooted at the message (its own session from the first message on).
        Always = "always",
    }
    default = Inbound;
}

string_enum! {
    /// `session.sendPolicy.rules[].match.chatType`.
    pub enum ChatType {
        /// A direct chat.
        Direct = "direct",
        /// Same as `direct`.
        Dm = "dm",
        /// A group chat.
        Group = "group",
        /// A channel-type chat (Discord/Slack channel…).
        Channel = "channel",
    }
    default = Direct;
}

impl ChatType {
    /// `dm` and `direct` are the same chat type; everything else is itself.
    pub fn normalized(self) -> ChatType {
        match self {
            ChatType::Dm => ChatType::Direct,
            other => other,
        }
    }
}

string_enum! {
    /// A send-policy decision (`session.sendPolicy`).
    pub enum SendAction {
        /// Sending is allowed.
        Allow = "allow",
        /// Sending is refused with `send blocked by session policy`.
        Deny = "deny",
    }
    default = Allow;
}

string_enum! {
    /// `models.providers.<id>.models[].input[]`: what a model takes in.
    pub enum ModelInput {
        /// Text.
        Text = "text",
        /// Images (`chat.send` attachments).
        Image = "image",
    }
    default = Text;
}

string_enum! {
    /// `observability.metrics.auth`: who may read `GET /metrics`.
    pub enum MetricsAuth {
        /// The gateway's bearer token, as for `POST /rpc` (a scraper sends
        /// `Authorization: Bearer <token>`).
        Token = "token",
        /// Any client connecting from 127.0.0.1 or ::1, without a token (a scraper on the same
        /// host); every other address is refused.
        Loopback = "loopback",
    }
    default = Token;
}

string_enum! {
    /// `observability.otlp.protocol`: how traces reach the collector.
    pub enum OtlpProtocol {
        /// Protobuf over HTTP, `POST <endpoint>/v1/traces` (OTLP/HTTP).
        HttpProtobuf = "http/protobuf",
        /// OTLP over gRPC.
        Grpc = "grpc",
    }
    default = HttpProtobuf;
}

string_enum! {
    /// `logging.format`: how the gateway writes its log lines to standard error.
    pub enum LogFormat {
        /// Human-readable lines.
        Text = "text",
        /// One JSON object a line, with the fields of the event and of its spans (run and
        /// session ids where the code has them).
        Json = "json",
    }
    default = Text;
}

string_enum! {
    /// `tools.web.search.provider`.
    pub enum SearchProvider {
        /// A SearXNG instance (`baseUrl`), its JSON API (`/search?format=json`).
        Searxng = "searxng",
        /// Brave Search's API (`X-Subscription-Token: apiKey`).
        Brave = "brave",
    }
    default = Searxng;
}

string_enum! {
    /// `tools.exec.ask`.
    pub enum ExecAsk {
        /// Never: every command runs.
        Off = "off",
        /// A command the allowlist (`exec-approvals.json`) does not match waits for approval.
        OnMiss = "on-miss",
        /// Every command waits for approval.
        Always = "always",
    }
    default = OnMiss;
}
