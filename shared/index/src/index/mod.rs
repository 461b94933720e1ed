//! The index artifact: one file holding a manifest, the catalog, and one search partition
//! per datasource, sealed with a SHA-256 checksum.
//!
//! Layout (all integers little-endian):
//! `MAGIC (8) | format_version u32 | manifest_len u32 | manifest JSON | body_len u64 |
//!  body (postcard) | sha256 of everything before (32)`.
//!
//! A partition keeps, per template, one unit vector per `nl_example`, one for the
//! description and one for the id words, and the template's centroid (normalised mean).
//! Candidates come from the centroids (an exact scan for small partitions, an
//! instant-distance HNSW graph for large ones); candidates are then scored exactly on all
//! their vectors. A partition also keeps one unit vector per negative example of its
//! datasource. The body also carries the learned head (`head.rs`), and the manifest the
//! automatic threshold with the confidence settings it was computed for.
//!
//! - `artifact`: the format (magic, version, manifest, checksum), bytes in and out;
//! - `partition`: one datasource's vectors, centroids and HNSW graph, and their search;
//! - `build`: embedding a catalog into partitions, the manifest and the learned head;
//! - `calibration`: the automatic threshold ([`Index::calibrate`]);
//! - `drift`: does the model at hand embed the builder's probe sentences as it did;
//! - `cache`: the local cache of built indexes.

mod artifact;
mod build;
mod cache;
mod calibration;
pub mod check;
mod drift;
mod partition;

pub use artifact::{
    EncoderManifest, HeadSummary, IncrementalRun, Manifest, ManifestDatasource, FORMAT_VERSION,
};
pub use cache::{cache_path, load_or_build};
pub use calibration::Calibration;
pub use drift::{embed_probes, Drift, DriftStatus, Probe, PROBE_TEXTS};
pub use partition::Partition;

use crate::config::DriftConfig;
use crate::error::IndexError;
use crate::head::Head;
use switchyard_catalog::template::Catalog;
use switchyard_text::keywords::id_words;
use switchyard_vectors::embed::Embedder;

/// A loaded, verified index.
pub struct Index {
    pub manifest: Manifest,
    pub catalog: Catalog,
    pub partitions: Vec<Partition>,
    pub head: Option<Head>,
    /// How long training the head took, when this process built the index.
    pub head_training_ms: Option<f64>,
}

/// The vectors of one datasource.
#[derive(Debug, Clone, Default)]
pub struct DatasourceVectors {
    /// Per template, in template order: its rows as [`template_texts`] lists them.
    pub templates: Vec<Vec<Vec<f32>>>,
    /// One per negative example, in their order.
    pub negatives: Vec<Vec<f32>>,
}

/// The texts embedded for a template: every `nl_example`, the description, the id words.
pub fn template_texts(template: &switchyard_catalog::template::Template) -> Vec<String> {
    template
        .nl_examples
        .iter()
        .cloned()
        .chain([template.description.clone(), id_words(&template.id)])
        .collect()
}

/// Whether `nl_examples[example]` of a template with `examples` of them is held out: of
/// the head's training while its temperature is fitted, and of an adapted encoder's
/// training, so that calibration sees texts the encoder did not (every fifth, of templates
/// with at least three).
pub fn is_held_out(example: usize, examples: usize) -> bool {
    examples >= 3 && example % 5 == 4
}

/// Called with (texts embedded so far, total) while building.
pub type Progress<'a> = &'a dyn Fn(usize, usize);

impl Index {
    /// Refuse an embedder other than the one that built the index: another model id or
    /// dimension, or probe vectors beyond `tolerance.refuse_below`; report drift within it.
    pub fn check_embedder(
        &self,
        embedder: &dyn Embedder,
        tolerance: &DriftConfig,
        origin: &str,
    ) -> std::result::Result<Drift, IndexError> {
        if embedder.model_id() != self.manifest.model_id
            || embedder.dimension() != self.manifest.dimension
        {
            return Err(IndexError::model(
                origin,
                format!(
                    "built with {} ({} dimensions) but the router embeds with {} ({} dimensions); rebuild the index",
                    self.manifest.model_id,
                    self.manifest.dimension,
                    embedder.model_id(),
                    embedder.dimension()
                ),
            ));
        }
        drift::check(
            &self.manifest.probes,
            &self.manifest.model_id,
            embedder,
            tolerance,
            origin,
        )
    }
}
