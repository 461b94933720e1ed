//! The router's AWS edges, each implementing one trait of the layers below:
//! [`DynamoSessionStore`] (`SessionStore`), [`DynamoRerankCache`] (`RerankCache`),
//! [`DynamoFeedbackStore`] (`FeedbackStore`), [`DynamoWorkflowStore`] (`WorkflowStore`),
//! [`DynamoTopicStore`] (`TopicStore`), [`DynamoTransitionStore`] (`TransitionStore`, on the
//! topics table), [`LambdaInvoker`] (`AdapterInvoker`), and
//! publishing the index in S3 ([`index::IndexPublishing`], on `switchyard-s3`'s store).
//! A failed SDK call is an [`AwsError`] naming the call and the table or function, the
//! SDK's error kept as its source; it reaches callers as the contract's `ContractError`,
//! the `AwsError` as that one's source.
//!
//! Endpoints follow the SDK's usual configuration, `AWS_ENDPOINT_URL` included, which is how
//! the tests reach `moto_server` and `cargo lambda watch` on 127.0.0.1.

pub mod error;
pub mod feedback;
pub mod index;
pub mod invoker;
pub mod rerank_cache;
pub mod sessions;
pub mod topics;
pub mod transitions;
pub mod workflow;

pub use error::AwsError;
pub use feedback::DynamoFeedbackStore;
pub use invoker::LambdaInvoker;
pub use rerank_cache::DynamoRerankCache;
pub use sessions::DynamoSessionStore;
pub use topics::DynamoTopicStore;
pub use transitions::DynamoTransitionStore;
pub use workflow::DynamoWorkflowStore;
