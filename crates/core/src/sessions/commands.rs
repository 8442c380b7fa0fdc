//! Slash commands, the reference's set, answered by the gateway at every door (`chat.send`,
//! `agent`, every channel) without a model call: `/status`, `/new`, `/reset`, `/think`,
//! `/model`, `/verbose`, `/send`, `/stop`, `/compact`. A message is a command when its first
//! line is `/<name>` (any case, `/name: args` too) with the arguments that command takes; a
//! message that only looks like one (`/statuses`, `/status please`) goes to the model.
//!
//! Who may: on the operator's doors, what changes the session the way `sessions.reset` or the
//! send policy does (`/send`, `/new`, `/reset`) needs `operator.admin`, as in the reference; in a
//! chat, everything that changes the session is for the chat's owners, and `/status`, `/stop`
//! and the questions (`/model` alone) for anyone who may talk there (docs/decisions.md).

use switchboard_protocol::overview::SessionsDescribeParams;
use switchboard_protocol::runs::RunStatus as WireRunStatus;
use switchboard_protocol::runs::{
    AgentAccepted, AgentResult, ChatAbortParams, RunResult, SendCommandResult,
};
use switchboard_protocol::sessions::{Patch, SessionKeyParams, SessionsPatchParams};

use super::Sessions;
use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys::SessionKey;

/// A slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// The session at a glance.
    Status,
    /// `/new` and `/reset`: a fresh transcript (`sessions.reset`; the old one is kept).
    New,
    Reset,
    /// Stops the session's run (`chat.abort`); `/abort` too.
    Stop,
    /// Summarises the conversation so far (`sessions.compact`).
    Compact,
    /// `/think <level>` (`/thinking`, `/t`); alone: says the level.
    Think(Option<String>),
    /// `/model <provider/model>` or `/model default`; alone: says the model.
    Model(Option<String>),
    /// `/verbose on|off|full` (`/v`); alone: says it.
    Verbose(Option<String>),
    /// `/send on|off|inherit`: the session's send policy, or what is accepted.
    Send(Result<Option<&'static str>, String>),
}

/// Which door a command came through: its owner rule differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// `chat.send` and `agent`: an owner is a caller with `operator.admin`.
    Operator,
    /// A channel's chat: an owner is one of the chat's configured owners.
    Chat,
}

impl Command {
    /// The command `word` (lower case, with its `/`) names with the arguments `rest`; `None` for
    /// any other word, and for a command given arguments it takes none of.
    pub fn parse(word: &str, rest: &str) -> Option<Self> {
        let rest = rest.trim();
        let arg = || (!rest.is_empty()).then(|| rest.to_string());
        let bare = rest.is_empty();
        Some(match word {
            "/status" if bare => Self::Status,
            "/new" if bare => Self::New,
            "/reset" if bare => Self::Reset,
            "/stop" | "/abort" if bare => Self::Stop,
            "/compact" if bare => Self::Compact,
            "/think" | "/thinking" | "/t" => Self::Think(arg()),
            "/model" => Self::Model(arg()),
            "/verbose" | "/v" => Self::Verbose(arg()),
            "/send" => Self::Send(crate::access::send_command(&format!("/send {rest}"))?),
            _ => return None,
        })
    }

    /// The command a message is: its first line, trimmed (`/name args` or `/name: args`).
    pub fn of_text(text: &str) -> Option<Self> {
        let line = text.trim().lines().next()?.trim();
        if !line.starts_with('/') {
            return None;
        }
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let word = word.strip_suffix(':').unwrap_or(word);
        Self::parse(&word.to_lowercase(), rest)
    }

    /// The command's name, with its `/`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Status => "/status",
            Self::New => "/new",
            Self::Reset => "/reset",
            Self::Stop => "/stop",
            Self::Compact => "/compact",
            Self::Think(_) => "/think",
            Self::Model(_) => "/model",
            Self::Verbose(_) => "/verbose",
            Self::Send(_) => "/send",
        }
    }

    /// Whether only an owner may use it at `door`.
    pub fn needs_owner(&self, door: Door) -> bool {
        match (self, door) {
            (Self::Send(_) | Self::New | Self::Reset, _) => true,
            (Self::Compact, Door::Chat) => true,
            (Self::Think(level) | Self::Model(level) | Self::Verbose(level), Door::Chat) => {
                level.is_some()
            }
            _ => false,
        }
    }
}

