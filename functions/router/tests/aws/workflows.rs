//! Split questions checkpointed in the workflow table: a failed phase resumed without
//! re-running the phases before it, checkpoints without the question's text, expired or
//! damaged items, and the router's own workflow table.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;
use switchyard_adapters::LocalAdapters;
use switchyard_aws::index::IndexPublishing;
use switchyard_aws::DynamoWorkflowStore;
use switchyard_catalog::auth::Access;
use switchyard_catalog::clock::unix_now;
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterResponse};
use switchyard_contract::ContractError;
use switchyard_core::config::Config;
use switchyard_core::orchestration::{Checkpoint, TaskState, TaskStatus, WorkflowStore};
use switchyard_core::service::{Answer, Question, Service};
use switchyard_core::ServiceError;
use switchyard_index::index::Index;
use switchyard_router::{app, cold_start, Settings};
use switchyard_routing::router::Router;
use switchyard_routing::session::MemorySessionStore;
use switchyard_s3::S3IndexStore;

use crate::setup::{
    clients, create_bucket, create_table, demo_index_bytes, embedder, endpoint, query, root, sdk,
    unique,
};

/// The demo catalog's adapters in this process, counting calls by template and failing
/// the first call of one template as a transport failure would.
struct FlakyInvoker {
    adapters: LocalAdapters,
    fail_first_call_of: String,
    calls: Arc<Mutex<HashMap<String, u32>>>,
}

impl AdapterInvoker for FlakyInvoker {
    fn invoke<'a>(
        &'a self,
        request: AdapterRequest,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<AdapterResponse>> {
        Box::pin(async move {
            let call = {
                let mut calls = self.calls.lock().unwrap();
                let count = calls.entry(request.template_id.clone()).or_default();
                *count += 1;
                *count
            };
            if request.template_id == self.fail_first_call_of && call == 1 {
                return Err(ContractError::AdapterFailed {
                    datasource: request.datasource,
                    message: "injected failure of the first call".into(),
                    source: None,
                });
            }
            self.adapters.invoke(request).await
        })
    }
}

fn task<'a>(answer: &'a Answer, id: &str) -> &'a TaskState {
    let orchestrated = answer.orchestration.as_ref().expect("a split question");
    orchestrated
        .run
        .checkpoint
        .tasks
        .iter()
        .find(|t| t.task.id == id)
        .unwrap_or_else(|| panic!("no task `{id}`"))
}

/// The demo catalog's service whose `ev` count fails its first call, checkpointing in
/// `store`, counting calls per template in `calls`.
async fn flaky_service(
    config: Config,
    store: Arc<DynamoWorkflowStore>,
    calls: Arc<Mutex<HashMap<String, u32>>>,
) -> Service {
    let index = Index::from_bytes(demo_index_bytes(), "demo index").unwrap();
    let templates = root().join("templates/demo");
    let adapters = LocalAdapters::open(index.catalog.clone(), Some(&templates))
        .await
        .unwrap();
    let invoker = FlakyInvoker {
        adapters,
        fail_first_call_of: "vehicles_count_by_make_in_county".into(),
        calls,
    };
    let sessions = MemorySessionStore::new(config.sessions.clone());
    let router = Router::new(index, config.router(), embedder(), "demo index").unwrap();
    Service::new(config, router, Arc::new(invoker), Arc::new(sessions))
        .with_workflows(store as Arc<dyn WorkflowStore>)
}

