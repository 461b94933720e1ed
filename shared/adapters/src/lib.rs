//! Datasource adapters. Each answers a routed question for one kind of datasource, behind
//! the contract in `switchyard_contract::adapter`: parameters are extracted deterministically
//! (`switchyard_text::params`, [`respond`]), values are always bound, and every failure is a clear
//! status, never a made-up result.

pub mod adapter;
pub mod documents;
#[cfg(feature = "duckdb")]
pub mod duckdb;
pub mod duckdb_data;
pub mod error;
pub mod guard;
pub mod http;
pub mod llm;
pub mod local;
pub mod mysql;
pub mod placeholders;
pub mod postgres;
pub mod registry;
pub mod render;
pub mod respond;
pub mod schema;
pub mod sql;
mod tls;
pub mod tools;
pub mod values;
pub mod web;

pub use adapter::{Adapter, AdapterFactory};
pub use error::{AdapterError, Result};
pub use local::LocalAdapters;

use switchyard_catalog::template::Catalog;

/// The checks an index build runs on a catalog, so a template that could never run is
/// refused before it is published: SQL must be one read-only statement; HTTP, GraphQL and
/// `http_call` tool endpoints must stay on their datasource's allowed hosts; a tool's
/// `execution` must parse. Each adapter checks again when it opens.
pub fn check_catalog(catalog: &Catalog) -> Result<()> {
    catalog.datasources.iter().try_for_each(registry::check)
}
