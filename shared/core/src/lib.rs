//! Switchyard's service: what it does with a question beyond routing it — conversations
//! (context; topics live in `switchyard-routing`), multi-part questions
//! (orchestration, workflows), adapter invocation, rerank and its cache, feedback — and
//! the transport-independent operations (`service`).
//! No AWS here: the functions and the CLI plug their edges (S3, DynamoDB, Lambda, HTTP
//! servers) into the traits defined here and below.
//!
//! Each crate below is imported from where its items are defined (nothing is re-exported):
//! `config` is core's own, gathering the sections each crate below owns into one `Config`.

pub mod config;
pub mod conversation;
pub mod error;
pub mod feedback;
pub mod invoker;
pub mod orchestration;
pub mod rerank;
pub mod rerank_cache;
pub mod service;

pub use error::ServiceError;