#[tokio::test]
async fn a_workflow_runs_in_one_request_at_a_time() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "workflow_id").await;
    let store = Arc::new(DynamoWorkflowStore::new(client.clone(), &table));

    // The lease items on the table: one holder at a time, released by its token only,
    // taken over once lapsed.
    assert!(store.claim("l#lease", "a", 100, 130).await.unwrap());
    assert!(!store.claim("l#lease", "b", 110, 140).await.unwrap());
    store.release("l#lease", "b").await.unwrap();
    assert!(!store.claim("l#lease", "b", 111, 141).await.unwrap());
    assert!(
        store.claim("l#lease", "b", 131, 161).await.unwrap(),
        "lapsed"
    );
    store.release("l#lease", "b").await.unwrap();
    assert!(store.claim("l#lease", "c", 132, 162).await.unwrap());

    let calls = Arc::new(Mutex::new(HashMap::new()));
    let service = flaky_service(Config::default(), store.clone(), calls.clone()).await;
    let workflow_id = unique("wf-lease");
    let question = Question {
        query: TWO_PART_QUESTION.into(),
        workflow_id: Some(workflow_id.clone()),
        ..Question::default()
    };
    // Held by another request (one caller: the lease key is the id's): refused at once,
    // naming the workflow, nothing run.
    let now = unix_now();
    let lease = format!("{workflow_id}#lease");
    assert!(store.claim(&lease, "other", now, now + 30).await.unwrap());
    match service.query(&question, &Access::All).await {
        Err(ServiceError::WorkflowRunning {
            workflow_id: id, ..
        }) => assert_eq!(id, workflow_id),
        other => panic!(
            "expected workflow_running, got {:?}",
            other.map(|a| a.request_id)
        ),
    }
    assert!(calls.lock().unwrap().is_empty(), "nothing ran");
    store.release(&lease, "other").await.unwrap();

    // Two requests at once: one runs, the other is told to retry; then the retry resumes.
    let (first, second) = tokio::join!(
        service.query(&question, &Access::All),
        service.query(&question, &Access::All)
    );
    let refused = [&first, &second]
        .iter()
        .filter(|r| matches!(r, Err(ServiceError::WorkflowRunning { .. })))
        .count();
    assert_eq!(refused, 1, "exactly one of two concurrent requests runs");
    assert_eq!(calls.lock().unwrap()["employees_top_paid_in_department"], 1);
    let retried = service.query(&question, &Access::All).await.unwrap();
    let run = &retried.orchestration.as_ref().unwrap().run;
    assert_eq!(
        run.started_at_phase, 1,
        "the lease was released: the retry resumes"
    );
    assert_eq!(calls.lock().unwrap()["employees_top_paid_in_department"], 1);
}

#[tokio::test]
async fn without_store_text_a_checkpoint_holds_no_question_text_and_still_resumes() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "workflow_id").await;
    let store = Arc::new(DynamoWorkflowStore::new(client.clone(), &table));
    let calls = Arc::new(Mutex::new(HashMap::new()));
    let mut config = Config::default();
    config.sessions.store_text = false;
    let service = flaky_service(config, store, calls.clone()).await;
    let workflow_id = unique("wf-notext");
    let question = Question {
        query: TWO_PART_QUESTION.into(),
        workflow_id: Some(workflow_id.clone()),
        ..Question::default()
    };
    let first = service.query(&question, &Access::All).await.unwrap();
    assert_eq!(task(&first, "t2").status, TaskStatus::Failed);

    let item = client
        .get_item()
        .table_name(&table)
        .key("workflow_id", AttributeValue::S(workflow_id.clone()))
        .send()
        .await
        .unwrap()
        .item
        .expect("the checkpoint item");
    let stored = format!("{item:?}");
    for words in ["highest paid", "Teslas", "King County"] {
        assert!(!stored.contains(words), "`{words}` is stored: {stored}");
    }

    let resumed = service.query(&question, &Access::All).await.unwrap();
    let (t1, t2) = (task(&resumed, "t1"), task(&resumed, "t2"));
    assert_eq!((t1.status, t2.status), (TaskStatus::Ok, TaskStatus::Ok));
    assert_eq!(
        (t1.attempts, t2.attempts),
        (1, 2),
        "phase one is not run again"
    );
    assert_eq!(
        t2.task.question, "count the Teslas registered in King County",
        "the task's text comes back from the question"
    );
    let calls = calls.lock().unwrap();
    assert_eq!(calls["employees_top_paid_in_department"], 1);
}

const TWO_PART_QUESTION: &str =
    "Find the five highest paid people in Sales, then count the Teslas registered in King County";

