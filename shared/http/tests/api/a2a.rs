//! A2A at `/a2a` through the Lambda's path: the card names the endpoint at the request's
//! host and lists only the caller's datasources; a task is its caller's; a finished task
//! takes no more messages. The official Python client (`a2a-sdk`) drives the protocol
//! under `serve` in `infra/scripts/chat-clients.sh`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use switchyard_adapters::respond::IntentInvoker;
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterResponse};
use switchyard_core::orchestration::MemoryWorkflowStore;
use switchyard_core::service::Service;
use switchyard_routing::session::MemorySessionStore;

use crate::setup::{api, call_as, config_with, small_router, with_key, TestApi};

/// Auth on: "k-all" may use every datasource, "k-helper" only `assistant`.
fn two_callers() -> TestApi {
    let hash = |key: &[u8]| hex::encode(Sha256::digest(key));
    api(config_with(&[
        ("SWITCHYARD__AUTH__REQUIRED", "true"),
        (
            "SWITCHYARD__AUTH__PRINCIPALS",
            "{everyone: ['*'], helper: [assistant]}",
        ),
        (
            "SWITCHYARD__AUTH__API_KEYS",
            &format!(
                "{{{}: everyone, {}: helper}}",
                hash(b"k-all"),
                hash(b"k-helper")
            ),
        ),
    ]))
}

fn send_message(text: &str, task_id: Option<&str>) -> String {
    static MESSAGES: AtomicUsize = AtomicUsize::new(0);
    let message_id = format!("m-{}", MESSAGES.fetch_add(1, Ordering::Relaxed));
    message(&message_id, text, task_id)
}

fn message(message_id: &str, text: &str, task_id: Option<&str>) -> String {
    let mut message =
        json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(id) = task_id {
        message["taskId"] = json!(id);
    }
    json!({"jsonrpc": "2.0", "id": "r-1", "method": "SendMessage", "params": {"message": message}})
        .to_string()
}

fn get_task(id: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": id}}).to_string()
}

fn rpc(api: &TestApi, body: &str, key: &str) -> Value {
    let response = call_as(api, "POST", "/a2a", body, with_key(key));
    assert_eq!(response.status, 200, "{}", response.body);
    response.body
}

