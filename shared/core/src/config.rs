//! Configuration: which stages run, their weights and thresholds, and how the index is
//! built. Layered: embedded defaults (`config.yaml`), then a file, then environment
//! variables `SWITCHYARD__SECTION__KEY=value`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

const EMBEDDED_DEFAULTS: &str = include_str!("config.yaml");
pub const ENV_PREFIX: &str = "SWITCHYARD__";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub composite_retrieval: CompositeRetrieval,
    pub embedding: EmbeddingConfig,
    pub llm: LlmConfig,
    pub index: IndexConfig,
    pub sessions: SessionsConfig,
    pub rerank_cache: RerankCacheConfig,
    pub auth: AuthConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsConfig {
    pub max_turns: usize,
    pub ttl_seconds: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankCacheConfig {
    pub ttl_seconds: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    pub required: bool,
    /// SHA-256 (hex) of an API key → the principal it identifies.
    pub api_keys: std::collections::BTreeMap<String, String>,
    /// Principal → the datasources it may use (`"*"`: all).
    pub principals: std::collections::BTreeMap<String, Vec<String>>,
    pub datasources_claim: String,
    pub principal_claim: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub timeout_ms: u64,
    pub fill_missing_parameters: bool,
    pub synthesize_response: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompositeRetrieval {
    pub confidence_threshold: Threshold,
    pub max_templates_per_source: usize,
    pub parallel_search: bool,
    pub search_timeout_ms: u64,
    pub template_scoring: TemplateScoring,
    pub learned_scoring: LearnedScoring,
    pub keywords: Keywords,
    pub reranking: Reranking,
    pub string_similarity: StringSimilarity,
    pub scoring: Scoring,
    pub clarify: Clarify,
}

/// `auto` (chosen from the templates when the index is built) or a number in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Threshold {
    Fixed(f32),
    Auto(AutoThreshold),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoThreshold {
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LearnedScoring {
    /// Rank with the index's learned head when it has one.
    pub enabled: bool,
    /// Weight of the head's probability in the ranking score.
    pub weight: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keywords {
    pub enabled: bool,
    /// `weighted`: add `weight ·` BM25 (divided by the best template's) to the vector
    /// score; `rrf`: reciprocal-rank fusion of the two rankings.
    pub fusion: Fusion,
    pub weight: f32,
    pub rrf_k: f32,
    pub k1: f32,
    pub b: f32,
    /// Abbreviations and synonyms of this deployment: "ncd" → "no claim discount".
    pub term_expansion: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    Weighted,
    Rrf,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clarify {
    pub enabled: bool,
    /// Ask which one was meant when the top two ranking scores are this close.
    pub margin: f32,
    /// How many choices a clarify answer lists (2 or 3).
    pub choices: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateScoring {
    pub method: TemplateScoringMethod,
    pub max_weight: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateScoringMethod {
    Max,
    Centroid,
    Blend,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reranking {
    pub enabled: bool,
    pub provider: Option<RerankProvider>,
    /// Base URL of the provider's API, e.g. `https://api.cohere.com`,
    /// `http://127.0.0.1:11434/v1` (Ollama) or `https://api.anthropic.com`.
    pub endpoint: Option<String>,
    pub model: Option<String>,
    /// Name of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    pub timeout_ms: u64,
    pub top_candidates: usize,
    /// Candidates per request to a chat judge; batches are sent in parallel.
    pub batch_size: usize,
    /// Rerank only when the top two candidates' ranking scores are within this margin.
    pub margin: f32,
    pub weight: f32,
}

/// Which API a reranker speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RerankProvider {
    /// `POST {endpoint}/v1/rerank` (Cohere, and the servers that copy its API).
    Cohere,
    /// `POST {endpoint}/chat/completions` with a judging prompt (OpenAI, Ollama, vLLM).
    Openai,
    /// `POST {endpoint}/v1/messages` with a judging prompt.
    Anthropic,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StringSimilarity {
    pub enabled: bool,
    pub algorithm: StringAlgorithm,
    /// Weight in the confidence (with `scoring.embedding_weight`).
    pub weight: f32,
    /// Weight in the ranking score.
    pub rank_weight: f32,
    pub compare_fields: Vec<CompareField>,
    pub min_threshold: f32,
    pub aggregation: Aggregation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StringAlgorithm {
    JaroWinkler,
    Levenshtein,
    Ratio,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareField {
    Description,
    NlExamples,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    Max,
    Mean,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scoring {
    pub embedding_weight: f32,
    pub tie_breaker: TieBreaker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TieBreaker {
    /// Equal combined scores: higher embedding score, then earlier datasource.
    Embedding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingConfig {
    pub model_dir: Option<PathBuf>,
    pub threads: usize,
    pub batch_size: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    pub exact_scan_max_templates: usize,
    pub candidate_pool: usize,
    pub hnsw_ef_search: usize,
    pub hnsw_ef_construction: usize,
    pub seed: u64,
    pub learned_head: LearnedHeadConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LearnedHeadConfig {
    pub enabled: bool,
    /// Larger catalogs skip the head and rank on centroid similarity.
    pub max_templates: usize,
    /// In a catalog of more templates than `rivals + 1`, each text is trained against its
    /// own template and the `rivals` with the nearest centroids only.
    pub rivals: usize,
    pub epochs: usize,
    pub learning_rate: f32,
    /// λ in (λ/2)‖M − I‖²: how far the metric may move from plain cosine.
    pub l2: f32,
    /// s: logits are s · xᵀ M c.
    pub scale: f32,
    /// Training weight of a description row (examples and id words weigh 1).
    pub description_weight: f32,
}

impl Default for Config {
    fn default() -> Self {
        Config::load(None, std::iter::empty::<(String, String)>())
            .expect("the embedded defaults are valid")
    }
}

impl Config {
    /// Embedded defaults, then `file` (if any), then the `SWITCHYARD__…` variables among `env`.
    pub fn load<I, K, V>(file: Option<&Path>, env: I) -> Result<Config>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut merged = parse_yaml(EMBEDDED_DEFAULTS, "embedded defaults")?;
        let mut origin = "embedded defaults".to_owned();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
            let layer = parse_yaml(&text, &path.display().to_string())?;
            merge(&mut merged, layer);
            origin = path.display().to_string();
        }
        let mut overrides: Vec<(String, String)> = env
            .into_iter()
            .filter_map(|(k, v)| {
                let key = k.as_ref().strip_prefix(ENV_PREFIX)?.to_owned();
                Some((key, v.as_ref().to_owned()))
            })
            .collect();
        overrides.sort();
        for (key, raw) in overrides {
            let variable = format!("{ENV_PREFIX}{key}");
            let path: Vec<String> = key.split("__").map(str::to_ascii_lowercase).collect();
            let value = parse_yaml(&raw, &variable)?;
            set_path(&mut merged, &path, value);
            origin = format!("{origin} + environment");
        }
        let config: Config = serde_path_to_error::deserialize(merged).map_err(|e| {
            let path = e.path().to_string();
            Error::Config {
                origin: origin.clone(),
                field: path,
                message: e.into_inner().to_string(),
            }
        })?;
        config.validate(&origin)?;
        Ok(config)
    }

    /// Load from `SWITCHYARD_CONFIG` (if set) and the process environment.
    pub fn from_env(file: Option<&Path>) -> Result<Config> {
        let from_var = std::env::var_os("SWITCHYARD_CONFIG").map(PathBuf::from);
        Config::load(file.or(from_var.as_deref()), std::env::vars())
    }

    fn validate(&self, origin: &str) -> Result<()> {
        let fail = |field: &str, message: &str| {
            Err(Error::Config {
                origin: origin.to_owned(),
                field: field.to_owned(),
                message: message.to_owned(),
            })
        };
        let c = &self.composite_retrieval;
        if matches!(c.confidence_threshold, Threshold::Fixed(t) if !(0.0..=1.0).contains(&t)) {
            return fail(
                "composite_retrieval.confidence_threshold",
                "must be `auto` or a number between 0 and 1",
            );
        }
        if c.max_templates_per_source == 0 {
            return fail(
                "composite_retrieval.max_templates_per_source",
                "must be at least 1",
            );
        }
        if !(0.0..=1.0).contains(&c.template_scoring.max_weight) {
            return fail(
                "composite_retrieval.template_scoring.max_weight",
                "must be between 0 and 1",
            );
        }
        for (field, weight) in [
            (
                "composite_retrieval.scoring.embedding_weight",
                c.scoring.embedding_weight,
            ),
            ("composite_retrieval.reranking.weight", c.reranking.weight),
            (
                "composite_retrieval.string_similarity.weight",
                c.string_similarity.weight,
            ),
            (
                "composite_retrieval.string_similarity.rank_weight",
                c.string_similarity.rank_weight,
            ),
            (
                "composite_retrieval.learned_scoring.weight",
                c.learned_scoring.weight,
            ),
            ("composite_retrieval.keywords.weight", c.keywords.weight),
            ("composite_retrieval.keywords.k1", c.keywords.k1),
            ("composite_retrieval.keywords.rrf_k", c.keywords.rrf_k),
            ("composite_retrieval.clarify.margin", c.clarify.margin),
        ] {
            if !(weight.is_finite() && weight >= 0.0) {
                return fail(field, "must be a number of at least 0");
            }
        }
        if c.scoring.embedding_weight == 0.0 {
            return fail(
                "composite_retrieval.scoring.embedding_weight",
                "must be above 0: stage 1 always runs",
            );
        }
        let r = &c.reranking;
        if r.enabled && r.provider.is_some() && (r.endpoint.is_none() || r.model.is_none()) {
            return fail(
                "composite_retrieval.reranking",
                "endpoint and model are needed when a provider is set",
            );
        }
        if r.top_candidates < 2 || r.batch_size == 0 || r.timeout_ms == 0 {
            return fail(
                "composite_retrieval.reranking",
                "top_candidates must be at least 2, batch_size and timeout_ms at least 1",
            );
        }
        if !(r.margin.is_finite() && r.margin >= 0.0) {
            return fail(
                "composite_retrieval.reranking.margin",
                "must be a number of at least 0",
            );
        }
        if c.string_similarity.enabled && c.string_similarity.compare_fields.is_empty() {
            return fail(
                "composite_retrieval.string_similarity.compare_fields",
                "must name at least one field when the stage is enabled",
            );
        }
        let llm = &self.llm;
        if (llm.fill_missing_parameters || llm.synthesize_response)
            && (llm.endpoint.is_none() || llm.model.is_none())
        {
            return fail(
                "llm",
                "endpoint and model are needed when an LLM feature is on",
            );
        }
        if self.sessions.max_turns == 0 || self.sessions.ttl_seconds == 0 {
            return fail("sessions", "max_turns and ttl_seconds must be at least 1");
        }
        for (hash, principal) in &self.auth.api_keys {
            let is_sha256 = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
            if !is_sha256 {
                return fail(
                    &format!("auth.api_keys.{hash}"),
                    "keys are listed by the SHA-256 of the key, as 64 hex digits (never the key itself)",
                );
            }
            if !self.auth.principals.contains_key(principal) {
                return fail(
                    &format!("auth.api_keys.{hash}"),
                    &format!("names principal `{principal}`, which auth.principals does not list"),
                );
            }
        }
        if !(0.0..=1.0).contains(&c.keywords.b) {
            return fail("composite_retrieval.keywords.b", "must be between 0 and 1");
        }
        if !(2..=3).contains(&c.clarify.choices) {
            return fail("composite_retrieval.clarify.choices", "must be 2 or 3");
        }
        let head = &self.index.learned_head;
        if head.epochs == 0
            || head.rivals == 0
            || !(head.learning_rate > 0.0
                && head.scale > 0.0
                && head.l2 >= 0.0
                && head.description_weight >= 0.0)
        {
            return fail(
                "index.learned_head",
                "epochs, rivals, learning_rate and scale must be above 0; l2 and description_weight at least 0",
            );
        }
        if self.embedding.batch_size == 0 {
            return fail("embedding.batch_size", "must be at least 1");
        }
        if self.index.candidate_pool == 0 || self.index.hnsw_ef_search == 0 {
            return fail(
                "index",
                "candidate_pool and hnsw_ef_search must be at least 1",
            );
        }
        Ok(())
    }
}

fn parse_yaml(text: &str, origin: &str) -> Result<Value> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| Error::Config {
        origin: origin.to_owned(),
        field: "(document)".to_owned(),
        message: e.to_string(),
    })
}

/// Merge `layer` over `base`: objects merge key by key, anything else replaces.
fn merge(base: &mut Value, layer: Value) {
    match (base, layer) {
        (Value::Object(base), Value::Object(layer)) => {
            for (key, value) in layer {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, layer) => *base = layer,
    }
}

fn set_path(root: &mut Value, path: &[String], value: Value) {
    let mut node = root;
    for key in &path[..path.len() - 1] {
        if !node.is_object() {
            *node = Value::Object(Default::default());
        }
        node = node
            .as_object_mut()
            .expect("made an object above")
            .entry(key.clone())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    if !node.is_object() {
        *node = Value::Object(Default::default());
    }
    node.as_object_mut()
        .expect("made an object above")
        .insert(path[path.len() - 1].clone(), value);
}

/// The cache root: `$SWITCHYARD_CACHE_DIR`, else `$XDG_CACHE_HOME/switchyard`, else
/// `~/.cache/switchyard`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SWITCHYARD_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    base.join("switchyard")
}

impl EmbeddingConfig {
    /// Candle and rayon size their pools from RAYON_NUM_THREADS: set it from `threads`
    /// unless the environment already does. Call at process start, before any pool exists.
    pub fn apply_threads(&self) {
        if self.threads > 0 && std::env::var_os("RAYON_NUM_THREADS").is_none() {
            std::env::set_var("RAYON_NUM_THREADS", self.threads.to_string());
        }
    }

    /// The model folder: configuration, then `$SWITCHYARD_MODEL_DIR`, then the cache.
    pub fn resolved_model_dir(&self) -> PathBuf {
        if let Some(dir) = &self.model_dir {
            return dir.clone();
        }
        if let Some(dir) = std::env::var_os("SWITCHYARD_MODEL_DIR") {
            return PathBuf::from(dir);
        }
        cache_dir().join("models").join("all-MiniLM-L6-v2")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn embedded_defaults_load() {
        let config = Config::load(None, env(&[])).unwrap();
        assert!(config.composite_retrieval.string_similarity.enabled);
        assert!(!config.composite_retrieval.reranking.enabled);
        assert_eq!(
            config.composite_retrieval.confidence_threshold,
            Threshold::Auto(AutoThreshold::Auto)
        );
    }

    #[test]
    fn file_then_environment_override_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("switchyard.yaml");
        std::fs::write(
            &file,
            "composite_retrieval:\n  confidence_threshold: 0.7\n  max_templates_per_source: 5\n",
        )
        .unwrap();
        let config = Config::load(
            Some(&file),
            env(&[
                (
                    "SWITCHYARD__COMPOSITE_RETRIEVAL__CONFIDENCE_THRESHOLD",
                    "0.65",
                ),
                (
                    "SWITCHYARD__COMPOSITE_RETRIEVAL__STRING_SIMILARITY__ALGORITHM",
                    "ratio",
                ),
                ("UNRELATED", "1"),
            ]),
        )
        .unwrap();
        let c = &config.composite_retrieval;
        assert_eq!(c.confidence_threshold, Threshold::Fixed(0.65));
        assert_eq!(c.max_templates_per_source, 5);
        assert_eq!(c.string_similarity.algorithm, StringAlgorithm::Ratio);
    }

    #[test]
    fn unknown_field_in_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.yaml");
        std::fs::write(&file, "composite_retrieval:\n  confidence_treshold: 0.7\n").unwrap();
        let message = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
        assert!(message.contains("bad.yaml"), "{message}");
        assert!(message.contains("confidence_treshold"), "{message}");
    }

    #[test]
    fn bad_environment_value_names_field_and_variable() {
        let message = Config::load(
            None,
            env(&[(
                "SWITCHYARD__COMPOSITE_RETRIEVAL__STRING_SIMILARITY__ALGORITHM",
                "soundex",
            )]),
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("environment"), "{message}");
        assert!(
            message.contains("composite_retrieval.string_similarity.algorithm"),
            "{message}"
        );
    }

    #[test]
    fn out_of_range_threshold_is_refused() {
        let message = Config::load(
            None,
            env(&[(
                "SWITCHYARD__COMPOSITE_RETRIEVAL__CONFIDENCE_THRESHOLD",
                "1.5",
            )]),
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("confidence_threshold"), "{message}");
        let message = Config::load(
            None,
            env(&[(
                "SWITCHYARD__COMPOSITE_RETRIEVAL__CONFIDENCE_THRESHOLD",
                "sometimes",
            )]),
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("confidence_threshold"), "{message}");
    }

    #[test]
    fn a_reranker_needs_an_endpoint_and_a_model() {
        let message = Config::load(
            None,
            env(&[
                (
                    "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__ENABLED",
                    "true",
                ),
                (
                    "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__PROVIDER",
                    "cohere",
                ),
            ]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            message.contains("composite_retrieval.reranking") && message.contains("endpoint"),
            "{message}"
        );
        let message = Config::load(
            None,
            env(&[(
                "SWITCHYARD__COMPOSITE_RETRIEVAL__RERANKING__PROVIDER",
                "bing",
            )]),
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("provider"), "{message}");
    }

    #[test]
    fn term_expansion_and_head_settings_load_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("switchyard.yaml");
        std::fs::write(
            &file,
            "composite_retrieval:\n  keywords:\n    term_expansion: {ncd: no claim discount}\n",
        )
        .unwrap();
        let config = Config::load(Some(&file), env(&[])).unwrap();
        assert_eq!(
            config.composite_retrieval.keywords.term_expansion["ncd"],
            "no claim discount"
        );
        let message = Config::load(
            None,
            env(&[("SWITCHYARD__INDEX__LEARNED_HEAD__EPOCHS", "0")]),
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("index.learned_head"), "{message}");
        let message = Config::load(
            None,
            env(&[("SWITCHYARD__INDEX__LEARNED_HEAD__RIVALS", "0")]),
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("rivals"), "{message}");
    }
}
