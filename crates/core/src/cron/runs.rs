//! `cron.runs`: the runs of one job or of every job, read from the runs of the jobs' sessions
//! (`agent:<agentId>:cron:<jobId>`), filtered and paged as the reference's CLI and Control UI
//! ask.

use switchboard_protocol::cron::{CronRunEntry, CronRunsParams, CronRunsResult};

use super::Cron;
use super::view::session_key;
use crate::error::{CoreError, CoreResult};
use crate::keys::normalize_agent_id;
use crate::store::{CronJobRecord, RunQuery, RunRecord, RunStatus};

/// Runs read per job: the newest ones.
const RUNS_PER_JOB: usize = 500;
/// Characters of a run's reply shown as its summary.
const SUMMARY: usize = 300;
const STATUSES: &[&str] = &["ok", "error", "skipped", "running"];
const DELIVERY_STATUSES: &[&str] = &["delivered", "not-delivered", "unknown", "not-requested"];

impl Cron {
    /// `cron.runs`: newest first (or oldest, `sortDir: "asc"`), at most `limit` from `offset`.
    pub async fn runs(&self, p: CronRunsParams) -> CoreResult<CronRunsResult> {
        let limit = p.limit.unwrap_or(50);
        if !(1..=200).contains(&limit) {
            return Err(CoreError::invalid(format!(
                "limit: {limit} is out of range; 1 to 200"
            )));
        }
        let offset = p.offset.unwrap_or(0).max(0) as usize;
        let statuses = chosen(
            "status",
            p.status.as_deref(),
            p.statuses.as_deref(),
            STATUSES,
        )?;
        let deliveries = chosen(
            "deliveryStatus",
            p.delivery_status.as_deref(),
            p.delivery_statuses.as_deref(),
            DELIVERY_STATUSES,
        )?;
        let ascending = match p.sort_dir.as_deref().unwrap_or("desc") {
            "desc" => false,
            "asc" => true,
            other => {
                return Err(CoreError::invalid(format!(
                    "sortDir: {other:?}; accepted: desc, asc"
                )));
            }
        };
        let query = p.query.as_deref().map(str::to_lowercase);
        let mut entries = Vec::new();
        for job in self.jobs_of(&p).await? {
            let key = self.resolver.canonical(&session_key(&job), None)?;
            let runs = self.store.list_runs(RunQuery {
                key: key.into_string(),
                prefix: false,
                before: None,
                limit: RUNS_PER_JOB,
            });
            entries.extend(runs.await?.into_iter().map(|r| run_entry(&job, r)));
        }
        entries.retain(|e| {
            p.run_id.as_deref().is_none_or(|id| e.run_id == id)
                && statuses.as_ref().is_none_or(|s| s.contains(&e.status))
                && deliveries
                    .as_ref()
                    .is_none_or(|d| d.contains(&e.delivery_status))
                && query.as_deref().is_none_or(|q| matches(e, q))
        });
        entries.sort_by(|a, b| (b.ts, &b.run_id).cmp(&(a.ts, &a.run_id)));
        if ascending {
            entries.reverse();
        }
        let total = entries.len();
        let page: Vec<CronRunEntry> = entries
            .into_iter()
            .skip(offset)
            .take(limit as usize)
            .collect();
        let end = offset + page.len();
        Ok(CronRunsResult {
            entries: page,
            total,
            offset,
            limit: limit as usize,
            has_more: end < total,
            next_offset: (end < total).then_some(end),
        })
    }

    /// The jobs whose runs are asked for: the one of `id` (`scope: "job"`, the default with an
    /// id), or every job (`scope: "all"`), of one agent with `agentId`.
    async fn jobs_of(&self, p: &CronRunsParams) -> CoreResult<Vec<CronJobRecord>> {
        let id = p.id.as_deref().map(str::trim).filter(|id| !id.is_empty());
        let scope = p
            .scope
            .as_deref()
            .unwrap_or(if id.is_some() { "job" } else { "all" });
        match (scope, id) {
            ("job", Some(id)) => Ok(vec![self.job(id).await?]),
            ("job", None) => Err(CoreError::invalid(
                "cron.runs: scope \"job\" needs id (the job's id; cron.list shows them)",
            )),
            ("all", _) => {
                let agent = p.agent_id.as_deref().map(normalize_agent_id);
                let jobs = self.store.cron_list().await?;
                Ok((jobs.into_iter())
                    .filter(|j| id.is_none_or(|id| j.id == id))
                    .filter(|j| agent.as_ref().is_none_or(|a| &j.agent_id == a))
                    .collect())
            }
            (other, _) => Err(CoreError::invalid(format!(
                "scope: {other:?}; accepted: job, all"
            ))),
        }
    }
}

/// The statuses kept: `one` (`all`: every one) and `many`, each one of `accepted`; `None`: no
/// filter.
fn chosen(
    field: &str,
    one: Option<&str>,
    many: Option<&[String]>,
    accepted: &[&str],
) -> CoreResult<Option<Vec<String>>> {
    let mut kept: Vec<String> = many.unwrap_or_default().to_vec();
    match one {
        None | Some("all") => {}
        Some(one) => kept.push(one.to_string()),
    }
    if let Some(bad) = kept.iter().find(|s| !accepted.contains(&s.as_str())) {
        return Err(CoreError::invalid(format!(
            "{field}: {bad:?} is not a status; accepted: all, {}",
            accepted.join(", ")
        )));
    }
    Ok((!kept.is_empty()).then_some(kept))
}

/// Whether the run's job name or id, summary or error holds `query` (lower case).
fn matches(e: &CronRunEntry, query: &str) -> bool {
    [
        Some(&e.job_name),
        Some(&e.job_id),
        e.summary.as_ref(),
        e.error.as_ref(),
    ]
    .into_iter()
    .flatten()
    .any(|text| text.to_lowercase().contains(query))
}

/// A run of `job`, as `cron.runs` lists it.
pub(super) fn run_entry(job: &CronJobRecord, r: RunRecord) -> CronRunEntry {
    let (action, status) = match r.status {
        RunStatus::Queued | RunStatus::Running => ("started", "running"),
        RunStatus::Ok => ("finished", "ok"),
        RunStatus::Error | RunStatus::Timeout | RunStatus::Aborted => ("finished", "error"),
    };
    let summary = r
        .result
        .as_deref()
        .map(|text| match text.char_indices().nth(SUMMARY) {
            Some((at, _)) => format!("{}…", &text[..at]),
            None => text.to_string(),
        });
    CronRunEntry {
        ts: r.ended_at.unwrap_or(r.created_at),
        job_id: job.id.clone(),
        job_name: job.name.clone().unwrap_or_else(|| job.id.clone()),
        action: action.into(),
        status: status.into(),
        run_id: r.run_id.into_string(),
        run_at_ms: r.created_at,
        duration_ms: r.ended_at.zip(r.started_at).map(|(end, start)| end - start),
        session_key: r.session_key.display().to_string(),
        error: r.error,
        summary,
        delivery_status: if job.deliver {
            "unknown"
        } else {
            "not-requested"
        }
        .into(),
        model: r.model,
    }
}
