//! Routing one question: the router's stages (retrieve, decide, threshold) over the index,
//! the `Routing` it returns, and the session context a conversation's turns carry into it.

pub mod router;
pub mod session;
