//! The routing crate's own error: a question the router refuses before any stage runs. It
//! reaches callers as the domain's `Error::InvalidRequest` naming the `query` field, so the
//! 400 the API answers and its message stay what they were. The stages themselves fail
//! only through the embedder (the domain's `Error`).

use switchyard_catalog::error::Error;

#[derive(Debug, thiserror::Error)]
pub enum RoutingError {
    /// The question is empty or longer than `MAX_QUERY_CHARS`.
    #[error("query: {0}")]
    Query(String),
}

impl From<RoutingError> for Error {
    fn from(error: RoutingError) -> Error {
        match error {
            RoutingError::Query(message) => Error::invalid_request("query", message),
        }
    }
}
