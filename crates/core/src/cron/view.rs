//! A stored job as `cron.*` answer it: our fields and the reference's (`schedule: {kind, …}`,
//! `payload`, `delivery`, `state`), with its next slot and its last firing's outcome.

use switchboard_protocol::cron::{
    CronDelivery, CronDeliveryMode, CronJob, CronJobState, CronPayload, ScheduleView,
};

use super::schedule::Schedule;
use crate::store::{CronJobRecord, RunRecord, RunStatus};

/// The session a job's firings run in.
pub(super) fn session_key(job: &CronJobRecord) -> String {
    format!("agent:{}:cron:{}", job.agent_id, job.id)
}

/// The next slot the scheduler fires (or one due now); `None` for a disabled job.
pub(super) fn next_run_at(job: &CronJobRecord, schedule: &Schedule, now: i64) -> Option<i64> {
    if !job.enabled {
        return None;
    }
    let after = job.last_slot.unwrap_or(job.created_at);
    schedule
        .due(after, now, job.created_at)
        .or_else(|| schedule.next_after(after.max(now), job.created_at))
}

/// `job` answered; `last_run` is the record of its last firing's run, when known.
pub(super) fn job_view(
    job: &CronJobRecord,
    schedule: &Schedule,
    now: i64,
    last_run: Option<&RunRecord>,
) -> CronJob {
    let next_run_at = next_run_at(job, schedule, now);
    let (expr, every_ms) = (schedule.expression(), schedule.every_ms());
    let state = CronJobState {
        next_run_at_ms: next_run_at,
        last_run_at_ms: job.last_fired_at,
        last_run_status: last_run
            .filter(|r| r.status.is_final())
            .map(|r| r.status.into()),
        running_at_ms: last_run
            .filter(|r| r.status == RunStatus::Running)
            .and_then(|r| r.started_at),
    };
    CronJob {
        id: job.id.clone(),
        agent_id: job.agent_id.clone(),
        session_key: session_key(job),
        name: job.name.clone().unwrap_or_else(|| job.id.clone()),
        enabled: job.enabled,
        schedule: ScheduleView {
            kind: schedule.kind(),
            tz: expr.is_some().then(|| "UTC".to_string()),
            expr,
            every_ms,
        },
        schedule_text: job.schedule.clone(),
        session_target: "isolated".into(),
        wake_mode: "now".into(),
        payload: CronPayload::AgentTurn {
            message: job.message.clone(),
        },
        delivery: CronDelivery {
            mode: match job.deliver {
                true => CronDeliveryMode::Announce,
                false => CronDeliveryMode::None,
            },
        },
        state,
        created_at_ms: job.created_at,
        kind: schedule.kind(),
        every_ms,
        tz: "UTC".into(),
        message: job.message.clone(),
        deliver: job.deliver,
        created_at: job.created_at,
        next_run_at,
        last_slot: job.last_slot,
        last_run_id: job.last_run_id.as_ref().map(|r| r.as_str().to_string()),
        last_fired_at: job.last_fired_at,
    }
}
