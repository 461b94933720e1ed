//! The AWS edges of Switchyard, each implementing one trait of `switchyard-core`:
//! [`S3IndexStore`] (`IndexSource`, plus publishing), [`S3DataStore`] (a DuckDB
//! datasource's files, published and fetched), [`DynamoSessionStore`]
//! (`SessionStore`), [`DynamoRerankCache`] (`RerankCache`), [`DynamoFeedbackStore`]
//! (`FeedbackStore`), [`DynamoWorkflowStore`] (`WorkflowStore`),
//! [`DynamoTopicStore`] (`TopicStore`) and [`LambdaInvoker`]
//! (`AdapterInvoker`). A failed SDK call is an [`AwsError`] naming the call and the
//! bucket, key, table or function, the SDK's error kept as its source; it reaches callers
//! as the domain's `switchyard_catalog::error::Error`, the `AwsError` as that one's source.
//!
//! Endpoints follow the SDK's usual configuration, `AWS_ENDPOINT_URL` included, which is how
//! the tests reach `moto_server` and `cargo lambda watch` on 127.0.0.1.

pub mod artifacts;
pub mod data_store;
pub mod error;
pub mod feedback;
pub mod index_store;
pub mod invoker;
pub mod rerank_cache;
pub mod sessions;
pub mod topics;
pub mod workflow;

pub use artifacts::{documents_chunks, variable_set, IndexLocation};
pub use data_store::{data_prefix, DataManifest, DataObject, S3DataStore};
pub use feedback::DynamoFeedbackStore;
pub use index_store::{chunks_prefix, IndexPointer, S3IndexStore};
pub use invoker::LambdaInvoker;
pub use rerank_cache::DynamoRerankCache;
pub use sessions::DynamoSessionStore;
pub use topics::DynamoTopicStore;
pub use workflow::DynamoWorkflowStore;

/// The SDK configuration from the environment (region, credentials, `AWS_ENDPOINT_URL`).
pub async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await
}

/// An S3 client for `config`. Path-style addressing when a custom endpoint is set: an
/// emulator on 127.0.0.1 has no `bucket.host` names.
pub fn s3_client(config: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let path_style = config.endpoint_url().is_some();
    let s3 = aws_sdk_s3::config::Builder::from(config)
        .force_path_style(path_style)
        .build();
    aws_sdk_s3::Client::from_conf(s3)
}

pub use error::AwsError;
