//! Routing one question: the router's stages (retrieve, decide, threshold) over the index,
//! the `Routing` it returns, and the session context a conversation's turns carry into it.
//! `RoutingError` is what the router refuses before any stage runs.

pub mod error;
pub mod router;
pub mod session;

pub use error::RoutingError;
