//! The push-notification config methods of a task (`Create`/`Get`/`List`/`Delete`
//! `TaskPushNotificationConfig`): checked, then stored as the task's list (`push.rs`).

use switchboard_protocol::a2a::{
    A2aError, ListPushConfigsRequest, ListPushConfigsResponse, PushConfigRequest,
    TaskPushNotificationConfig,
};

use super::{A2aResult, A2aTasks, invalid_params, push, store_error};

impl A2aTasks {
    /// `CreateTaskPushNotificationConfig`: stores (or replaces, by id) a config of the task.
    pub async fn create_push(
        &self,
        agent: &str,
        config: TaskPushNotificationConfig,
    ) -> A2aResult<TaskPushNotificationConfig> {
        let task_id = config.task_id.clone();
        self.task_record(agent, &task_id).await?;
        let config = checked_config(config, &task_id)?;
        let _held = self.push_lock.lock().await;
        let mut configs = push::configs(self.store.as_ref(), &task_id)
            .await
            .map_err(store_error)?;
        configs.retain(|c| c.id != config.id);
        if configs.len() >= push::MAX_CONFIGS {
            return Err(invalid_params(format!(
                "task {task_id} has {} push configs, the most it may have; delete one first",
                push::MAX_CONFIGS
            )));
        }
        configs.push(config.clone());
        self.save_push(&task_id, &configs).await?;
        Ok(config)
    }

    /// `GetTaskPushNotificationConfig`.
    pub async fn get_push(
        &self,
        agent: &str,
        req: PushConfigRequest,
    ) -> A2aResult<TaskPushNotificationConfig> {
        let configs = self.configs_of(agent, &req.task_id).await?;
        configs
            .into_iter()
            .find(|c| c.id.as_deref() == Some(req.id.as_str()))
            .ok_or_else(|| no_config(&req))
    }

    /// `ListTaskPushNotificationConfigs`: all of the task's configs, on one page.
    pub async fn list_push(
        &self,
        agent: &str,
        req: ListPushConfigsRequest,
    ) -> A2aResult<ListPushConfigsResponse> {
        let configs = self.configs_of(agent, &req.task_id).await?;
        Ok(ListPushConfigsResponse {
            configs,
            next_page_token: String::new(),
        })
    }

    /// `DeleteTaskPushNotificationConfig`.
    pub async fn delete_push(&self, agent: &str, req: PushConfigRequest) -> A2aResult<()> {
        let _held = self.push_lock.lock().await;
        let mut configs = self.configs_of(agent, &req.task_id).await?;
        let before = configs.len();
        configs.retain(|c| c.id.as_deref() != Some(req.id.as_str()));
        if configs.len() == before {
            return Err(no_config(&req));
        }
        self.save_push(&req.task_id, &configs).await
    }

    /// The configs of `agent`'s task `task_id` (`TaskNotFound` for another).
    async fn configs_of(
        &self,
        agent: &str,
        task_id: &str,
    ) -> A2aResult<Vec<TaskPushNotificationConfig>> {
        self.task_record(agent, task_id).await?;
        push::configs(self.store.as_ref(), task_id)
            .await
            .map_err(store_error)
    }

    async fn save_push(
        &self,
        task_id: &str,
        configs: &[TaskPushNotificationConfig],
    ) -> A2aResult<()> {
        let op = push::save(task_id, configs).map_err(store_error)?;
        self.store
            .write_batch(vec![op])
            .await
            .map_err(store_error)?;
        Ok(())
    }
}

/// A config as stored: an `http(s)` URL, the task's id, an id (a new one when absent).
pub(super) fn checked_config(
    mut config: TaskPushNotificationConfig,
    task_id: &str,
) -> A2aResult<TaskPushNotificationConfig> {
    let url = config.url.trim();
    let parsed = reqwest::Url::parse(url).ok();
    if !parsed.is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some()) {
        return Err(invalid_params(format!(
            "push config url {url:?} is not an http or https URL: give the receiver's URL, \
             e.g. https://example.com/a2a/push"
        )));
    }
    config.url = url.to_string();
    config.task_id = task_id.to_string();
    if config.id.as_deref().is_none_or(str::is_empty) {
        config.id = Some(uuid::Uuid::new_v4().to_string());
    }
    Ok(config)
}

fn no_config(req: &PushConfigRequest) -> A2aError {
    invalid_params(format!(
        "task {} has no push config {:?}: ListTaskPushNotificationConfigs lists its configs",
        req.task_id, req.id
    ))
}