/// What a command did: its reply for the person, and the send policy `/send` set.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandReply {
    pub command: &'static str,
    pub reply: String,
    /// `/send` only: the override now set (`None` inside: inherit).
    pub send_policy: Option<Option<String>>,
}

impl Sessions {
    /// Runs `command` in the session `key` (the caller's right to it checked by the door).
    pub async fn command(&self, key: &SessionKey, command: Command) -> CoreResult<CommandReply> {
        let name = command.name();
        let mut send_policy = None;
        let reply = match command {
            Command::Status => self.status_card(key).await?,
            Command::New | Command::Reset => self.reset_command(key).await?,
            Command::Stop => {
                let stop = ChatAbortParams {
                    session_key: key.as_str().to_string(),
                    ..ChatAbortParams::default()
                };
                match self.chat_abort(stop).await?.aborted {
                    true => "Stopped the run.".into(),
                    false => "No run to stop.".into(),
                }
            }
            Command::Compact => self.compact_command(key).await?,
            Command::Think(level) => self.think_command(key, level.as_deref()).await?,
            Command::Model(model) => self.model_command(key, model.as_deref()).await?,
            Command::Verbose(level) => self.verbose_command(key, level.as_deref()).await?,
            Command::Send(Err(usage)) => return Err(CoreError::Invalid(usage)),
            Command::Send(Ok(policy)) => {
                let reply = self.resolver.set_send_override(key, policy).await?;
                self.changed(key, "update");
                send_policy = Some(policy.map(str::to_string));
                reply
            }
        };
        Ok(CommandReply {
            command: name,
            reply,
            send_policy,
        })
    }

    /// A command from an operator's door (`chat.send`, `agent`): refused to a caller without
    /// `operator.admin` (`owner`) when it needs an owner. Its reply is also told as the events
    /// of a run of id `run_id` (else a new id) that starts and ends at once, so a client that
    /// shows runs' replies (the TUI, the Control UI) shows it; it is not stored in the
    /// transcript.
    pub async fn operator_command(
        &self,
        key: &SessionKey,
        command: Command,
        run_id: Option<&str>,
        owner: bool,
    ) -> CoreResult<SendCommandResult> {
        if command.needs_owner(Door::Operator) && !owner {
            return Err(CoreError::Forbidden(format!(
                "{}: /send, /new and /reset need operator.admin (the owner's scope); this \
                 connection was granted less",
                command.name()
            )));
        }
        let done = self.command(key, command).await?;
        let run_id = (run_id.and_then(RunId::of_idempotency_key)).unwrap_or_default();
        self.runtime.tell_reply(&run_id, key, done.reply.clone());
        Ok(SendCommandResult {
            status: SendCommandResult::STATUS.into(),
            command: done.command.into(),
            session_key: key.display().to_string(),
            send_policy: done.send_policy,
            reply: done.reply,
            run_id: Some(run_id.into_string()),
        })
    }

    /// A command sent as `agent`'s message (`openclaw agent --message /status`): accepted and
    /// answered at once, its reply as the run's.
    pub(super) async fn agent_command(
        &self,
        key: &SessionKey,
        command: Command,
        (id, owner): (Option<&str>, bool),
        accepted: impl FnOnce(AgentAccepted),
    ) -> CoreResult<AgentResult> {
        let done = self.operator_command(key, command, id, owner).await?;
        let now = self.clock.now_ms();
        let run_id = done.run_id.unwrap_or_default();
        accepted(AgentAccepted {
            run_id: run_id.clone(),
            status: AgentAccepted::STATUS.into(),
            accepted_at: now,
            session_key: Some(key.display().to_string()),
            agent_id: key.agent_id().map(str::to_string),
        });
        Ok(AgentResult::new(RunResult {
            run_id,
            status: WireRunStatus::Ok,
            session_key: key.as_str().to_string(),
            state: None,
            wait_timed_out: false,
            started_at: Some(now),
            ended_at: Some(now),
            error: None,
            reply: Some(done.reply),
            model: None,
            cost_usd: None,
        }))
    }

