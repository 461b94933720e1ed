//! How the index is built (`index`) and the model that embeds for it (`embedding`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use switchyard_catalog::config::cache_dir;
use switchyard_catalog::config::rules::*;
use validator::{Validate, ValidationError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    pub exact_scan_max_templates: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub candidate_pool: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub hnsw_ef_search: usize,
    pub hnsw_ef_construction: usize,
    pub seed: u64,
    #[validate(nested)]
    pub learned_head: LearnedHeadConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct LearnedHeadConfig {
    pub enabled: bool,
    /// Larger catalogs skip the head and rank on centroid similarity.
    pub max_templates: usize,
    /// In a catalog of more templates than `rivals + 1`, each text is trained against its
    /// own template and the `rivals` with the nearest centroids only.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub rivals: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub epochs: usize,
    #[validate(custom(function = "positive"))]
    pub learning_rate: f32,
    /// λ in (λ/2)‖M − I‖²: how far the metric may move from plain cosine.
    #[validate(custom(function = "non_negative"))]
    pub l2: f32,
    /// s: logits are s · xᵀ M c.
    #[validate(custom(function = "positive"))]
    pub scale: f32,
    /// Training weight of a description row (examples and id words weigh 1).
    #[validate(custom(function = "non_negative"))]
    pub description_weight: f32,
    /// Weigh each template's rows so that every template counts as much in training, for
    /// catalogs whose example counts are not how often each template is asked.
    pub balance_templates: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingConfig {
    pub model_dir: Option<PathBuf>,
    pub threads: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub batch_size: usize,
    /// Questions whose vectors are kept (least recently used out); 0 keeps none.
    pub cache_size: usize,
    #[validate(nested)]
    pub drift: DriftConfig,
    #[validate(nested)]
    pub adaptation: AdaptationConfig,
}

/// Whether `index build` fine-tunes the encoder on the catalog's own texts, and how
/// (`switchyard-adapt`; the CLI runs it, the router only loads its result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "some_layer_trains"))]
#[serde(deny_unknown_fields)]
pub struct AdaptationConfig {
    pub mode: AdaptationMode,
    /// `auto` adapts catalogs of at least this many templates.
    pub min_templates: usize,
    pub seed: u64,
    #[validate(custom(function = "learning_rate"))]
    pub learning_rate: f64,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub epochs: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub pairs_per_text: usize,
    /// The bound on a build's cost: at most this many training pairs per epoch.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_pairs: usize,
    /// Warn when the training, projected from its first steps, would take longer than
    /// this on this machine (0: never); the training itself is not cut, so that a catalog
    /// and seed give the same weights on every machine.
    pub warn_after_seconds: u64,
    /// Pairs per training step; the other pairs of a batch are each pair's negatives.
    #[validate(range(min = 2, message = "must be at least 2 (a pair needs a negative)"))]
    pub batch_size: usize,
    /// Layers before this one stay frozen (0 trains all six).
    #[validate(range(max = 5, message = "must be a layer of the model's six (0 to 5)"))]
    pub first_trained_layer: usize,
    /// Which templates share a training batch (and so serve as each other's negatives).
    pub batching: AdaptationBatching,
    /// Keep only the model's first this many layers, adapted as such: a faster encoder;
    /// null keeps all six.
    #[validate(range(
        min = 1,
        max = 6,
        message = "must be between 1 and the model's 6 layers, or null for all"
    ))]
    pub layers: Option<usize>,
    /// A catalog that differs from a cached encoder's in at most this share of its
    /// templates trains that encoder further on the changed ones (0: always in full).
    #[validate(range(min = 0.0, max = 1.0, message = "must be a share in [0, 1]"))]
    pub incremental_max_share: f64,
    /// The Python that builds the int8 graph from the adapted weights (with onnx and
    /// onnxruntime, as `infra/scripts/fetch-model.sh` installs them); null means
    /// `$SWITCHYARD_PYTHON`, else the project virtualenv's, else `python3`.
    pub python: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdaptationMode {
    /// The frozen base model, always.
    Base,
    /// Adapted for catalogs of at least `min_templates` templates.
    Auto,
    /// Adapted, whatever the catalog's size.
    Adapted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdaptationBatching {
    /// Any templates, in a seeded random order.
    Random,
    /// Templates near each other by the base model: harder negatives.
    Nearest,
}

/// How far the model at hand may embed the index's probe sentences from the builder's
/// vectors (cosine): below `warn_below` it warns, below `refuse_below` it refuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "refuse_below_warn"))]
#[serde(deny_unknown_fields)]
pub struct DriftConfig {
    #[validate(custom(function = "unit"))]
    pub warn_below: f32,
    pub refuse_below: f32,
}

switchyard_catalog::default_from_embedded! {
    IndexConfig => "index",
    EmbeddingConfig => "embedding",
}

impl EmbeddingConfig {
    /// Size rayon's global pool from `threads` (0 leaves rayon's own choice: the cores, or
    /// RAYON_NUM_THREADS), unless RAYON_NUM_THREADS is set, which wins. Call at process
    /// start, before any parallel work builds the pool; the process environment is not
    /// touched.
    pub fn apply_threads(&self) {
        if self.threads == 0 || std::env::var_os("RAYON_NUM_THREADS").is_some() {
            return;
        }
        if let Err(e) = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .build_global()
        {
            tracing::warn!(error = %e, threads = self.threads, "embedding.threads not applied: rayon's pool already exists");
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

fn some_layer_trains(a: &AdaptationConfig) -> Result<(), ValidationError> {
    if let Some(layers) = a.layers {
        if a.first_trained_layer >= layers {
            return Err(refuse(
                "first_trained_layer",
                "must be below embedding.adaptation.layers (some layer must train)",
            ));
        }
    }
    Ok(())
}

fn refuse_below_warn(d: &DriftConfig) -> Result<(), ValidationError> {
    if !(0.0..=d.warn_below).contains(&d.refuse_below) {
        return Err(refuse(
            "refuse_below",
            "must be a cosine in [0, embedding.drift.warn_below]",
        ));
    }
    Ok(())
}
