//! What the router and the adapters agree on, and nothing else: the adapter request and
//! answer ([`adapter`]), the [`adapter::AdapterInvoker`] that carries them, and the
//! [`rerank::Reranker`] both sides may call with its settings, and the [`ContractError`]
//! crossing either boundary (or a store's) can fail with. The adapter function links
//! this crate and the adapters, never the router's index, routing or service.

pub mod adapter;
pub mod error;
pub mod rerank;

pub use error::ContractError;