    /// `/status`: the session's model, size, cost, policy and run, a line each.
    async fn status_card(&self, key: &SessionKey) -> CoreResult<String> {
        let params = SessionsDescribeParams {
            key: key.as_str().to_string(),
            agent_id: None,
        };
        let version = format!("switchboard {}", env!("CARGO_PKG_VERSION"));
        let Some(row) = self.describe(params).await?.session else {
            return Ok(format!(
                "{version}\nSession: {} · no messages yet; write to start it.",
                key.display()
            ));
        };
        let agent = self.config.agent(&row.agent_id);
        let chosen = (self.store.get(key).await?).and_then(|e| e.model);
        let model = match (chosen, &row.model) {
            (Some(model), _) => format!("{model} (set for this session)"),
            (None, Some(last)) => last.clone(),
            (None, None) => format!("{} (the agent's)", agent.model),
        };
        let (input, output) = (
            row.input_tokens.unwrap_or(0),
            row.output_tokens.unwrap_or(0),
        );
        let context = match (row.total_tokens, row.context_tokens) {
            (Some(used), Some(window)) if window > 0 => {
                format!(" · context {used} / {window} ({}%)", used * 100 / window)
            }
            _ => String::new(),
        };
        let run = match row.activity.as_ref().and_then(|a| a.status.as_deref()) {
            Some("running" | "queued") => "working".to_string(),
            Some(last) => format!("idle (last run {last})"),
            None => "idle".into(),
        };
        Ok([
            version,
            format!("Session: {} · {}", row.key, row.kind.as_str()),
            format!(
                "Model: {model} · thinking {} · verbose {}",
                row.thinking_level.as_deref().unwrap_or("default"),
                row.verbose_level.as_deref().unwrap_or("off")
            ),
            format!("Tokens: {input} in / {output} out{context}"),
            format!("Cost: ${:.6}", row.cost_usd.unwrap_or(0.0)),
            format!(
                "Send policy: {}",
                row.send_policy.as_deref().unwrap_or("inherit")
            ),
            format!("Run: {run}"),
        ]
        .join("\n"))
    }

    /// `/new`, `/reset`: a fresh transcript; the old one stays stored.
    async fn reset_command(&self, key: &SessionKey) -> CoreResult<String> {
        let params = SessionKeyParams {
            key: key.as_str().to_string(),
            agent_id: None,
        };
        match self.reset(params).await {
            Ok(reset) => Ok(format!(
                "New session: {} (sessionId {}); the old transcript is kept.",
                reset.key, reset.session_id
            )),
            Err(CoreError::NotFound(_)) => Ok("Nothing to reset: no session yet.".into()),
            Err(e) => Err(e),
        }
    }

    /// `/compact`: `sessions.compact` from the chat.
    async fn compact_command(&self, key: &SessionKey) -> CoreResult<String> {
        let params = SessionKeyParams {
            key: key.as_str().to_string(),
            agent_id: None,
        };
        let done = self.compact(params).await?;
        Ok(match done.compacted {
            true => format!(
                "Compacted {} messages into a summary; they stay in the history.",
                done.messages
            ),
            false => "Nothing to compact yet.".into(),
        })
    }

    /// `/think <level>` sets the session's thinking level; `/think` says it.
    async fn think_command(&self, key: &SessionKey, level: Option<&str>) -> CoreResult<String> {
        let Some(level) = level else {
            let agent = self.config.agent(key.agent_id().unwrap_or_default());
            let current = (self.store.get(key).await?)
                .and_then(|e| e.thinking_level)
                .unwrap_or_else(|| format!("{} (the agent's)", agent.thinking_level));
            return Ok(format!(
                "Thinking level: {current}. Set it with /think off|minimal|low|medium|high."
            ));
        };
        let level = super::manage::thinking_level(level)?;
        self.patch_command(key, |p| {
            p.thinking_level = Patch::Set(level.as_str().into())
        })
        .await?;
        Ok(format!("Thinking level set to {level}."))
    }

