//! A2A tasks (their JSON, written by the transport) in the workflow store: kept per caller,
//! each as one of its context's, whose id is the session's, so forgetting the session
//! forgets them.

use super::Service;
use crate::error::Result;
use crate::error::ServiceError;
use crate::orchestration::{context_key, task_key};

impl Service {
    /// Keep an A2A task (its JSON) of `owner`'s in context `context_id`, as long as a
    /// workflow's checkpoint.
    pub async fn save_task(
        &self,
        owner: &str,
        task_id: &str,
        context_id: &str,
        task: &str,
        now: i64,
    ) -> Result<()> {
        let expires_at = now + self.config.orchestration.checkpoint_ttl_seconds as i64;
        let (key, context) = (task_key(owner, task_id), context_key(owner, context_id));
        self.workflows
            .save_task(&key, &context, task, expires_at)
            .await
            .map_err(ServiceError::from)
    }

    /// `owner`'s A2A task `task_id` (JSON), unless unknown, another caller's, or expired.
    pub async fn load_task(&self, owner: &str, task_id: &str, now: i64) -> Result<Option<String>> {
        self.workflows
            .load_task(&task_key(owner, task_id), now)
            .await
            .map_err(ServiceError::from)
    }

    /// Delete `owner`'s A2A tasks in context `context_id` and their workflows'
    /// checkpoints: how many tasks there were.
    pub(super) async fn forget_tasks(&self, owner: &str, context_id: &str) -> Result<usize> {
        self.workflows
            .forget_context(&context_key(owner, context_id))
            .await
            .map_err(ServiceError::from)
    }
}
