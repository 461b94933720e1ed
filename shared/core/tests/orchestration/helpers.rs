//! Shared helpers: the default configuration and cues, tasks and their answers, and a
//! checkpoint of tasks.

use serde_json::Value;

use switchyard_contract::adapter::{AdapterOutcome, AdapterResponse};
use switchyard_core::config::{Config, OrchestrationConfig};
use switchyard_core::orchestration::{phases, Checkpoint, Cues, Task, TaskState, TaskStatus};

pub(crate) fn config() -> OrchestrationConfig {
    Config::default().orchestration
}

pub(crate) fn cues() -> Cues {
    let c = config();
    Cues::new(&c.parallel_cues, &c.sequential_cues)
}

pub(crate) fn response(content: &str, parameters: Value, data: Value) -> AdapterResponse {
    AdapterResponse {
        outcome: AdapterOutcome::Ok,
        content: content.into(),
        data,
        parameters: parameters.as_object().cloned().unwrap_or_default(),
        missing: Vec::new(),
        execution_time_ms: 1.0,
    }
}

pub(crate) fn task(id: &str, template: &str, confidence: f32, depends_on: &[&str]) -> Task {
    Task {
        id: id.into(),
        question: format!("question {id}"),
        datasource: "d".into(),
        template_id: template.into(),
        confidence,
        depends_on: depends_on.iter().map(|d| d.to_string()).collect(),
    }
}

pub(crate) fn done(task: Task, response: AdapterResponse) -> TaskState {
    TaskState {
        task,
        status: TaskStatus::of(&response),
        response: Some(response),
        error: None,
        adapter_ms: 1.0,
        attempts: 1,
    }
}

pub(crate) fn checkpoint(tasks: Vec<Task>) -> Checkpoint {
    let phases = phases(&tasks).unwrap();
    Checkpoint::new("wf-1".into(), "q".into(), tasks, phases, 0, 100)
}
