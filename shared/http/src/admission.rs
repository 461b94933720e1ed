//! Admission control: at most `max_in_flight` requests run at once, at most `max_queued`
//! more wait for a turn, and any request beyond that is answered 503 with `Retry-After`
//! at once (counted in `RequestsShed`), so an overloaded process sheds load instead of
//! letting every request's latency grow without bound.
//!
//! Admission only bounds concurrency: an admitted request runs on the runtime like any
//! other. Its CPU-bound part (embedding and scoring the question, an in-process SQLite
//! query) leaves the worker through `switchyard_catalog::blocking::run_blocking`, so the
//! workers stay free to accept connections and admit or refuse them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use switchyard_catalog::metric;
use switchyard_core::config::ServerConfig;
use tokio::sync::Semaphore;

use crate::ApiError;

#[derive(Clone)]
pub struct Admission {
    running: Arc<Semaphore>,
    waiting: Arc<AtomicUsize>,
    max_queued: usize,
    retry_after_seconds: u64,
}

impl Admission {
    pub fn new(config: &ServerConfig) -> Admission {
        Admission {
            running: Arc::new(Semaphore::new(config.max_in_flight.max(1))),
            waiting: Arc::new(AtomicUsize::new(0)),
            max_queued: config.max_queued,
            retry_after_seconds: config.retry_after_seconds,
        }
    }
}

/// The middleware: run now, wait for a turn, or be refused.
pub async fn admit(State(admission): State<Admission>, request: Request, next: Next) -> Response {
    if let Ok(_turn) = admission.running.clone().try_acquire_owned() {
        return next.run(request).await;
    }
    if admission.waiting.fetch_add(1, Ordering::AcqRel) >= admission.max_queued {
        admission.waiting.fetch_sub(1, Ordering::AcqRel);
        metrics::counter!(metric::REQUESTS_SHED).increment(1);
        return ApiError::Overloaded {
            retry_after_seconds: admission.retry_after_seconds,
        }
        .into_response();
    }
    let turn = admission.running.clone().acquire_owned().await;
    admission.waiting.fetch_sub(1, Ordering::AcqRel);
    match turn {
        Ok(_turn) => next.run(request).await,
        // The semaphore is never closed; if it were, refusing is the honest answer.
        Err(_) => ApiError::Overloaded {
            retry_after_seconds: admission.retry_after_seconds,
        }
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::get;
    use tokio::sync::Notify;
    use tower::ServiceExt;

    use super::*;

    #[tokio::test]
    async fn one_runs_one_waits_and_the_third_is_refused_with_retry_after() {
        let release = Arc::new(Notify::new());
        let held = release.clone();
        let admission = Admission::new(&ServerConfig {
            max_in_flight: 1,
            max_queued: 1,
            retry_after_seconds: 2,
            public_url: None,
        });
        let app = axum::Router::new()
            .route(
                "/",
                get(move || {
                    let held = held.clone();
                    async move { held.notified().await }
                }),
            )
            .layer(axum::middleware::from_fn_with_state(
                admission.clone(),
                admit,
            ));
        let call = |app: axum::Router| tokio::spawn(app.oneshot(Request::new(Body::empty())));

        let running = call(app.clone());
        tokio::time::sleep(Duration::from_millis(50)).await;
        let waiting = call(app.clone());
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(admission.waiting.load(Ordering::Acquire), 1);

        let refused = app
            .clone()
            .oneshot(Request::new(Body::empty()))
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers()["retry-after"], "2");
        let body = axum::body::to_bytes(refused.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "overloaded");

        // Each release lets one request finish: the running one, then the one that waited.
        release.notify_one();
        assert_eq!(running.await.unwrap().unwrap().status(), StatusCode::OK);
        tokio::time::sleep(Duration::from_millis(50)).await;
        release.notify_one();
        assert_eq!(waiting.await.unwrap().unwrap().status(), StatusCode::OK);
        assert_eq!(admission.waiting.load(Ordering::Acquire), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_busy_request_does_not_keep_the_next_one_from_being_refused() {
        let admission = Admission::new(&ServerConfig {
            max_in_flight: 1,
            max_queued: 0,
            retry_after_seconds: 1,
            public_url: None,
        });
        // CPU-bound work, as embedding is: it blocks its thread, through run_blocking as
        // the service's does.
        let app = axum::Router::new()
            .route(
                "/",
                get(|| async {
                    switchyard_catalog::blocking::run_blocking(|| {
                        std::thread::sleep(Duration::from_millis(600))
                    })
                }),
            )
            .layer(axum::middleware::from_fn_with_state(admission, admit));
        let busy = tokio::spawn(app.clone().oneshot(Request::new(Body::empty())));
        tokio::time::sleep(Duration::from_millis(100)).await;

        let started = std::time::Instant::now();
        let refused = tokio::spawn(app.oneshot(Request::new(Body::empty())))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        // The one worker was free to refuse it: not after the busy request's 600 ms.
        assert!(
            started.elapsed() < Duration::from_millis(300),
            "refused after {:?}",
            started.elapsed()
        );
        assert_eq!(busy.await.unwrap().unwrap().status(), StatusCode::OK);
    }
}
