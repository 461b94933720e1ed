//! One client for chat models and the JSON APIs around them: OpenAI-compatible chat
//! completions (OpenAI, Ollama, vLLM, llama.cpp server) and Anthropic's messages API.
//!
//! [`JsonEndpoint`] is the HTTP exchange every model call shares: one JSON POST within a
//! timeout, no redirects, the reply read up to a size cap, failures naming the URL, the
//! status and a body excerpt, and API keys redacted from every message. [`ChatClient`]
//! speaks a [`Dialect`] on top of it. [`read_capped`] and the `redact_*` functions are also
//! used by the HTTP datasource adapter.

mod chat;
pub mod config;
mod error;
mod exchange;
mod secrets;

pub use chat::{ApiKey, ChatClient, ChatReply, ChatRequest, Dialect, FunctionCall, Tool};
pub use error::{LlmError, Result};
pub use exchange::{bearer, describe, excerpt, join_url, read_capped, JsonEndpoint};
pub use secrets::{redact_json, redact_text, REDACTED};
