//! The HTTP app on a small catalog with the real model: every endpoint, the errors, the
//! caller's access, sessions, clarify, rerank. Requests go in as API Gateway events, the
//! way the router Lambda receives them (under `switchyard serve` the same app runs).
//!
//! The modules: `setup` (the app on the small catalog, requests as API Gateway events, the
//! callers' identities), `routing` (the router itself: datasources and templates, weights,
//! ties, term expansion, negative examples), `answers` (what `/v1/query` answers, the route
//! report and the stats), `requests` (bad requests named by their field), `auth` (the
//! caller's access), `sessions` (sessions and topics, per caller, and a store that is down),
//! `rerank` (the reranking stage and its cache), `feedback` (judging an answer, by the
//! caller that got it alone), `mcp` (the MCP server at `/mcp` through the Lambda's path),
//! `a2a` (the A2A agent at `/a2a` and its card: access, whose task, a retried message, a
//! partial split answer resumed, a task kept without texts, a session's tasks forgotten
//! with it, protocol errors), `chat` (a chat's earlier messages:
//! routed as turns, never executed, never stored), `panics` (a request that panics:
//! answered 500, and the same app answers the next one).

#[path = "../../../core/tests/common/mod.rs"]
mod common;

mod a2a;
mod answers;
mod auth;
mod chat;
mod feedback;
mod mcp;
mod panics;
mod requests;
mod rerank;
mod routing;
mod sessions;
mod setup;
