//! The sections of the configuration this function reads, loaded from the same layers as
//! the router's (`SWITCHYARD_CONFIG`, then `SWITCHYARD__SECTION__KEY` variables) without
//! the router's crates: `llm` (the model behind the adapters' optional features),
//! `documents` (how passages are searched), and of `composite_retrieval` the keywords'
//! term expansion and `reranking` (a documents answer's passages). Each section keeps its
//! own rules; sections the router alone reads are left to the router to check.

use std::path::PathBuf;

use serde::Deserialize;
use switchyard_catalog::error::Result;
use switchyard_contract::rerank::Reranking;
use switchyard_documents::config::DocumentsConfig;
use switchyard_llm::config::LlmConfig;
use switchyard_text::config::Keywords;
use validator::Validate;

#[derive(Debug, Clone, PartialEq, Deserialize, Validate)]
pub struct AdapterSettings {
    #[validate(nested)]
    pub llm: LlmConfig,
    #[validate(nested)]
    pub documents: DocumentsConfig,
    #[validate(nested)]
    pub composite_retrieval: Retrieval,
}

/// What the adapters read of `composite_retrieval`.
#[derive(Debug, Clone, PartialEq, Deserialize, Validate)]
pub struct Retrieval {
    #[validate(nested)]
    pub keywords: Keywords,
    #[validate(nested)]
    pub reranking: Reranking,
}

impl AdapterSettings {
    /// Embedded defaults, then the `SWITCHYARD_CONFIG` file (if set), then the process's
    /// `SWITCHYARD__…` variables.
    pub fn from_env() -> Result<AdapterSettings> {
        let file = std::env::var_os("SWITCHYARD_CONFIG").map(PathBuf::from);
        switchyard_catalog::config::load(file.as_deref(), std::env::vars())
    }
}

impl Default for AdapterSettings {
    fn default() -> Self {
        switchyard_catalog::config::load(None, std::iter::empty::<(String, String)>())
            .expect("the embedded defaults are valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(env: &[(&str, &str)]) -> Result<AdapterSettings> {
        switchyard_catalog::config::load(None, env.iter().copied())
    }

    /// The adapter's sections follow the variables and keep their rules; a router-only
    /// section set for the whole stack does not stop the adapter function.
    #[test]
    fn reads_its_sections_keeps_their_rules_and_leaves_the_routers_alone() {
        let settings = load(&[
            ("SWITCHYARD__LLM__TIMEOUT_MS", "1234"),
            ("SWITCHYARD__SESSIONS__TTL_SECONDS", "60"),
        ])
        .unwrap();
        assert_eq!(settings.llm.timeout_ms, 1234);
        assert_eq!(settings.documents, DocumentsConfig::default());

        let refused = load(&[(
            "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__TOP_CANDIDATES",
            "1",
        )])
        .unwrap_err()
        .to_string();
        assert!(
            refused.contains("composite_retrieval.reranking.top_candidates"),
            "{refused}"
        );
    }
}
