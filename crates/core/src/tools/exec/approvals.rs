//! Commands held for an operator's approval (SPEC §6.5, `tools.exec.ask`): outside a sandbox a
//! command the allowlist does not match (`on-miss`, the default there), or every command
//! (`always`), waits until an operator approves or denies it (`exec.approvals.*`, `switchboard
//! approvals`), or its time runs out (refused). The allowlist is the reference's
//! `exec-approvals.json` in the state dir: `agents.<agentId | "*">.allowlist[].pattern`, globs
//! over the program's resolved path (`*` within a folder, `**` across folders, `~/` from the
//! home directory). "Allow always" adds the program's path to the agent's allowlist there.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_protocol::exec_tools::PendingApproval;
use tokio::sync::oneshot;

/// The reference's allowlist file, in the state dir.
pub const FILE: &str = "exec-approvals.json";

/// An operator's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve { always: bool },
    Deny,
}

struct Held {
    view: PendingApproval,
    answer: oneshot::Sender<Decision>,
}

/// Takes a held command off the list when its wait ends.
struct Withdraw<'a> {
    approvals: &'a Approvals,
    id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.approvals.lock().remove(&self.id);
    }
}

/// The commands waiting, and the allowlist file.
pub struct Approvals {
    file: PathBuf,
    held: Mutex<HashMap<String, Held>>,
}

impl Approvals {
    pub fn new(home: &Path) -> Self {
        Self {
            file: home.join(FILE),
            held: Mutex::default(),
        }
    }

