//! What can be asked, of whom, and with which settings: the templates and their
//! datasources, the layered configuration, callers' access, and the domain's error type.
//! Everything above this crate (text analysis, the index, routing, the service) reads it;
//! it reads nothing of theirs.

pub mod auth;
pub mod blocking;
pub mod bounded;
pub mod clock;
pub mod config;
pub mod error;
pub mod expiring;
pub mod json;
pub mod metric;
pub mod template;

pub use error::{Error, Result};

/// A boxed future, so the async traits of the domain (stores, the adapter invoker, the
/// reranker) are used as `dyn` objects, one style for all of them.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
