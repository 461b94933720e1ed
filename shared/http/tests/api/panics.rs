//! A request whose handling panics (failure injection: an adapter that panics) is answered
//! 500 with the API's JSON error, counted in `Panics`, and the same app answers the next
//! request as before: one request cannot take the process, and the requests it runs
//! beside, down with it (issue 40; the release profile unwinds so that this holds there).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use switchyard_adapters::respond::IntentInvoker;
use switchyard_catalog::auth::Identity;
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::{AdapterInvoker, AdapterRequest, AdapterResponse};
use switchyard_core::config::Config;
use switchyard_core::service::Service;
use switchyard_routing::session::MemorySessionStore;

use crate::setup::{send, small_router, ApiResponse};

/// The in-process adapters, except that the next `panics` calls panic.
struct Panicking {
    panics: AtomicUsize,
    adapters: IntentInvoker,
}

impl AdapterInvoker for Panicking {
    fn invoke<'a>(
        &'a self,
        request: AdapterRequest,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<AdapterResponse>> {
        let armed = self
            .panics
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if armed {
            panic!("injected: the adapter panics on {}", request.template_id);
        }
        self.adapters.invoke(request)
    }
}

/// Counts `Panics`; every other metric goes nowhere.
#[derive(Default)]
struct PanicCounter(Arc<AtomicU64>);

impl Recorder for PanicCounter {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        match key.name() {
            "Panics" => Counter::from_arc(self.0.clone()),
            _ => Counter::noop(),
        }
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// The app on the small catalog, whose adapter panics on its next `times` calls.
fn app_whose_adapter_panics(times: usize) -> axum::Router {
    let config = Config::default();
    let router = small_router(config.clone());
    let invoker = Panicking {
        panics: AtomicUsize::new(times),
        adapters: IntentInvoker::new(router.index().catalog.clone()),
    };
    let sessions = MemorySessionStore::new(config.sessions.clone());
    let service = Service::new(config, router, Arc::new(invoker), Arc::new(sessions));
    switchyard_http::app(Arc::new(service))
}

const QUESTION: &str = r#"{"query": "Remind me to water the plants"}"#;

#[test]
fn a_panicking_request_answers_500_and_the_next_one_is_answered() {
    let app = app_whose_adapter_panics(1);
    let recorder = PanicCounter::default();
    let query = || -> ApiResponse {
        metrics::with_local_recorder(&recorder, || {
            send(&app, "POST", "/v1/query", QUESTION, Identity::default())
        })
    };

    let panicked = query();
    assert_eq!(panicked.status, 500, "{}", panicked.body);
    assert_eq!(
        panicked.body["error"]["code"], "internal",
        "{}",
        panicked.body
    );
    let message = panicked.body["error"]["message"].as_str().unwrap();
    // The panic's own text (a file, an index, a value) stays in the log.
    assert!(!message.contains("injected"), "{message}");
    assert_eq!(recorder.0.load(Ordering::SeqCst), 1);

    let answered = query();
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert_eq!(answered.body["status"], "ok", "{}", answered.body);
    assert_eq!(answered.body["parameters"]["task"], "water the plants");
    assert_eq!(recorder.0.load(Ordering::SeqCst), 1);
}

/// The chat endpoint answers a panic in OpenAI's error shape, as its other errors.
#[test]
fn a_panicking_chat_answers_500_in_openais_shape() {
    let app = app_whose_adapter_panics(1);
    let body = r#"{"messages": [{"role": "user", "content": "Remind me to water the plants"}]}"#;
    let chat = || {
        send(
            &app,
            "POST",
            "/v1/chat/completions",
            body,
            Identity::default(),
        )
    };

    let panicked = chat();
    assert_eq!(panicked.status, 500, "{}", panicked.body);
    let error = &panicked.body["error"];
    assert_eq!(error["type"], "server_error", "{}", panicked.body);
    assert_eq!(error["code"], "internal", "{}", panicked.body);

    let answered = chat();
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert_eq!(
        answered.body["object"], "chat.completion",
        "{}",
        answered.body
    );
}