#[tokio::test]
async fn a_failed_phase_resumes_from_its_checkpoint_without_rerunning_phase_one() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "workflow_id").await;
    let store = Arc::new(DynamoWorkflowStore::new(client.clone(), &table));
    let calls = Arc::new(Mutex::new(HashMap::new()));
    let service = flaky_service(Config::default(), store.clone(), calls.clone()).await;
    let calls_of = |template: &str| calls.lock().unwrap().get(template).copied().unwrap_or(0);

    let workflow_id = unique("wf-test");
    let question = Question {
        query: TWO_PART_QUESTION.into(),
        workflow_id: Some(workflow_id.clone()),
        ..Question::default()
    };

    // First run: phase 1 (t1, hr) answers, phase 2 (t2, ev) fails.
    let answer = service.query(&question, &Access::All).await.unwrap();
    let (t1, t2) = (task(&answer, "t1"), task(&answer, "t2"));
    assert_eq!(
        (t1.task.datasource.as_str(), t1.task.template_id.as_str()),
        ("hr", "employees_top_paid_in_department")
    );
    assert_eq!(
        (t2.task.datasource.as_str(), t2.task.template_id.as_str()),
        ("ev", "vehicles_count_by_make_in_county")
    );
    assert_eq!(t1.status, TaskStatus::Ok, "{:?}", t1.error);
    assert_eq!(t2.status, TaskStatus::Failed);
    assert!(
        t2.error
            .as_deref()
            .unwrap_or("")
            .contains("injected failure"),
        "{:?}",
        t2.error
    );
    let run = &answer.orchestration.as_ref().unwrap().run;
    assert_eq!(run.started_at_phase, 0);
    assert_eq!(run.checkpoint.completed_phases, 1);
    assert_eq!(run.checkpoint_error, None);
    assert_eq!(
        run.checkpoints,
        vec![format!("{workflow_id}#1"), format!("{workflow_id}#2")]
    );

    // The checkpoint is in the table, as the store reads it back.
    let now = unix_now();
    let stored = store
        .load(&workflow_id, now)
        .await
        .unwrap()
        .expect("the checkpoint item");
    assert_eq!(stored.workflow_id, workflow_id);
    assert_eq!(stored.question, TWO_PART_QUESTION);
    assert_eq!(stored.completed_phases, 1);
    assert_eq!(stored.phases, run.checkpoint.phases);
    let statuses: Vec<_> = stored.tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, vec![TaskStatus::Ok, TaskStatus::Failed]);
    assert!(stored.expires_at > now, "{} > {now}", stored.expires_at);
    let item = client
        .get_item()
        .table_name(&table)
        .key("workflow_id", AttributeValue::S(workflow_id.clone()))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    assert_eq!(
        item["expires_at"].as_n().unwrap(),
        &stored.expires_at.to_string()
    );
    assert_eq!(
        item["updated_at"].as_n().unwrap(),
        &stored.updated_at.to_string()
    );

    // The retry resumes at phase 2: t1 is not run again, t2 is and answers.
    let answer = service.query(&question, &Access::All).await.unwrap();
    assert_eq!(calls_of("employees_top_paid_in_department"), 1);
    assert_eq!(calls_of("vehicles_count_by_make_in_county"), 2);
    let (t1, t2) = (task(&answer, "t1"), task(&answer, "t2"));
    assert_eq!(t1.status, TaskStatus::Ok);
    assert_eq!(t2.status, TaskStatus::Ok, "{:?}", t2.error);
    assert_eq!((t1.attempts, t2.attempts), (1, 2));
    let orchestrated = answer.orchestration.as_ref().unwrap();
    assert!(
        orchestrated.decomposition.is_none(),
        "a resumed workflow is not decomposed again"
    );
    assert_eq!(orchestrated.run.started_at_phase, 1);
    assert_eq!(orchestrated.run.checkpoint.completed_phases, 2);
    assert_eq!(
        orchestrated.run.checkpoints,
        vec![format!("{workflow_id}#2")]
    );
    let stored = store.load(&workflow_id, unix_now()).await.unwrap().unwrap();
    assert!(stored.is_complete());

    // The workflow belongs to its question: another one under its id is refused.
    let other = Question {
        query: "How many employees work in Engineering?".into(),
        workflow_id: Some(workflow_id.clone()),
        ..Question::default()
    };
    let error = match service.query(&other, &Access::All).await {
        Ok(_) => panic!("a workflow of another question must not resume"),
        Err(e) => e,
    };
    assert!(
        matches!(&error, ServiceError::InvalidRequest { field, .. } if field == "workflow_id"),
        "{error}"
    );
    assert!(error.to_string().contains("workflow_id"), "{error}");
    assert_eq!(
        calls_of("employees_count_by_department"),
        0,
        "nothing ran for the refused question"
    );
    // Workflow ids are the caller's, like session ids: someone else asking the same
    // question under the same id runs a workflow of their own, and neither sees the
    // other's results.
    let stranger = Question {
        owner: "sub:someone-else".into(),
        ..question.clone()
    };
    let theirs = match service.query(&stranger, &Access::All).await {
        Ok(answer) => answer,
        Err(e) => panic!("another caller's workflow of the same id must run as its own: {e}"),
    };
    let theirs = theirs.orchestration.expect("their question is split too");
    assert_eq!(
        theirs.run.started_at_phase, 0,
        "nothing of ours was resumed"
    );
    assert_eq!(
        calls_of("employees_top_paid_in_department"),
        2,
        "their workflow ran its own phases"
    );
    let ours = store.load(&workflow_id, unix_now()).await.unwrap().unwrap();
    assert_eq!(ours, stored, "our checkpoint is untouched");
    let scoped = switchyard_catalog::auth::scoped("sub:someone-else", &workflow_id);
    let kept = store.load(&scoped, unix_now()).await.unwrap().unwrap();
    assert_eq!(kept.owner, "sub:someone-else");
}

