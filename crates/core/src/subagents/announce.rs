//! The sub-agent announce (SPEC §7.4): a run in the child that asks for `Result:` and `Notes:`
//! (or exactly `ANNOUNCE_SKIP`), normalised to the four-line report. `Status` always comes from
//! the task run's outcome, never from what the model wrote; if the step cannot run, the report
//! still goes out with the child's last output as Result and the failure in Notes.

use std::time::Duration;

use super::Subagents;
use crate::delivery::replies::{ANNOUNCE_SKIP, skips_announce};
use crate::keys::SessionKey;
use crate::runtime::RunRequest;
use crate::runtime::lanes::Lane;
use crate::store::{RunStatus, SessionEntry, StoreError, SubagentRecord};

/// Upper bound of the announce step (the agent's own timeout bounds it further).
const STEP_TIMEOUT: Duration = Duration::from_secs(120);
const NOT_AVAILABLE: &str = "(not available)";

impl Subagents {
    /// The report to deliver, or `None` when the child answered `ANNOUNCE_SKIP`. `Err` when the
    /// gateway began shutting down meanwhile or the store could not say what the child did:
    /// the announce is made again later, never from a result that could not be read.
    pub(super) async fn announce_text(
        &self,
        record: &SubagentRecord,
    ) -> Result<Option<String>, String> {
        let status = status_word(record.outcome.as_deref());
        let task_run = self
            .runtime
            .record(&record.run_id)
            .await
            .map_err(|e| format!("could not read the task run: {e}"))?;
        let last_output = match task_run.as_ref().and_then(|r| r.result.clone()) {
            Some(text) if !text.trim().is_empty() => text,
            _ => self
                .last_assistant_text(&record.child_key)
                .await
                .map_err(|e| format!("could not read the child's transcript: {e}"))?
                .unwrap_or_else(|| NOT_AVAILABLE.to_string()),
        };
        let (result, notes) = match self.announce_step(record, status, &last_output).await {
            Ok(reply) if skips_announce(&reply) => return Ok(None),
            Ok(reply) => parse(&reply),
            Err(_) if self.runtime.is_closing() => {
                return Err("the gateway is shutting down".into());
            }
            Err(failure) => (
                last_output.clone(),
                format!("the announce step could not run: {failure}"),
            ),
        };
        // Only the Stats line is made from the entry (tokens, cost, sessionId): an announce is
        // not held back for it, and the line says less when the entry cannot be read.
        let entry = match self.store.get(&record.child_key).await {
            Ok(entry) => entry,
            Err(e) => {
                tracing::warn!(child = %record.child_key, error = %e, "could not read the child's entry for the announce's statistics");
                None
            }
        };
        let runtime_ms = task_run
            .as_ref()
            .and_then(|r| Some(r.ended_at? - r.started_at?))
            .or_else(|| Some(record.ended_at? - record.created_at))
            .unwrap_or(0);
        let stats = self.stats(record, entry.as_ref(), runtime_ms);
        Ok(Some(format!(
            "Status: {status}\nResult: {result}\nNotes: {notes}\nStats: {stats}"
        )))
    }

    /// Runs the announce step in the child; answers its reply or why there is none.
    async fn announce_step(
        &self,
        record: &SubagentRecord,
        status: &str,
        last_output: &str,
    ) -> Result<String, String> {
        let mut request = RunRequest::new(record.child_key.clone(), Lane::Subagent).with_message(
            format!(
                "[sub-agent announce step] Your task was: {}\nYour run ended with status {status}. \
                 Your last output was:\n{last_output}",
                record.task
            ),
            None,
        );
        request.extra_system_prompt = Some(format!(
            "Sub-agent announce step. Report to session {} what became of your task, as two lines: \
             \"Result: <what you found or did>\" and \"Notes: <caveats, or none>\". The runtime adds \
             the status and statistics itself. Reply exactly {ANNOUNCE_SKIP} to report nothing.",
            record.requester_key
        ));
        request.timeout = Some(STEP_TIMEOUT);
        // A resumed step waits on the run it started before, instead of starting a second one.
        request.idempotency_key = Some(format!("subagent-announce-step:{}", record.child_key));
        let accepted = self
            .runtime
            .submit(request)
            .await
            .map_err(|e| e.to_string())?;
        let ended = self
            .runtime
            .wait(&accepted.run_id, Duration::MAX)
            .await
            .map_err(|e| e.to_string())?
            .record;
        match ended.status {
            RunStatus::Ok => Ok(ended.result.unwrap_or_default()),
            other => Err(format!(
                "it ended {}{}",
                other.as_str(),
                ended.error.map(|e| format!(" ({e})")).unwrap_or_default()
            )),
        }
    }

