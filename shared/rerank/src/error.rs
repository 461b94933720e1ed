//! The rerank providers' own error: which provider failed, and why — the chat or rerank
//! API's error (`LlmError`, kept as the source) or an answer the reranker cannot use. It
//! reaches the router as the contract's `ContractError::Rerank`, this error as that one's source.

use switchyard_contract::ContractError;
use switchyard_llm::LlmError;

#[derive(Debug, thiserror::Error)]
pub enum RerankError {
    /// The provider's API failed: HTTP status and body excerpt, a timeout, a transport error.
    /// (The contract error it becomes carries the message; this names its kind, so a chain
    /// printed whole does not say it twice.)
    #[error("the provider's API failed")]
    Api {
        reranker: String,
        #[source]
        source: LlmError,
    },
    /// The provider answered, but not with scores the reranker can use (a count mismatch,
    /// an unparsable judge answer).
    #[error("the provider's answer cannot be used")]
    Answer { reranker: String, message: String },
}

/// A timeout keeps the wording operators know from the reranker's logs.
fn api_message(error: &LlmError) -> String {
    match error {
        LlmError::Timeout { ms } => format!("timed out after {ms} ms"),
        other => other.to_string(),
    }
}

impl From<RerankError> for ContractError {
    fn from(error: RerankError) -> ContractError {
        let (reranker, message) = match &error {
            RerankError::Api { reranker, source } => (reranker.clone(), api_message(source)),
            RerankError::Answer { reranker, message } => (reranker.clone(), message.clone()),
        };
        ContractError::Rerank {
            reranker,
            message,
            source: Some(Box::new(error)),
        }
    }
}
