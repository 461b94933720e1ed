//! The configuration: every section, gathered. Each section is owned by the crate that
//! reads it and imported from there (nothing is re-exported); the sections the service
//! alone reads are defined here (`orchestration`, `feedback`, `rerank_cache`, `llm`,
//! `server`). Layered by
//! `switchyard_catalog::config`: embedded defaults (`config.yaml`), then a file, then
//! environment variables `SWITCHYARD__SECTION__KEY=value`.

mod sections;

pub use sections::*;
use switchyard_catalog::auth::AuthConfig;
use switchyard_documents::config::*;
use switchyard_index::config::*;
use switchyard_llm::config::LlmConfig;
use switchyard_routing::config::*;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use switchyard_catalog::config::rules::refuse;
use switchyard_catalog::Result;
use validator::{Validate, ValidationError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "chat_decomposer_has_a_model"))]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[validate(nested)]
    pub composite_retrieval: CompositeRetrieval,
    #[validate(nested)]
    pub embedding: EmbeddingConfig,
    #[validate(nested)]
    pub llm: LlmConfig,
    #[validate(nested)]
    pub index: IndexConfig,
    #[validate(nested)]
    pub sessions: SessionsConfig,
    #[validate(nested)]
    pub feedback: FeedbackConfig,
    #[validate(nested)]
    pub orchestration: OrchestrationConfig,
    #[validate(nested)]
    pub documents: DocumentsConfig,
    #[validate(nested)]
    pub rerank_cache: RerankCacheConfig,
    #[validate(nested)]
    pub auth: AuthConfig,
    #[validate(nested)]
    pub server: ServerConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config::load(None, std::iter::empty::<(String, String)>())
            .expect("the embedded defaults are valid")
    }
}

impl Config {
    /// Embedded defaults, then `file` (if any), then the `SWITCHYARD__…` variables among
    /// `env` (in name order; `A__B` sets field `a.b`, its value read as YAML).
    pub fn load<I, K, V>(file: Option<&Path>, env: I) -> Result<Config>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        switchyard_catalog::config::load(file, env)
    }

    /// Load from `SWITCHYARD_CONFIG` (if set) and the process environment.
    pub fn from_env(file: Option<&Path>) -> Result<Config> {
        let from_var = std::env::var_os("SWITCHYARD_CONFIG").map(PathBuf::from);
        Config::load(file.or(from_var.as_deref()), std::env::vars())
    }

    /// The sections a router holds (and an index is built with).
    pub fn router(&self) -> RouterConfig {
        RouterConfig {
            composite_retrieval: self.composite_retrieval.clone(),
            index: self.index.clone(),
            embedding: self.embedding.clone(),
        }
    }
}

fn chat_decomposer_has_a_model(c: &Config) -> Result<(), ValidationError> {
    if c.orchestration.chat_decomposer && (c.llm.endpoint.is_none() || c.llm.model.is_none()) {
        return Err(refuse(
            "orchestration.chat_decomposer",
            "needs the chat model: set llm.endpoint and llm.model",
        ));
    }
    Ok(())
}
