//! The service's error: its own refusals (a request that breaks the API's contract,
//! feedback on an unknown request, a workflow that another request is running) and, kept
//! whole with `#[from]`, the errors of the crates below it: the catalog's (access, an
//! unknown datasource), routing's (a bad question, the embedder) and the contract's
//! (adapters, rerankers, stores). The HTTP layer maps this one error to statuses in one
//! table.

use switchyard_catalog::error::Error as CatalogError;
use switchyard_contract::ContractError;
use switchyard_routing::RoutingError;

pub type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// What a request to the service (`Service::query`, `route`, `feedback`,
/// `forget_session`) can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// A request that does not follow the API's contract: `field` names what is wrong.
    #[error("{field}: {message}")]
    InvalidRequest { field: String, message: String },

    /// Feedback named a request whose decision is not kept for this caller (unknown,
    /// another caller's, or expired): one answer for all three, so an id tells nothing.
    #[error(
        "no answer with request_id `{0}` is kept for this caller (unknown, another caller's, or older than feedback.ttl_seconds)"
    )]
    UnknownRequest(String),

    /// Another request is running this workflow (409): retrying at once would run its
    /// next phase twice.
    #[error("workflow_id: workflow `{workflow_id}` is being run by another request; retry in {retry_after_seconds} s")]
    WorkflowRunning {
        workflow_id: String,
        retry_after_seconds: u64,
    },

    #[error(transparent)]
    Catalog(#[from] CatalogError),

    #[error(transparent)]
    Routing(#[from] RoutingError),

    #[error(transparent)]
    Contract(#[from] ContractError),
}

impl ServiceError {
    /// The field and the complaint of a request the caller must fix (the API's 400
    /// `invalid_request`): the service's own refusals and routing's refusal of the question.
    pub fn invalid_field(&self) -> Option<(&str, &str)> {
        match self {
            ServiceError::InvalidRequest { field, message } => Some((field, message)),
            ServiceError::Routing(RoutingError::Query(message)) => Some(("query", message)),
            _ => None,
        }
    }

    pub fn invalid_request(field: impl Into<String>, message: impl Into<String>) -> Self {
        ServiceError::InvalidRequest {
            field: field.into(),
            message: message.into(),
        }
    }
}
