//! What crossing one of the contract's boundaries can fail with: an adapter that is not
//! there, too slow or broken; a reranker that failed; a store (sessions, rerank cache,
//! feedback, workflows, topics) that failed. The edges' own errors (`switchyard-aws`'s,
//! `switchyard-rerank`'s) are kept as the source. A catalog refusal met on the way (an
//! unknown datasource) stays the catalog's error.

use switchyard_catalog::error::BoxError;

pub type Result<T, E = ContractError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// No adapter for this kind of datasource exists (yet) in this deployment.
    #[error("no adapter for datasource `{datasource}` of kind `{kind}` is available")]
    AdapterUnavailable { datasource: String, kind: String },

    #[error("adapter for datasource `{datasource}` did not answer within {after_ms} ms")]
    AdapterTimeout { datasource: String, after_ms: u64 },

    #[error("adapter for datasource `{datasource}` failed: {message}")]
    AdapterFailed {
        datasource: String,
        message: String,
        #[source]
        source: Option<BoxError>,
    },

    #[error("reranker `{reranker}`: {message}")]
    Rerank {
        reranker: String,
        message: String,
        #[source]
        source: Option<BoxError>,
    },

    /// A store (`store` names which) failed; `source` keeps the client's error.
    #[error("{store}: {message}")]
    Store {
        store: String,
        message: String,
        #[source]
        source: Option<BoxError>,
    },

    #[error(transparent)]
    Catalog(#[from] switchyard_catalog::error::Error),
}

impl ContractError {
    /// A store's refusal of what it holds (an item that does not parse), no cause kept.
    pub fn store(store: impl Into<String>, message: impl Into<String>) -> Self {
        ContractError::Store {
            store: store.into(),
            message: message.into(),
            source: None,
        }
    }
}