/// An HTTP template without `response_template` answers with the whole body (up to its
/// 1 MiB cap): the checkpoint of its phase is still saved (DynamoDB refuses items over
/// 400 KB), its answer cut, and read back; the retry does not run the phase again.
#[tokio::test]
async fn a_checkpoint_with_a_one_mib_answer_is_saved_and_read_back() {
    use switchyard_catalog::bounded::CUT_MARKER;
    use switchyard_contract::adapter::AdapterOutcome;
    use switchyard_core::orchestration::Task;
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "workflow_id").await;
    let store = DynamoWorkflowStore::new(client.clone(), &table);
    let now = unix_now();
    let body = "é漢🚀".repeat((1 << 20) / 9 + 1);
    assert!(body.len() > 1 << 20);
    let mut checkpoint = checkpoint("wf-big", now, now + 3600);
    checkpoint.tasks = vec![TaskState {
        task: Task {
            id: "t1".into(),
            question: "Find the five highest paid people in Sales".into(),
            datasource: "web".into(),
            template_id: "raw_body".into(),
            confidence: 0.9,
            depends_on: Vec::new(),
        },
        status: TaskStatus::Ok,
        response: Some(AdapterResponse {
            outcome: AdapterOutcome::Ok,
            content: body.clone(),
            data: json!({ "body": body }),
            parameters: serde_json::Map::new(),
            missing: Vec::new(),
            execution_time_ms: 1.0,
        }),
        error: None,
        adapter_ms: 1.0,
        attempts: 1,
    }];
    checkpoint.phases = vec![vec![0]];
    checkpoint.completed_phases = 1;
    store
        .save(&checkpoint.for_storage())
        .await
        .expect("PutItem of the checkpoint");
    let stored = store
        .load("wf-big", now)
        .await
        .unwrap()
        .expect("the checkpoint item");
    assert_eq!(stored.completed_phases, 1, "the phase is not run again");
    let response = stored.tasks[0].response.as_ref().unwrap();
    let kept = response.content.strip_suffix(CUT_MARKER).unwrap();
    assert!(body.starts_with(kept) && !kept.is_empty());
    assert_eq!(response.data, serde_json::Value::Null);
}

/// A context's list of tasks stays bounded: past `MAX_CONTEXT_TASKS` the oldest tasks are
/// deleted with their checkpoints, a task saved again is listed once, and forgetting the
/// context forgets what is left.
#[tokio::test]
async fn a_context_lists_its_newest_tasks_and_deletes_the_oldest() {
    use switchyard_core::orchestration::{context_key, task_key, MAX_CONTEXT_TASKS};
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "workflow_id").await;
    let store = DynamoWorkflowStore::new(client.clone(), &table);
    let now = unix_now();
    let context = context_key("sub:ann", "c1");
    let key = |n: usize| task_key("sub:ann", &format!("t{n}"));
    let mut first = checkpoint("t1", now, now + 3600);
    first.owner = "sub:ann".into();
    store.save(&first).await.unwrap();
    for n in 0..MAX_CONTEXT_TASKS + 3 {
        store
            .save_task(&key(n), &context, "{}", now + 3600)
            .await
            .unwrap();
    }
    store
        .save_task(&key(0), &context, "{}", now + 3600)
        .await
        .unwrap();
    assert!(
        store.load_task(&key(0), now).await.unwrap().is_some(),
        "saved again"
    );
    for n in 1..=3 {
        assert!(
            store.load_task(&key(n), now).await.unwrap().is_none(),
            "t{n}"
        );
    }
    assert!(
        store.load(&first.key(), now).await.unwrap().is_none(),
        "its checkpoint"
    );
    let last = key(MAX_CONTEXT_TASKS + 2);
    assert!(store.load_task(&last, now).await.unwrap().is_some());
    let forgotten = store.forget_context(&context).await.unwrap();
    assert_eq!(forgotten, MAX_CONTEXT_TASKS);
    assert!(store.load_task(&last, now).await.unwrap().is_none());
}

fn checkpoint(workflow_id: &str, updated_at: i64, expires_at: i64) -> Checkpoint {
    Checkpoint {
        workflow_id: workflow_id.into(),
        question: TWO_PART_QUESTION.into(),
        owner: String::new(),
        text_kept: true,
        task_spans: Vec::new(),
        tasks: Vec::new(),
        phases: Vec::new(),
        completed_phases: 0,
        updated_at,
        expires_at,
    }
}

