//! `cron.add`, `cron.list`, `cron.remove`, `cron.run` (SPEC §9.3). Validation, storage and
//! firing are the engine's (`switchboard_core::cron`); this adapter decodes and encodes.

use std::sync::Arc;

use switchboard_core::Engine;
use switchboard_protocol::cron::{CronAddParams, CronAddResult, CronJobIdParams};

use super::{MethodResult, core_err, to_value};

pub async fn add(engine: &Engine, p: CronAddParams) -> MethodResult {
    let job = engine.cron_add(p).await.map_err(core_err)?;
    to_value(CronAddResult { ok: true, job })
}

pub async fn list(engine: &Engine) -> MethodResult {
    to_value(engine.cron_list().await.map_err(core_err)?)
}

pub async fn remove(engine: &Engine, p: CronJobIdParams) -> MethodResult {
    to_value(engine.cron_remove(&p.id).await.map_err(core_err)?)
}

pub async fn run(engine: &Arc<Engine>, p: CronJobIdParams) -> MethodResult {
    to_value(engine.cron_run(&p.id).await.map_err(core_err)?)
}
