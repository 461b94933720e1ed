//! The service's error: its own refusals (feedback on an unknown request, a workflow that
//! another request is running) and, kept whole with `#[from]`, the domain's error from
//! below (`switchyard_catalog::error::Error`: catalog, index, routing, documents, stores,
//! adapters), which already gathers the narrower crates' errors.

use switchyard_catalog::error::Error;

/// What a request to the service (`Service::query`, `route`, `feedback`,
/// `forget_session`) can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// Feedback named a request whose decision is not kept (unknown or expired).
    #[error(
        "no answer with request_id `{0}` is kept (unknown, or older than feedback.ttl_seconds)"
    )]
    UnknownRequest(String),

    /// Another request is running this workflow (409): retrying at once would run its
    /// next phase twice.
    #[error("workflow_id: workflow `{workflow_id}` is being run by another request; retry in {retry_after_seconds} s")]
    WorkflowRunning {
        workflow_id: String,
        retry_after_seconds: u64,
    },

    /// Anything the layers below refused or failed with.
    #[error(transparent)]
    Domain(#[from] Error),
}
