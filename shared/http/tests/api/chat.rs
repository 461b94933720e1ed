//! `POST /v1/chat/completions` without `session_id`: the earlier messages weigh on the
//! routing as the conversation's turns, but only the last one is executed, and nothing of
//! the request is kept in the session store (so concurrent chats cannot meet there).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchyard_adapters::respond::{find, respond_intent};
use switchyard_catalog::auth::Access;
use switchyard_catalog::template::Catalog;
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::AdapterResponse;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest};
use switchyard_contract::ContractError;
use switchyard_core::config::Config;
use switchyard_core::service::{Question, Service};
use switchyard_routing::session::{SessionStore, Turn};

use crate::setup::{call, small_router, ApiResponse};

/// An adapter that answers every template as an intent (nothing has side effects here)
/// and keeps each request, so a test counts the executions. With `meet`, each call waits
/// (up to 10 s) until two calls have arrived: two requests are then in flight together.
struct CountingInvoker {
    catalog: Catalog,
    calls: Mutex<Vec<AdapterRequest>>,
    arrived: Condvar,
    meet: bool,
}

impl CountingInvoker {
    fn new(catalog: Catalog, meet: bool) -> Self {
        CountingInvoker {
            catalog,
            calls: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            meet,
        }
    }

    fn calls(&self) -> Vec<AdapterRequest> {
        self.calls.lock().unwrap().clone()
    }
}

impl AdapterInvoker for CountingInvoker {
    fn invoke<'a>(
        &'a self,
        request: AdapterRequest,
    ) -> BoxFuture<'a, Result<AdapterResponse, ContractError>> {
        Box::pin(async move {
            let (datasource, template) = find(&self.catalog, &request)?;
            let response = respond_intent(datasource, template, &request).await;
            let mut calls = self.calls.lock().unwrap();
            calls.push(request);
            self.arrived.notify_all();
            if self.meet {
                // Each test request runs on its own thread's runtime: blocking it is fine.
                let _ = self
                    .arrived
                    .wait_timeout_while(calls, Duration::from_secs(10), |c| c.len() < 2)
                    .unwrap();
            }
            Ok(response)
        })
    }
}

/// A session store that keeps what it is given and counts every call.
#[derive(Default)]
struct RecordingSessions {
    sessions: Mutex<HashMap<String, Vec<Turn>>>,
    calls: Mutex<Vec<String>>,
}

impl RecordingSessions {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn held(&self) -> usize {
        self.sessions.lock().unwrap().len()
    }
}

impl SessionStore for RecordingSessions {
    fn recent<'a>(
        &'a self,
        id: &'a str,
        _: i64,
    ) -> BoxFuture<'a, Result<Vec<Turn>, ContractError>> {
        Box::pin(async move {
            self.calls.lock().unwrap().push(format!("recent {id}"));
            Ok(self
                .sessions
                .lock()
                .unwrap()
                .get(id)
                .cloned()
                .unwrap_or_default())
        })
    }
    fn append<'a>(&'a self, id: &'a str, turn: Turn) -> BoxFuture<'a, Result<(), ContractError>> {
        Box::pin(async move {
            self.calls.lock().unwrap().push(format!("append {id}"));
            self.sessions
                .lock()
                .unwrap()
                .entry(id.to_owned())
                .or_default()
                .push(turn);
            Ok(())
        })
    }
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, ContractError>> {
        Box::pin(async move {
            self.calls.lock().unwrap().push(format!("delete {id}"));
            Ok(self.sessions.lock().unwrap().remove(id).is_some())
        })
    }
}

struct Chat {
    api: Arc<Service>,
    invoker: Arc<CountingInvoker>,
    sessions: Arc<RecordingSessions>,
}

fn chat_api(meet: bool) -> Chat {
    let config = Config::default();
    let router = small_router(config.clone());
    let invoker = Arc::new(CountingInvoker::new(router.index().catalog.clone(), meet));
    let sessions = Arc::new(RecordingSessions::default());
    let api = Arc::new(Service::new(
        config,
        router,
        invoker.clone(),
        sessions.clone(),
    ));
    Chat {
        api,
        invoker,
        sessions,
    }
}

/// A chat's messages: the earlier questions each followed by an assistant's answer, then
/// `last`.
fn messages(earlier: &[&str], last: &str) -> Value {
    let mut messages = Vec::new();
    for (i, question) in earlier.iter().enumerate() {
        messages.push(json!({"role": "user", "content": question}));
        messages.push(json!({"role": "assistant", "content": format!("Answer {i}.")}));
    }
    messages.push(json!({"role": "user", "content": last}));
    Value::Array(messages)
}

fn ask(api: &Arc<Service>, earlier: &[&str], last: &str) -> ApiResponse {
    let body = json!({"model": "switchyard", "messages": messages(earlier, last)});
    call(api, "POST", "/v1/chat/completions", &body.to_string())
}