    /// `runtime 1m5s • tokens 12.3k (in 10.1k / out 2.2k) • est $0.04 • sessionKey … •
    /// sessionId … • transcript …` (`est $` only when the child's calls were priced, or its model
    /// has a configured cost).
    fn stats(
        &self,
        record: &SubagentRecord,
        entry: Option<&SessionEntry>,
        runtime_ms: i64,
    ) -> String {
        let (input, output) = entry.map_or((0, 0), |e| (e.input_tokens, e.output_tokens));
        let mut parts = vec![
            format!("runtime {}", duration(runtime_ms)),
            format!(
                "tokens {} (in {} / out {})",
                tokens(input + output),
                tokens(input),
                tokens(output)
            ),
        ];
        // What the child's model calls cost as they were priced, else its model's prices.
        let stored = entry.map(|e| e.cost_usd).filter(|usd| *usd > 0.0);
        let priced = || {
            let target = self.runtime.providers().resolve(&record.model).ok()?;
            Some(target.cost?.usd(input, output))
        };
        if let Some(usd) = stored.or_else(priced) {
            parts.push(if usd < 0.01 {
                format!("est ${usd:.4}")
            } else {
                format!("est ${usd:.2}")
            });
        }
        parts.push(format!("sessionKey {}", record.child_key));
        if let Some(entry) = entry {
            parts.push(format!("sessionId {}", entry.session_id));
            // A path of the server's file system is never posted to a chat (SPEC §9.2).
            if let (None, Some(path)) = (
                &record.origin,
                self.store
                    .transcript_path(&entry.agent_id, &entry.session_id),
            ) {
                parts.push(format!("transcript {}", path.display()));
            }
        }
        parts.join(" • ")
    }

    /// The child's newest assistant text in its transcript (a timed-out run keeps its partial
    /// text there); `None` when it has none.
    async fn last_assistant_text(&self, child: &SessionKey) -> Result<Option<String>, StoreError> {
        let Some(entry) = self.store.get(child).await? else {
            return Ok(None);
        };
        let page = self.store.history(&entry.session_id, 20, None).await?;
        Ok(page.messages.iter().rev().find_map(|m| {
            if m.message.get("role")?.as_str()? != "assistant" {
                return None;
            }
            let text: Vec<&str> = m
                .message
                .get("content")?
                .as_array()?
                .iter()
                .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
                .filter_map(|b| b.get("text")?.as_str())
                .collect();
            let text = text.join("\n");
            (!text.trim().is_empty()).then_some(text)
        }))
    }
}

/// The runtime outcome as the report's Status.
pub(super) fn status_word(outcome: Option<&str>) -> &'static str {
    match outcome.and_then(RunStatus::parse) {
        Some(RunStatus::Ok) => "success",
        Some(RunStatus::Error | RunStatus::Aborted) => "error",
        Some(RunStatus::Timeout) => "timeout",
        _ => "unknown",
    }
}

/// `Result:` and `Notes:` out of the model's reply; `Status:`/`Stats:` lines it wrote are dropped
/// (the runtime states those). Without a `Result:` line the whole reply is the result.
pub(super) fn parse(reply: &str) -> (String, String) {
    #[derive(PartialEq)]
    enum Part {
        Other,
        Result,
        Notes,
        Dropped,
    }
    let mut other = Vec::new();
    let mut result: Option<Vec<&str>> = None;
    let mut notes: Option<Vec<&str>> = None;
    let mut part = Part::Other;
    for line in reply.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = strip_label(trimmed, "result:") {
            part = Part::Result;
            result.get_or_insert_with(Vec::new).push(rest.trim());
        } else if let Some(rest) = strip_label(trimmed, "notes:") {
            part = Part::Notes;
            notes.get_or_insert_with(Vec::new).push(rest.trim());
        } else if strip_label(trimmed, "status:").is_some()
            || strip_label(trimmed, "stats:").is_some()
        {
            part = Part::Dropped;
        } else {
            match part {
                Part::Result => result.get_or_insert_with(Vec::new).push(line),
                Part::Notes => notes.get_or_insert_with(Vec::new).push(line),
                Part::Other => other.push(line),
                Part::Dropped => {}
            }
        }
    }
    let join = |lines: Vec<&str>| lines.join("\n").trim().to_string();
    let result = match result {
        Some(lines) => join(lines),
        None => join(other),
    };
    let notes = notes.map(join).unwrap_or_default();
    (
        if result.is_empty() {
            "(empty)".into()
        } else {
            result
        },
        if notes.is_empty() {
            "none".into()
        } else {
            notes
        },
    )
}

fn strip_label<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let head = line.get(..label.len())?;
    head.eq_ignore_ascii_case(label)
        .then(|| &line[label.len()..])
}

fn duration(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 60_000 {
        return format!("{:.1}s", ms as f64 / 1000.0);
    }
    let secs = ms / 1000;
    if secs < 3600 {
        format!("{}m{}s", secs / 60, secs % 60)
    } else {
        format!("{}h{}m", secs / 3600, (secs % 3600) / 60)
    }
}

fn tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else {
        format!("{:.1}k", n as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_is_never_taken_from_the_reply() {
        let (result, notes) =
            parse("Status: success\nResult: all done\nsecond line\nNotes: none really\nStats: x");
        assert_eq!(result, "all done\nsecond line");
        assert_eq!(notes, "none really");
    }

    #[test]
    fn a_reply_without_labels_is_the_result() {
        assert_eq!(parse("just text"), ("just text".into(), "none".into()));
        assert_eq!(parse("  "), ("(empty)".into(), "none".into()));
        assert_eq!(parse("RESULT: x"), ("x".into(), "none".into()));
    }

    #[test]
    fn outcomes_map_to_statuses() {
        assert_eq!(status_word(Some("ok")), "success");
        assert_eq!(status_word(Some("error")), "error");
        assert_eq!(status_word(Some("aborted")), "error");
        assert_eq!(status_word(Some("timeout")), "timeout");
        assert_eq!(status_word(None), "unknown");
    }

    #[test]
    fn durations_and_token_counts_read_like_the_reference() {
        assert_eq!(duration(65_000), "1m5s");
        assert_eq!(duration(1_500), "1.5s");
        assert_eq!(duration(3_720_000), "1h2m");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(999), "999");
    }
}
