//! Datasource adapters. Each answers a routed question for one kind of datasource, behind
//! the contract in `switchyard_core::invoker`: parameters are extracted deterministically
//! (`switchyard_core::params`), values are always bound, and every failure is a clear
//! status, never a made-up result.

pub mod error;
pub mod http;
pub mod llm;
pub mod render;
pub mod tools;

pub use error::{AdapterError, Result};
pub mod local;
pub mod postgres;
pub mod sql;

pub use local::LocalAdapters;
