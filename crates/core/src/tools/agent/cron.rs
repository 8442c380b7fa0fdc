//! `cron`: the calling agent's own scheduled jobs — list, add, remove, run. A job another
//! agent owns does not exist for it; a job it adds runs as it (`agentId` is always its own).

use std::sync::Arc;

use switchboard_protocol::agent_tools::{CronAction, CronToolAnswer, CronToolParams};
use switchboard_protocol::cron::{CronAddParams, CronJob, CronListParams};
use switchboard_protocol::session_tools::ToolFailure;

use super::{AgentTools, failure};
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::tools::Answer;

pub struct CronTool(pub Arc<AgentTools>);

impl TypedTool for CronTool {
    type Params = CronToolParams;
    type Output = Answer<CronToolAnswer>;

    fn name(&self) -> &'static str {
        "cron"
    }

    fn hints(&self) -> ToolHints {
        ToolHints::ACTS
    }

    fn description(&self) -> &'static str {
        "Your scheduled jobs: action list; add (schedule in UTC: a cron expression such as \
         \"0 9 * * 1-5\", \"@daily\" or \"every 30m\"; message: what you will be told at each \
         firing; name, enabled optional); remove (id); run (id: fire it now). Each firing runs \
         in a session of the job's own."
    }

    async fn run(&self, ctx: &ToolContext, params: CronToolParams) -> Self::Output {
        match self.act(&ctx.caller().agent_id, params).await {
            Ok(answer) => Answer::Done(answer),
            Err(e) => Answer::Failed(e),
        }
    }
}

impl CronTool {
    async fn act(&self, agent: &str, p: CronToolParams) -> Result<CronToolAnswer, ToolFailure> {
        let cron = &self.0.cron;
        match p.action {
            CronAction::List => Ok(CronToolAnswer::Jobs {
                jobs: self.mine(agent).await?,
            }),
            CronAction::Add => {
                let add = CronAddParams {
                    id: p.id,
                    schedule: p
                        .schedule
                        .map(serde_json::Value::String)
                        .unwrap_or_default(),
                    message: p.message.unwrap_or_default(),
                    agent_id: Some(agent.to_string()),
                    name: p.name,
                    enabled: p.enabled,
                    ..CronAddParams::default()
                };
                let job = cron.add(add).await.map_err(failure)?;
                Ok(CronToolAnswer::Job { job: Box::new(job) })
            }
            CronAction::Remove => {
                let id = self.own(agent, p.id.as_deref()).await?;
                cron.remove(&id).await.map_err(failure)?;
                Ok(CronToolAnswer::Done {
                    id,
                    status: "removed".into(),
                    run_id: None,
                })
            }
            CronAction::Run => {
                let id = self.own(agent, p.id.as_deref()).await?;
                let ran = cron.run(&id).await.map_err(failure)?;
                Ok(CronToolAnswer::Done {
                    id,
                    status: ran.status,
                    run_id: Some(ran.run_id),
                })
            }
        }
    }

    /// `agent`'s jobs, disabled ones included.
    async fn mine(&self, agent: &str) -> Result<Vec<CronJob>, ToolFailure> {
        let list = CronListParams {
            include_disabled: Some(true),
            agent_id: Some(agent.to_string()),
            ..CronListParams::default()
        };
        Ok(self.0.cron.list(list).await.map_err(failure)?.jobs)
    }

    /// The id of `agent`'s job `id`; another agent's job is as absent as a missing one.
    async fn own(&self, agent: &str, id: Option<&str>) -> Result<String, ToolFailure> {
        let id = id.map(str::trim).unwrap_or_default().to_lowercase();
        if id.is_empty() {
            return Err(ToolFailure::error(
                "id is missing; give the job's id (action list shows them)",
            ));
        }
        match self.0.cron.get(&id).await {
            Ok(job) if job.agent_id == agent => Ok(id),
            _ => Err(ToolFailure::error(format!(
                "no job {id} of yours; action list shows them"
            ))),
        }
    }
}