#[test]
fn the_card_lists_the_callers_datasources_and_names_the_endpoint() {
    let api = two_callers();
    let skills = |key: &str| -> Vec<String> {
        let response = call_as(
            &api,
            "GET",
            "/.well-known/agent-card.json",
            "",
            with_key(key),
        );
        assert_eq!(response.status, 200, "{}", response.body);
        let interface = &response.body["supportedInterfaces"][0];
        // API Gateway's domain (the event's, with no Host header), over HTTPS; the
        // JSON-RPC binding, version 1.0.
        assert_eq!(interface["url"], "https://example.com/a2a", "{interface}");
        assert_eq!(interface["protocolBinding"], "JSONRPC");
        assert_eq!(interface["protocolVersion"], "1.0");
        response.body["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(skills("k-all"), ["assistant", "hr"]);
    assert_eq!(skills("k-helper"), ["assistant"]);
    // The older path serves the same card; an unknown caller gets none.
    let older = call_as(
        &api,
        "GET",
        "/.well-known/agent.json",
        "",
        with_key("k-all"),
    );
    assert_eq!(older.status, 200);
    let unknown = call_as(
        &api,
        "GET",
        "/.well-known/agent-card.json",
        "",
        with_key("k-nobody"),
    );
    assert_eq!(unknown.status, 401, "{}", unknown.body);
}

#[test]
fn a_task_is_its_callers_and_a_finished_one_takes_no_more_messages() {
    let api = two_callers();
    let sent = rpc(
        &api,
        &send_message("How many employees work in Engineering?", None),
        "k-all",
    );
    let task = &sent["result"]["task"];
    let id = task["id"].as_str().expect("a task id").to_owned();
    // The test catalog's `hr` has no adapter here: a failed task, finished all the same,
    // with the reason as its artifact.
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{sent}");
    assert!(
        task["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("no adapter"),
        "{sent}"
    );
    assert_eq!(sent["id"], "r-1", "the request's id is echoed");

    // The same caller finds it; another caller does not (as if it did not exist).
    let found = rpc(&api, &get_task(&id), "k-all");
    assert_eq!(found["result"]["id"], id.as_str(), "{found}");
    let hidden = rpc(&api, &get_task(&id), "k-helper");
    assert_eq!(hidden["error"]["code"], -32001, "{hidden}");
    let hidden = rpc(&api, &send_message("And in Sales?", Some(&id)), "k-helper");
    assert_eq!(hidden["error"]["code"], -32001, "{hidden}");

    // A completed task is finished: a new message goes in a new task.
    let again = rpc(&api, &send_message("And in Sales?", Some(&id)), "k-all");
    assert_eq!(again["error"]["code"], -32004, "{again}");
    assert!(
        again["error"]["message"]
            .as_str()
            .unwrap()
            .contains("without taskId"),
        "{again}"
    );
    // A question out of the restricted caller's datasources is not answered from them.
    let restricted = rpc(
        &api,
        &send_message("How many employees work in Engineering?", None),
        "k-helper",
    );
    let text = restricted.to_string();
    assert!(!text.contains("\"hr\""), "{text}");
}

#[test]
fn a_retried_message_gets_its_task_and_runs_once() {
    let api = two_callers();
    let app = switchyard_http::app(api.clone());
    let ask = |body: &str| {
        let response = crate::setup::send(&app, "POST", "/a2a", body, with_key("k-all"));
        assert_eq!(response.status, 200, "{}", response.body);
        response.body
    };
    let first = ask(&message(
        "retry-1",
        "How many employees work in Engineering?",
        None,
    ));
    let again = ask(&message(
        "retry-1",
        "How many employees work in Engineering?",
        None,
    ));
    assert_eq!(first["result"], again["result"], "the same task, as it was");
    // The session saw one turn, not two: the retry did not run the question again.
    let context = first["result"]["task"]["contextId"].as_str().unwrap();
    let next = ask(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "SendMessage", "params": {"message":
            {"messageId": "retry-2", "contextId": context, "role": "ROLE_USER",
             "parts": [{"text": "And in Sales?"}]}}})
        .to_string(),
    );
    let turns = next.to_string();
    assert!(turns.contains("\"turns\":1"), "{turns}");
    // The same id with another text is another message, refused.
    let reused = ask(&message("retry-1", "What is 2 plus 2?", None));
    assert_eq!(reused["error"]["code"], -32602, "{reused}");
}

#[test]
fn a_partial_split_answer_waits_and_the_next_message_resumes_its_workflow() {
    let api = two_callers();
    // Two things asked; `hr` has no adapter here, so one part fails: a partial answer.
    let question = "How many employees work in Engineering and what's the weather like in Paris?";
    let sent = rpc(&api, &send_message(question, None), "k-all");
    let task = &sent["result"]["task"];
    let id = task["id"].as_str().unwrap().to_owned();
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{sent}"
    );
    let answer = &task["status"]["message"]["parts"][1]["data"];
    assert_eq!(answer["status"], "partial", "{sent}");
    assert_eq!(
        answer["metadata"]["orchestration"]["workflow_id"],
        id.as_str()
    );
    // Any message to the task asks the workflow's own question again: resumed from its
    // checkpoint, not split anew; even "ok", which elsewhere only acknowledges.
    let resumed = rpc(&api, &send_message("ok", Some(&id)), "k-all");
    let task = &resumed["result"]["task"];
    assert_eq!(task["id"], id.as_str(), "{resumed}");
    let orchestration = &task["status"]["message"]["parts"][1]["data"]["metadata"]["orchestration"];
    assert!(
        orchestration["resumed_from_phase"].is_number(),
        "{orchestration}"
    );
}

