//! Routing one question: the router's stages (retrieve, decide, threshold) over the index,
//! the `Routing` it returns, and the session context a conversation's turns carry into it.
//! `RoutingError` is what the router refuses before any stage runs. `topics` is the
//! caller's memory across sessions, a weak prior beside the session's turns; `transitions`
//! the deployment's, how its conversations move from one template to the next.

pub mod config;
pub mod error;
pub mod router;
pub mod session;
pub mod topics;
pub mod transitions;

pub use error::RoutingError;
