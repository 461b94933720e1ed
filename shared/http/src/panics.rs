//! *Can one request take the process down?* No: a panic while answering a request (a bug)
//! answers that request `500` with the API's JSON error (the chat endpoint's in OpenAI's
//! shape), is logged at error level and counted in `Panics`; the process, and every
//! request running beside it, goes on. The release profile unwinds (`panic = "unwind"`),
//! so this holds on Lambda too; with `abort` a panic would end the instance, failing the
//! requests it was running and making the next ones wait for a cold start.
//!
//! Unwinding out of a request is safe for what outlives it: the in-memory stores' locks
//! shrug off poisoning (`lock().unwrap_or_else(PoisonError::into_inner)`), the admission
//! permit is released when the request's future is dropped, and a workflow lease the
//! request held lapses after `orchestration.workflow_lease_seconds`.

use std::any::Any;
use std::future::{poll_fn, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::Poll;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use switchyard_catalog::metric;

use crate::chat::ChatError;
use crate::error::ApiError;

/// The middleware: the request's answer, or a 500 if answering it panicked.
pub(crate) async fn catch(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let mut answer = std::pin::pin!(next.run(request));
    // `AssertUnwindSafe`: see the module comment for the state a request shares.
    let answered = poll_fn(|cx| {
        catch_unwind(AssertUnwindSafe(|| answer.as_mut().poll(cx)))
            .map_or_else(|panic| Poll::Ready(Err(panic)), |poll| poll.map(Ok))
    })
    .await;
    match answered {
        Ok(response) => response,
        Err(panic) => {
            // The panic's text and place are for the log (the default panic hook has
            // printed both to stderr already), not for the caller.
            tracing::error!(%method, path, panic = message(&*panic), "request panicked");
            metrics::counter!(metric::PANICS).increment(1);
            let error = ApiError::Internal("the server failed to answer this request".into());
            if path.starts_with("/v1/chat/") || path == "/v1/models" {
                ChatError(error).into_response()
            } else {
                error.into_response()
            }
        }
    }
}

/// What `panic!` was given, when it is text.
fn message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not text)")
}