    /// `/model <provider/model>` sets the session's model (`default`: the agent's again);
    /// `/model` says it.
    async fn model_command(&self, key: &SessionKey, model: Option<&str>) -> CoreResult<String> {
        let agent = self.config.agent(key.agent_id().unwrap_or_default());
        let Some(model) = model else {
            let current = (self.store.get(key).await?)
                .and_then(|e| e.model)
                .unwrap_or_else(|| format!("{} (the agent's)", agent.model));
            return Ok(format!(
                "Model: {current}. Set it with /model <provider/model> (models.list shows them) \
                 or /model default."
            ));
        };
        if model.eq_ignore_ascii_case("default") {
            self.patch_command(key, |p| p.model = Patch::Clear).await?;
            return Ok(format!("Model reset to the agent's, {}.", agent.model));
        }
        let model = model.to_string();
        let reply = format!("Model set to {model} for this session.");
        self.patch_command(key, |p| p.model = Patch::Set(model))
            .await?;
        Ok(reply)
    }

    /// `/verbose on|off|full` sets the session's verbose level; `/verbose` says it.
    async fn verbose_command(&self, key: &SessionKey, level: Option<&str>) -> CoreResult<String> {
        let Some(level) = level else {
            let current = (self.store.get(key).await?).and_then(|e| e.verbose_level);
            return Ok(format!(
                "Verbose: {}. Set it with /verbose on|off|full.",
                current.as_deref().unwrap_or("off")
            ));
        };
        let level = level.to_string();
        let patched = self
            .patch_command(key, |p| p.verbose_level = Patch::Set(level))
            .await?;
        Ok(format!("Verbose set to {patched}."))
    }

    /// `sessions.patch` of the session (created when it is new) with what `set` sets, checked as
    /// the method checks it; answers the verbose level now stored (for `/verbose`'s reply).
    async fn patch_command(
        &self,
        key: &SessionKey,
        set: impl FnOnce(&mut SessionsPatchParams),
    ) -> CoreResult<String> {
        if self.store.get(key).await?.is_none() {
            self.store.create(self.resolver.new_session(key)).await?;
        }
        let mut params = SessionsPatchParams {
            key: key.as_str().to_string(),
            ..SessionsPatchParams::default()
        };
        set(&mut params);
        let patched = self.patch(params).await?;
        Ok(patched
            .session
            .verbose_level
            .unwrap_or_else(|| "off".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_a_command_only_as_its_first_line_with_the_arguments_it_takes() {
        let cases = [
            ("/status", Some(Command::Status)),
            ("  /STATUS  ", Some(Command::Status)),
            ("/status\nand more lines", Some(Command::Status)),
            ("/status please", None),
            ("/statuses", None),
            ("status", None),
            ("hey /status", None),
            ("/new", Some(Command::New)),
            ("/reset", Some(Command::Reset)),
            ("/abort", Some(Command::Stop)),
            ("/think high", Some(Command::Think(Some("high".into())))),
            ("/t: low", Some(Command::Think(Some("low".into())))),
            ("/think", Some(Command::Think(None))),
            (
                "/model mock/m1",
                Some(Command::Model(Some("mock/m1".into()))),
            ),
            ("/v full", Some(Command::Verbose(Some("full".into())))),
            ("/send off", Some(Command::Send(Ok(Some("deny"))))),
            ("/send", Some(Command::Send(Err(String::new())))),
        ];
        for (text, expected) in cases {
            let got = Command::of_text(text);
            match (&got, &expected) {
                (Some(Command::Send(Err(_))), Some(Command::Send(Err(_)))) => {}
                _ => assert_eq!(got, expected, "{text:?}"),
            }
        }
    }

    #[test]
    fn owners_alone_change_a_session_from_a_chat_admins_alone_reset_it_from_the_gateway() {
        let think = Command::Think(Some("high".into()));
        assert!(think.needs_owner(Door::Chat) && !think.needs_owner(Door::Operator));
        assert!(!Command::Think(None).needs_owner(Door::Chat));
        for open in [Command::Status, Command::Stop] {
            assert!(!open.needs_owner(Door::Chat) && !open.needs_owner(Door::Operator));
        }
        for owned in [Command::New, Command::Reset, Command::Send(Ok(None))] {
            assert!(owned.needs_owner(Door::Chat) && owned.needs_owner(Door::Operator));
        }
    }
}