    /// `exec.approvals.get`: the allowlist file as the reference answers it: where it is, whether
    /// it exists, a SHA-256 of its text and its content (`{version: 1, agents: {}}` when absent
    /// or not a JSON object), a socket token left out.
    pub fn snapshot(&self) -> Value {
        let text = std::fs::read_to_string(&self.file).ok();
        let parsed = text
            .as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok());
        let mut file = parsed
            .filter(Value::is_object)
            .unwrap_or_else(|| serde_json::json!({"version": 1, "agents": {}}));
        if let Some(socket) = file.get_mut("socket").and_then(Value::as_object_mut) {
            socket.remove("token");
        }
        let digest = ring::digest::digest(
            &ring::digest::SHA256,
            text.as_deref().unwrap_or_default().as_bytes(),
        );
        let hash: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        serde_json::json!({
            "path": self.file.display().to_string(), "exists": text.is_some(), "hash": hash,
            "file": file, "resolvedDefaults": {},
        })
    }

    /// Whether `command`'s program is on `agent`'s allowlist (or every agent's, `*`).
    pub fn allowed(&self, agent: &str, command: &str) -> bool {
        let Some(program) = program_of(command) else {
            return false;
        };
        let Ok(text) = std::fs::read_to_string(&self.file) else {
            return false;
        };
        let Ok(file) = serde_json::from_str::<Value>(&text) else {
            tracing::warn!(file = %self.file.display(), "the exec allowlist is not JSON; nothing matches it");
            return false;
        };
        [agent, "*"].iter().any(|who| {
            let entries = file["agents"][who]["allowlist"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            entries.iter().any(|entry| {
                let pattern = entry["pattern"]
                    .as_str()
                    .or(entry.as_str())
                    .unwrap_or_default();
                glob(&expand_home(pattern), &program)
            })
        })
    }

    /// Holds `request` until an operator answers it or `timeout` passes (`None`).
    pub async fn ask(&self, request: PendingApproval, timeout: Duration) -> Option<Decision> {
        let (answer, decision) = oneshot::channel();
        let id = request.id.clone();
        self.lock().insert(
            id.clone(),
            Held {
                view: request,
                answer,
            },
        );
        // Withdrawn however the wait ends: answered, timed out, or dropped with its run.
        let _withdrawn = Withdraw {
            approvals: self,
            id,
        };
        let decided = tokio::time::timeout(timeout, decision).await;
        decided.ok().and_then(Result::ok)
    }

    /// The commands waiting, oldest first.
    pub fn list(&self) -> Vec<PendingApproval> {
        let mut waiting: Vec<_> = self.lock().values().map(|h| h.view.clone()).collect();
        waiting.sort_by_key(|p| p.requested_at);
        waiting
    }

    /// Answers the command `id`; "always" also adds its program to the agent's allowlist.
    pub fn decide(&self, id: &str, decision: Decision) -> Result<PendingApproval, String> {
        let Some(held) = self.lock().remove(id) else {
            return Err(format!(
                "no command waits for approval under {id:?} (exec.approvals.list shows them)"
            ));
        };
        if decision == (Decision::Approve { always: true })
            && let Some(program) = program_of(&held.view.command)
            && let Err(e) = self.add_to_allowlist(&held.view.agent_id, &program)
        {
            tracing::warn!(error = %e, "could not add the program to the exec allowlist");
        }
        let view = held.view.clone();
        let _ = held.answer.send(decision);
        Ok(view)
    }

    /// Adds `program` to `agent`'s allowlist in the file, keeping what else it holds.
    fn add_to_allowlist(&self, agent: &str, program: &str) -> std::io::Result<()> {
        let mut file: Value = std::fs::read_to_string(&self.file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_else(|| json!({"version": 1}));
        if !file["agents"].is_object() {
            file["agents"] = json!({});
        }
        if !file["agents"][agent]["allowlist"].is_array() {
            file["agents"][agent]["allowlist"] = json!([]);
        }
        if let Some(list) = file["agents"][agent]["allowlist"].as_array_mut() {
            let entry = json!({"id": uuid::Uuid::new_v4().to_string(), "pattern": program});
            list.push(entry);
        }
        std::fs::write(
            &self.file,
            serde_json::to_vec_pretty(&file).unwrap_or_default(),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The resolved path of `command`'s program: its first word, looked up in the commands'
/// PATH when it has no slash.
pub fn program_of(command: &str) -> Option<String> {
    let first = command.split_whitespace().next()?;
    if first.contains('/') {
        return Some(first.to_string());
    }
    super::COMMAND_PATH
        .split(':')
        .map(|dir| Path::new(dir).join(first))
        .find(|path| path.is_file())
        .map(|path| path.display().to_string())
        .or_else(|| Some(first.to_string()))
}

fn expand_home(pattern: &str) -> String {
    match (pattern.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => format!("{home}/{rest}"),
        _ => pattern.to_string(),
    }
}

/// `*` matches within one folder, `**` across folders, everything else itself.
fn glob(pattern: &str, path: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p {
            [] => s.is_empty(),
            [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| go(rest, &s[i..])),
            [b'*', rest @ ..] => (0..=s.len())
                .take_while(|i| !s[..*i].contains(&b'/'))
                .any(|i| go(rest, &s[i..])),
            [c, rest @ ..] => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), path.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_within_and_across_folders() {
        assert!(glob("/usr/bin/uptime", "/usr/bin/uptime"));
        assert!(glob("/usr/bin/*", "/usr/bin/ls"));
        assert!(!glob("/usr/*", "/usr/bin/ls"));
        assert!(glob("/home/me/**/bin/rg", "/home/me/p/q/bin/rg"));
        assert!(!glob("/usr/bin/ls", "/usr/bin/lsblk"));
    }

    #[test]
    fn the_reference_file_allows_an_agents_programs_and_every_agents() {
        let dir = tempfile::tempdir().unwrap();
        let approvals = Approvals::new(dir.path());
        assert!(
            !approvals.allowed("main", "ls -la"),
            "no file: nothing allowed"
        );
        let file = json!({"version": 1, "defaults": {"ask": "on-miss"}, "agents": {
            "main": {"security": "allowlist", "allowlist": [{"id": "a", "pattern": "/usr/bin/l*"}]},
            "*": {"allowlist": [{"pattern": "/usr/bin/uname"}]}}});
        std::fs::write(dir.path().join(FILE), file.to_string()).unwrap();
        assert!(approvals.allowed("main", "/usr/bin/ls -la"));
        assert!(approvals.allowed("other", "/usr/bin/uname -a"));
        assert!(!approvals.allowed("other", "/usr/bin/ls"));
        approvals.add_to_allowlist("other", "/usr/bin/ls").unwrap();
        assert!(approvals.allowed("other", "/usr/bin/ls"));
        let kept: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(FILE)).unwrap()).unwrap();
        assert_eq!(
            kept["defaults"]["ask"], "on-miss",
            "the rest of the file is kept"
        );
    }
}
