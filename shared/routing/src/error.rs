//! The routing crate's error: a question the router refuses before any stage runs (the
//! API answers it as a 400 naming the `query` field), the embedder's failure, or an index
//! built with another model. The session and topic stores fail with the contract's error,
//! as every store does.

use switchyard_vectors::VectorsError;

pub type Result<T, E = RoutingError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum RoutingError {
    /// The question is empty or longer than `MAX_QUERY_CHARS`.
    #[error("query: {0}")]
    Query(String),

    #[error(transparent)]
    Vectors(#[from] VectorsError),

    /// An index built with another model than the router embeds with.
    #[error(transparent)]
    Index(#[from] switchyard_index::error::IndexError),
}