#[tokio::test]
async fn expired_or_unknown_workflows_are_not_loaded() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let client = aws_sdk_dynamodb::Client::new(&sdk(&moto).await);
    let table = create_table(&client, "workflow_id").await;
    let store = DynamoWorkflowStore::new(client.clone(), &table);
    let now = unix_now();

    // Expired: DynamoDB may keep the item for days; the store does not return it.
    store
        .save(&checkpoint("wf-old", now - 7200, now - 3600))
        .await
        .unwrap();
    assert_eq!(store.load("wf-old", now).await.unwrap(), None);
    let kept = store.load("wf-old", now - 3601).await.unwrap();
    assert_eq!(kept, Some(checkpoint("wf-old", now - 7200, now - 3600)));
    assert_eq!(store.load("wf-old", now - 3600).await.unwrap(), None);
    assert_eq!(store.load("wf-unknown", now).await.unwrap(), None);

    // A damaged item is an error naming the table and the workflow, not a panic.
    client
        .put_item()
        .table_name(&table)
        .item("workflow_id", AttributeValue::S("wf-corrupt".into()))
        .item("checkpoint", AttributeValue::S("{not json".into()))
        .item("expires_at", AttributeValue::N((now + 3600).to_string()))
        .send()
        .await
        .unwrap();
    match store.load("wf-corrupt", now).await {
        Err(ContractError::Store { store, message, .. }) => {
            assert_eq!(store, format!("workflow table `{table}`"));
            assert!(message.contains("`wf-corrupt`"), "{message}");
        }
        other => panic!("a store error, got {other:?}"),
    }

    // A table that cannot be reached: errors name it, both ways.
    let nowhere = aws_sdk_dynamodb::config::Builder::from(&sdk("http://127.0.0.1:9").await)
        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
        .build();
    let down = DynamoWorkflowStore::new(aws_sdk_dynamodb::Client::from_conf(nowhere), "workflows");
    for error in [
        down.load("wf-1", now).await.unwrap_err(),
        down.save(&checkpoint("wf-1", now, now + 60))
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(&error, ContractError::Store { store, .. } if store == "workflow table `workflows`"),
            "{error}"
        );
        // The cause is kept, not flattened into the message: the AWS edge's error names
        // the call, and under it is the SDK's own error.
        let edge = std::error::Error::source(&error)
            .and_then(|e| e.downcast_ref::<switchyard_aws::AwsError>())
            .unwrap_or_else(|| panic!("no AwsError under {error:?}"));
        assert!(
            matches!(edge, switchyard_aws::AwsError::Store { operation, .. } if ["GetItem", "PutItem"].contains(operation)),
            "{edge:?}"
        );
        assert!(std::error::Error::source(edge).is_some(), "{edge:?}");
    }
}

#[tokio::test]
async fn the_router_checkpoints_split_questions_in_its_workflow_table() {
    let moto = endpoint("SWITCHYARD_TEST_MOTO_URL");
    let clients = clients(&moto, &moto).await;
    let bucket = create_bucket(&clients.s3).await;
    let table = create_table(&clients.dynamodb, "workflow_id").await;
    S3IndexStore::new(clients.s3.clone(), &bucket, "indexes")
        .push(demo_index_bytes())
        .await
        .unwrap();
    let store = DynamoWorkflowStore::new(clients.dynamodb.clone(), &table);
    let variables = HashMap::from([
        ("SWITCHYARD_INDEX_BUCKET", bucket.clone()),
        ("SWITCHYARD_WORKFLOW_TABLE", table.clone()),
    ]);
    let settings = Settings::from_env(|name| variables.get(name).cloned()).unwrap();
    assert_eq!(settings.workflow_table.as_deref(), Some(table.as_str()));
    // No adapter function: every task fails, and each phase is still checkpointed.
    let (service, _) = cold_start(&settings, Config::default(), clients, |_| None)
        .await
        .unwrap();
    let api = app(service);
    let workflow_id = unique("wf-router");
    let (status, body) = query(
        &api,
        json!({"query": TWO_PART_QUESTION, "workflow_id": workflow_id}),
    )
    .await;
    assert_eq!(status, 502, "{body}");
    let report = &body["metadata"]["orchestration"];
    assert_eq!(report["workflow_id"], workflow_id.as_str(), "{body}");
    assert_eq!(
        report["checkpoints"],
        json!([format!("{workflow_id}#1"), format!("{workflow_id}#2")]),
        "{body}"
    );
    assert!(report.get("checkpoint_error").is_none(), "{body}");
    let stored = store
        .load(&workflow_id, unix_now())
        .await
        .unwrap()
        .expect("the checkpoint item");
    assert_eq!(stored.question, TWO_PART_QUESTION);
    assert_eq!(stored.completed_phases, 0);
}
