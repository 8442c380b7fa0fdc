//! `cron.add`, `cron.get`, `cron.list`, `cron.status`, `cron.update`, `cron.remove`, `cron.run`,
//! `cron.runs` (SPEC §9.3):
//! delegations to the cron component.

use switchboard_core::Engine;
use switchboard_protocol::cron::{
    CronAddParams, CronAddResult, CronJobIdParams, CronListParams, CronRunsParams,
    CronUpdateParams, DeliveryPreview,
};

use super::{MethodResult, answer};

pub async fn add(engine: &Engine, p: CronAddParams) -> MethodResult {
    answer(engine.cron().add(p).await.map(|job| CronAddResult {
        delivery_preview: DeliveryPreview::of(job.deliver),
        job,
    }))
}

pub async fn get(engine: &Engine, p: CronJobIdParams) -> MethodResult {
    answer(engine.cron().get(&p.id).await)
}

pub async fn list(engine: &Engine, p: CronListParams) -> MethodResult {
    answer(engine.cron().list(p).await)
}

pub async fn status(engine: &Engine) -> MethodResult {
    answer(engine.cron().status().await)
}

pub async fn remove(engine: &Engine, p: CronJobIdParams) -> MethodResult {
    answer(engine.cron().remove(&p.id).await)
}

pub async fn run(engine: &Engine, p: CronJobIdParams) -> MethodResult {
    answer(engine.cron().run(&p.id).await)
}

pub async fn runs(engine: &Engine, p: CronRunsParams) -> MethodResult {
    answer(engine.cron().runs(p).await)
}

pub async fn update(engine: &Engine, p: CronUpdateParams) -> MethodResult {
    answer(engine.cron().update(p).await)
}
