//! Switchyard's domain: templates, configuration, embedding, the index, scoring, routing
//! and the transport-independent operations (`service`). No AWS here: the functions and the CLI plug their
//! edges (S3, DynamoDB, Lambda, HTTP servers) into the traits defined in this crate.

pub mod auth;
pub mod config;
pub mod conversation;
pub mod documents;
pub mod embed;
pub mod error;
pub mod eval;
pub mod expiring;
pub mod feedback;
pub mod head;
pub mod index;
pub mod invoker;
pub mod keywords;
pub mod orchestration;
pub mod params;
pub mod rerank;
pub mod rerank_cache;
pub mod router;
pub mod scoring;
pub mod service;
pub mod session;
pub mod similarity;
pub mod synthetic;
pub mod template;
pub mod topics;
pub mod tune;

pub use error::{Error, Result};

/// A boxed future, so the async traits here can be used as `dyn` objects.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