#[test]
fn protocol_errors_are_answered_as_json_rpc() {
    let api = two_callers();
    let parse = rpc(&api, "{not json", "k-all");
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["id"], Value::Null);
    let unknown = rpc(
        &api,
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/everything"}).to_string(),
        "k-all",
    );
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert_eq!(unknown["id"], 9);
    let no_text = rpc(
        &api,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message":
            {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"q": 1}}]}}})
        .to_string(),
        "k-all",
    );
    assert_eq!(no_text["error"]["code"], -32602, "{no_text}");
    assert!(
        no_text["error"]["message"]
            .as_str()
            .unwrap()
            .contains("message.parts"),
        "{no_text}"
    );
    // An id is a key of the store: a long one is refused, naming the field and the bound.
    let long_id = rpc(
        &api,
        &json!({"jsonrpc": "2.0", "id": 5, "method": "SendMessage", "params": {"message":
            {"messageId": "m".repeat(129), "role": "ROLE_USER", "parts": [{"text": "What is 15% of 200?"}]}}})
        .to_string(),
        "k-all",
    );
    assert_eq!(long_id["error"]["code"], -32602, "{long_id}");
    let message = long_id["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("message.messageId") && message.contains("128"),
        "{long_id}"
    );
    let streaming = rpc(
        &api,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "SendStreamingMessage", "params": {}})
            .to_string(),
        "k-all",
    );
    assert_eq!(streaming["error"]["code"], -32004, "{streaming}");
}

/// An invoker that takes its time and counts its calls: the first attempt of a message is
/// still running when its retry arrives.
struct SlowInvoker {
    inner: IntentInvoker,
    calls: Arc<AtomicUsize>,
}

impl AdapterInvoker for SlowInvoker {
    fn invoke<'a>(
        &'a self,
        request: AdapterRequest,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<AdapterResponse>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            self.inner.invoke(request).await
        })
    }
}

/// Two router instances sharing the task store (as on AWS, one DynamoDB table): a message
/// and its retry, sent while the first attempt runs (what a client does after its own
/// timeout), run the question once; the retry is told the same task is working, and a
/// retry after the answer gets the finished task.
#[test]
fn a_message_retried_during_its_run_on_another_instance_runs_once() {
    let store = Arc::new(MemoryWorkflowStore::default());
    let calls = Arc::new(AtomicUsize::new(0));
    let instance = || {
        let config = config_with(&[]);
        let sessions = MemorySessionStore::new(config.sessions.clone());
        let router = small_router(config.clone());
        let invoker = SlowInvoker {
            inner: IntentInvoker::new(router.index().catalog.clone()),
            calls: calls.clone(),
        };
        Arc::new(
            Service::new(config, router, Arc::new(invoker), Arc::new(sessions))
                .with_workflows(store.clone()),
        )
    };
    let (first_instance, second_instance) = (instance(), instance());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message":
        {"messageId": "slow-1", "contextId": "slow", "role": "ROLE_USER",
         "parts": [{"text": "What's the weather like in Paris?"}]}}})
    .to_string();
    let sent = body.clone();
    let first =
        std::thread::spawn(move || crate::setup::call(&first_instance, "POST", "/a2a", &sent).body);
    std::thread::sleep(Duration::from_millis(500));
    let retried = crate::setup::call(&second_instance, "POST", "/a2a", &body).body;
    let first = first.join().unwrap();
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{first}");
    assert_eq!(
        retried["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{retried}"
    );
    assert_eq!(retried["result"]["task"]["id"], task["id"], "{retried}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the question ran once");

    let after = crate::setup::call(&second_instance, "POST", "/a2a", &body).body;
    assert_eq!(after["result"]["task"], first["result"]["task"], "{after}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "and not again after its answer"
    );
}

fn in_context(message_id: &str, context: &str, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message":
        {"messageId": message_id, "contextId": context, "role": "ROLE_USER",
         "parts": [{"text": text}]}}})
    .to_string()
}

