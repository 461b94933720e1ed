//! Switchyard's service: what it does with a question beyond routing it — conversations
//! (context; topics are re-exported from `switchyard-routing`), multi-part questions
//! (orchestration, workflows), adapter invocation, rerank and its cache, feedback — and
//! the transport-independent operations (`service`).
//! No AWS here: the functions and the CLI plug their edges (S3, DynamoDB, Lambda, HTTP
//! servers) into the traits defined here and below.
//!
//! The crates below are re-exported under their module names, so `switchyard_core::auth`
//! is `switchyard_catalog::auth`: a crate below cannot import one above, which makes an
//! import loop between them a compile error. `config` is core's own: it gathers the
//! sections each crate below owns into one `Config`.

pub use switchyard_catalog::{auth, expiring, json, metric, template};
pub use switchyard_documents as documents;
pub use switchyard_index::{embed, head, index, scoring, synthetic};
pub use switchyard_routing::{router, session, topics};
pub use switchyard_text::{keywords, params, similarity};

pub mod blocking;
pub mod config;
pub mod conversation;
pub mod error;
pub mod feedback;
pub mod invoker;
pub mod orchestration;
pub mod rerank;
pub mod rerank_cache;
pub mod service;

pub use error::{Error, Result, ServiceError};
pub use switchyard_catalog::BoxFuture;