fn template(response: &ApiResponse) -> String {
    assert_eq!(response.status, 200, "{}", response.body);
    response.body["switchyard"]["metadata"]["template_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Four earlier questions and the last one: one execution, the last question's. A
/// template with side effects (a booking, a transfer) would otherwise fire again on every
/// later message.
#[test]
fn only_the_last_message_is_executed() {
    let chat = chat_api(false);
    let earlier = [
        "Remind me to call mom at five",
        "What's the weather like in Paris?",
        "Set a reminder to buy milk",
        "How many employees work in Engineering?",
    ];
    let response = ask(&chat.api, &earlier, "Will it rain tomorrow in Berlin?");
    assert_eq!(template(&response), "weather", "{}", response.body);
    let calls = chat.invoker.calls();
    let executed: Vec<(&str, &str)> = calls
        .iter()
        .map(|c| (c.template_id.as_str(), c.query.as_str()))
        .collect();
    assert_eq!(
        executed,
        [("weather", "Will it rain tomorrow in Berlin?")],
        "only the last message runs on an adapter"
    );
    let session = &response.body["switchyard"]["metadata"]["session"];
    assert_eq!(
        session["turns"], 4,
        "the earlier messages were its turns: {session}"
    );
    assert_eq!(
        chat.sessions.calls(),
        Vec::<String>::new(),
        "no session store call"
    );
}

/// Two chats of the same caller (no auth) at the same time, with the same last message
/// and different histories: each answer follows its own history, and the session store
/// is neither read nor written, so it holds nothing afterwards.
#[test]
fn concurrent_chats_without_a_session_do_not_share_turns() {
    let chat = chat_api(true);
    let hr = [
        "How many employees work in Engineering?",
        "Headcount of the Sales department",
        "How many employees work in Sales?",
    ];
    let weather = [
        "What's the weather like in Paris?",
        "Will it rain tomorrow?",
        "What's the weather like in Rome?",
    ];
    let follow_up = "And what about Berlin?";
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| ask(&chat.api, &hr, follow_up));
        let b = scope.spawn(|| ask(&chat.api, &weather, follow_up));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(chat.invoker.calls().len(), 2, "one execution per request");
    assert_eq!(template(&b), "weather", "{}", b.body);
    assert_eq!(template(&a), "employees_by_department", "{}", a.body);
    // Alone, the follow-up routes to `top_earners`: the histories did the routing above.
    for answer in [&a, &b] {
        let context = &answer.body["switchyard"]["metadata"]["session"]["context"];
        assert_eq!(context["turns"], 3, "{context}");
        assert_eq!(
            context["topic_words"], 0,
            "the caller's topics, shared by both chats, are neither read nor written: {context}"
        );
    }
    assert_eq!(
        chat.sessions.calls(),
        Vec::<String>::new(),
        "no session store call"
    );
    assert_eq!(chat.sessions.held(), 0);
}

/// The earlier messages still carry the conversation without running: "And in Sales?"
/// follows the headcount question, and an answer to a missing parameter lands on the
/// template that asked for it (the earlier turn's parameters are read, not executed).
#[test]
fn follow_ups_route_in_the_chat_context() {
    let chat = chat_api(false);
    let response = ask(
        &chat.api,
        &["How many employees work in Engineering?"],
        "And in Sales?",
    );
    assert_eq!(template(&response), "employees_by_department");
    let last = chat.invoker.calls().pop().unwrap();
    assert_eq!(last.query, "And in Sales?");
    // "Set a reminder" leaves out the task: its turn waits for it, unexecuted.
    let response = ask(&chat.api, &["Set a reminder"], "water the plants");
    let session = &response.body["switchyard"]["metadata"]["session"];
    assert_eq!(template(&response), "set_reminder", "{session}");
    assert_eq!(session["context"]["used"], "pending_parameter", "{session}");
    assert_eq!(chat.invoker.calls().len(), 2, "one execution per request");
}

/// Earlier questions given by the caller are the conversation: a session beside them
/// would be a second one, so the service refuses it, naming the field.
#[test]
fn earlier_questions_and_a_session_are_refused_together() {
    let chat = chat_api(false);
    let earlier = [Question {
        query: "Set a reminder".into(),
        ..Question::default()
    }];
    let question = Question {
        query: "water the plants".into(),
        session_id: Some("s1".into()),
        ..Question::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let refused = runtime
        .block_on(chat.api.query_after(&earlier, &question, &Access::All))
        .unwrap_err();
    assert!(refused.to_string().starts_with("session_id"), "{refused}");
    assert!(chat.invoker.calls().is_empty());
    assert!(chat.sessions.calls().is_empty());
}
