//! What `index build` publishes in S3 and the functions read at cold start, with nothing of
//! the router's index or service: [`S3IndexStore`] (an artifact behind its `current`
//! pointer: the index, each chunk artifact), [`S3DataStore`] (a DuckDB datasource's files)
//! and [`IndexLocation`] (where a function finds them, S3 or a file). The adapter function
//! links this crate; the router's AWS edges (`switchyard-aws`) build on it.
//!
//! A failed S3 call is an [`S3Error`] naming the place, the SDK's error kept as its
//! source. Endpoints follow the SDK's
//! usual configuration, `AWS_ENDPOINT_URL` included, which is how the tests reach
//! `moto_server` on 127.0.0.1.

pub mod data_store;
pub mod error;
pub mod index_store;
pub mod location;
mod object;

pub use data_store::{data_prefix, DataManifest, DataObject, S3DataStore};
pub use error::S3Error;
pub use index_store::{chunks_prefix, IndexPointer, S3IndexStore};
pub use location::{documents_chunks, variable_set, IndexLocation};

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