/// With `sessions.store_text` off a task is kept without its question and answer: its
/// state, ids and history's messages stay (their parts left empty) and its metadata says
/// what was left out. The answer itself is given in the `SendMessage` result, and a retried
/// message is still told from another text with the same id.
#[test]
fn without_store_text_a_kept_task_holds_no_question_or_answer() {
    let api = api(config_with(&[(
        "SWITCHYARD__SESSIONS__STORE_TEXT",
        "false",
    )]));
    let question = "What's the weather like in Paris?";
    let sent = rpc(&api, &in_context("notext-1", "ctx-notext", question), "k");
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let answer = task["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .expect("the answer, in the result")
        .to_owned();
    assert!(!answer.is_empty(), "{sent}");
    let id = task["id"].as_str().unwrap();

    let kept = rpc(&api, &get_task(id), "k");
    let stored = &kept["result"];
    let text = stored.to_string();
    for said in [question, "Paris", answer.as_str()] {
        assert!(!text.contains(said), "`{said}` is kept: {text}");
    }
    assert_eq!(stored["id"], id);
    assert_eq!(stored["contextId"], "ctx-notext");
    assert_eq!(stored["status"]["state"], "TASK_STATE_COMPLETED", "{text}");
    let ids = |task: &Value| -> Vec<String> {
        let history = task["history"].as_array().cloned().unwrap_or_default();
        history.iter().map(|m| m["messageId"].to_string()).collect()
    };
    assert_eq!(ids(stored), ids(task), "the history's messages stay");
    assert_eq!(ids(stored).len(), 2, "{text}");
    assert!(stored["metadata"]["textsNotKept"].is_string(), "{text}");

    // A retry is answered with the task as kept; the same id with another text is refused.
    let again = rpc(&api, &in_context("notext-1", "ctx-notext", question), "k");
    assert_eq!(again["result"]["task"]["id"], id, "{again}");
    let reused = rpc(
        &api,
        &in_context("notext-1", "ctx-notext", "What is 2 plus 2?"),
        "k",
    );
    assert_eq!(reused["error"]["code"], -32602, "{reused}");
}

/// `DELETE /v1/sessions/{id}` forgets the A2A tasks whose context is that session (and a
/// split question's checkpoint with its task), the caller's own only: another context's
/// tasks stay, and another caller forgetting the same id leaves them.
#[test]
fn forgetting_a_session_forgets_the_a2a_tasks_of_its_context() {
    let api = two_callers();
    let send = |body: String, key: &str| rpc(&api, &body, key)["result"]["task"].clone();
    let weather = "What's the weather like in Paris?";
    let split = "How many employees work in Engineering and what's the weather like in Paris?";
    let asked = send(in_context("forget-1", "ctx-forget", weather), "k-all");
    let partial = send(in_context("forget-2", "ctx-forget", split), "k-all");
    assert_eq!(
        partial["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{partial}"
    );
    let elsewhere = send(in_context("forget-3", "ctx-kept", weather), "k-all");
    let helpers = send(in_context("forget-4", "ctx-forget", weather), "k-helper");
    let found = |task: &Value, key: &str| {
        let id = task["id"].as_str().unwrap();
        let answer = rpc(&api, &get_task(id), key);
        match answer["error"]["code"].as_i64() {
            None => true,
            Some(-32001) => false,
            Some(_) => panic!("{answer}"),
        }
    };
    let forget = |key: &str| {
        let response = call_as(&api, "DELETE", "/v1/sessions/ctx-forget", "", with_key(key));
        assert_eq!(response.status, 200, "{}", response.body);
        response.body["deleted"].clone()
    };

    assert_eq!(forget("k-helper"), true);
    assert!(
        !found(&helpers, "k-helper"),
        "the helper's own task is gone"
    );
    assert!(
        found(&asked, "k-all"),
        "another caller's are not its to forget"
    );

    assert_eq!(forget("k-all"), true);
    assert!(!found(&asked, "k-all"));
    assert!(!found(&partial, "k-all"));
    assert!(found(&elsewhere, "k-all"), "another context's task stays");
    // The split question's checkpoint went with its task: asked again under the task's id,
    // it is split anew instead of resumed.
    let body = json!({"query": split, "workflow_id": partial["id"]});
    let again = call_as(
        &api,
        "POST",
        "/v1/query",
        &body.to_string(),
        with_key("k-all"),
    );
    let report = &again.body["metadata"]["orchestration"];
    assert_eq!(report["workflow_id"], partial["id"], "{}", again.body);
    assert_eq!(report["split_by"], "rules", "not resumed: {report}");
    assert_eq!(forget("k-all"), false, "nothing left to forget");
}
