//! Running a workflow's phases: concurrency, the dependencies' results, failures, and
//! resuming from a checkpoint.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::helpers::{checkpoint, response, task};
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterResponse};
use switchyard_contract::ContractError;
use switchyard_core::orchestration::*;

/// Answers after a pause, counting how many calls are in flight at once.
#[derive(Default)]
struct SlowInvoker {
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    calls: Mutex<Vec<AdapterRequest>>,
    fail: Option<String>,
}

impl AdapterInvoker for SlowInvoker {
    fn invoke<'a>(
        &'a self,
        request: AdapterRequest,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<AdapterResponse>> {
        Box::pin(async move {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_in_flight.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(40)).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            self.calls.lock().unwrap().push(request.clone());
            if self.fail.as_deref() == Some(request.template_id.as_str()) {
                return Err(ContractError::AdapterTimeout {
                    datasource: request.datasource,
                    after_ms: 40,
                });
            }
            Ok(response(
                &format!("answer to {}", request.query),
                json!({ "department": format!("dept of {}", request.template_id) }),
                Value::Null,
            ))
        })
    }
}

fn requests<'a>(
    parameters: &'a Map<String, Value>,
    deadline: &'a (dyn Fn(&str) -> u64 + Sync),
) -> Requests<'a> {
    Requests {
        request_id: "r1",
        session_parameters: parameters,
        filters: Box::leak(Box::default()),
        deadline_ms: deadline,
    }
}

#[tokio::test]
async fn a_phase_runs_its_tasks_concurrently_up_to_the_limit() {
    let invoker = SlowInvoker::default();
    let store = MemoryWorkflowStore::default();
    let tasks = (1..=4)
        .map(|i| task(&format!("t{i}"), &format!("x{i}"), 0.8, &[]))
        .collect();
    let (parameters, deadline) = (Map::new(), |_: &str| 1000);
    let run = run(
        &invoker,
        &store,
        checkpoint(tasks),
        &requests(&parameters, &deadline),
        3,
        10,
    )
    .await;
    assert_eq!(invoker.calls.lock().unwrap().len(), 4);
    assert_eq!(
        invoker.most_in_flight.load(Ordering::SeqCst),
        3,
        "at most 3 at once, and 3 did overlap"
    );
    assert!(run.checkpoint.is_complete());
    assert_eq!(run.checkpoints, ["wf-1#1"]);
    assert_eq!(
        store
            .load("wf-1", 10)
            .await
            .unwrap()
            .unwrap()
            .completed_phases,
        1
    );
}

#[tokio::test]
async fn a_dependent_task_gets_its_dependencies_results_and_waits_when_they_fail() {
    let invoker = SlowInvoker::default();
    let store = MemoryWorkflowStore::default();
    let tasks = vec![
        task("t1", "first", 0.8, &[]),
        task("t2", "second", 0.8, &["t1"]),
    ];
    let mut session = Map::new();
    session.insert("limit".into(), json!(5));
    let deadline = |_: &str| 1234;
    let run = run(
        &invoker,
        &store,
        checkpoint(tasks.clone()),
        &requests(&session, &deadline),
        3,
        10,
    )
    .await;
    let calls = invoker.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2);
    let second = &calls[1];
    assert_eq!(
        second.session_parameters["department"],
        json!("dept of first")
    );
    assert_eq!(second.session_parameters["limit"], json!(5));
    assert_eq!(
        second.upstream["t1"]["content"],
        json!("answer to question t1")
    );
    assert_eq!(
        (second.deadline_ms, second.request_id.as_str()),
        (1234, "r1-t2")
    );
    assert_eq!(run.checkpoints, ["wf-1#1", "wf-1#2"]);

    // The first fails: the second is never run, and says what it waits on.
    let failing = SlowInvoker {
        fail: Some("first".into()),
        ..SlowInvoker::default()
    };
    let run = run_again(&failing, &store, checkpoint(tasks), &session, &deadline).await;
    assert_eq!(failing.calls.lock().unwrap().len(), 1);
    let states = &run.checkpoint.tasks;
    assert_eq!(
        (states[0].status, states[1].status),
        (TaskStatus::Failed, TaskStatus::Pending)
    );
    assert!(states[1]
        .error
        .as_deref()
        .unwrap()
        .contains("waits on `t1`"));
    assert_eq!(run.checkpoint.completed_phases, 0);
}

async fn run_again(
    invoker: &SlowInvoker,
    store: &MemoryWorkflowStore,
    checkpoint: Checkpoint,
    session: &Map<String, Value>,
    deadline: &(dyn Fn(&str) -> u64 + Sync),
) -> Run {
    run(
        invoker,
        store,
        checkpoint,
        &requests(session, deadline),
        3,
        10,
    )
    .await
}

#[tokio::test]
async fn a_resumed_workflow_skips_done_tasks() {
    let store = MemoryWorkflowStore::default();
    let tasks = vec![
        task("t1", "first", 0.8, &[]),
        task("t2", "second", 0.8, &["t1"]),
    ];
    let (session, deadline) = (Map::new(), |_: &str| 1000);
    let failing = SlowInvoker {
        fail: Some("second".into()),
        ..SlowInvoker::default()
    };
    let first = run_again(&failing, &store, checkpoint(tasks), &session, &deadline).await;
    assert_eq!(first.checkpoint.completed_phases, 1);
    let saved = store.load("wf-1", 10).await.unwrap().unwrap();
    let healthy = SlowInvoker::default();
    // Resumed by another request (an A2A message retried, a question asked again).
    let again = Requests {
        request_id: "r2",
        ..requests(&session, &deadline)
    };
    let resumed = run(&healthy, &store, saved, &again, 3, 10).await;
    let calls = healthy.calls.lock().unwrap().clone();
    // The task is the same operation to a remote API either time: one Idempotency-Key.
    let failed = failing.calls.lock().unwrap().clone();
    let scope = |calls: &[AdapterRequest]| {
        let second = calls.iter().find(|c| c.template_id == "second").unwrap();
        (second.request_id.clone(), second.operation().to_owned())
    };
    let (before, after) = (scope(&failed), scope(&calls));
    assert_ne!(before.0, after.0, "two requests");
    assert_eq!(before.1, after.1, "one operation");
    assert!(before.1.ends_with("wf-1/t2"), "{}", before.1);
    assert_eq!(
        calls
            .iter()
            .map(|c| c.template_id.as_str())
            .collect::<Vec<_>>(),
        ["second"]
    );
    assert_eq!(resumed.started_at_phase, 1);
    assert_eq!(resumed.checkpoint.tasks[0].attempts, 1);
    assert_eq!(resumed.checkpoint.tasks[1].attempts, 2);
    assert!(resumed.checkpoint.is_complete());
    // Expired checkpoints are not loaded.
    assert!(store.load("wf-1", 100).await.unwrap().is_none());
}
