//! The artifact format: magic bytes, format version, JSON manifest, postcard body and
//! SHA-256 checksum; serialising, writing, reading and verifying it; and where the router
//! gets an artifact's bytes.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Calibration, Index, Partition, Probe};
use crate::config::IndexConfig;
use crate::error::IndexError;
use crate::head::Head;
use switchyard_catalog::template::{Catalog, DatasourceKind};
use switchyard_vectors::error::Result;
use switchyard_vectors::frame::{open_frame, seal, write_atomically};
use switchyard_vectors::VectorsError;

/// 5: the long number arrays as byte strings, the HNSW graph's points as i8 codes;
/// 6: the frame's checksum a CRC-64/NVME instead of a SHA-256.
pub const FORMAT_VERSION: u32 = 6;
const MAGIC: &[u8; 8] = b"SWYDIDX\0";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    pub model_id: String,
    pub dimension: usize,
    /// [`Catalog::content_hash`] of the templates the index was built from.
    pub templates_hash: String,
    /// Unix seconds; `SOURCE_DATE_EPOCH` fixes it for reproducible builds.
    pub built_at: u64,
    pub datasources: Vec<ManifestDatasource>,
    pub build: IndexConfig,
    /// What the learned head was trained on; `None` when it was off or the catalog too big.
    pub head: Option<HeadSummary>,
    /// The automatic threshold, if there are at least two datasources.
    pub calibration: Option<Calibration>,
    /// The probe sentences' vectors as the builder computed them (`drift`); empty for an
    /// index built from given vectors.
    pub probes: Vec<Probe>,
    /// The adapted encoder the index was embedded with (`<index>.encoder.onnx` beside it,
    /// or `encoders/<sha256>.onnx` under its S3 prefix); `None` for the base model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoder: Option<EncoderManifest>,
}

impl EncoderManifest {
    /// Refuse a graph other than the one this manifest names, naming both.
    pub fn check_graph(
        &self,
        bytes: &[u8],
        graph_origin: &str,
        index_origin: &str,
    ) -> std::result::Result<(), IndexError> {
        let found = hex::encode(Sha256::digest(bytes));
        if found != self.onnx_sha256 {
            return Err(IndexError::model(
                index_origin,
                format!(
                    "the index was embedded with the adapted encoder {} (sha256 {}) but {graph_origin} has sha256 {found}: the index and its encoder come from different builds; build or push them together",
                    self.model_id, self.onnx_sha256
                ),
            ));
        }
        Ok(())
    }
}

/// An adapted encoder: what it was adapted from and how, and the checksums that tie the
/// index to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncoderManifest {
    /// The base model's id (its vectors are not comparable with these).
    pub base_model: String,
    /// The id the adapted embedder reports: the base's with the graph's checksum.
    pub model_id: String,
    /// sha256 of the int8 graph the router runs.
    pub onnx_sha256: String,
    /// sha256 of the adapted f32 weights (model.safetensors) it was derived from.
    pub weights_sha256: String,
    pub loss: String,
    pub seed: u64,
    pub steps: usize,
    pub pairs: usize,
    pub epochs: usize,
    pub learning_rate: f64,
    pub first_trained_layer: usize,
    /// Layers the adapted encoder runs (fewer than the base's when cut for speed).
    #[serde(default = "six")]
    pub layers: usize,
    /// How training pairs were batched (`random` or `nearest`).
    #[serde(default)]
    pub batching: String,
    /// `nl_examples` kept out of training, for calibrating the threshold and the head's
    /// temperature on texts the encoder did not see.
    pub held_out: usize,
    pub training_seconds: f64,
    /// The incremental runs since the last full adaptation, oldest first: each trained
    /// further the encoder before it (the full run above, then the runs before it) on
    /// the templates the catalog changed. Empty for a full adaptation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incremental: Vec<IncrementalRun>,
}

/// One incremental run: from which weights, on which changed templates, at what cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncrementalRun {
    /// sha256 of the adapted weights it started from.
    pub from_weights_sha256: String,
    /// Templates (`datasource/id`) added or whose texts changed: the ones it trained on.
    pub changed: Vec<String>,
    /// Templates the catalog no longer has.
    pub removed: Vec<String>,
    /// Layers below this one stayed as they were.
    pub first_trained_layer: usize,
    pub steps: usize,
    pub pairs: usize,
    pub training_seconds: f64,
}

fn six() -> usize {
    6
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadSummary {
    pub templates: usize,
    pub rows: usize,
    pub epochs: usize,
    pub temperature: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestDatasource {
    pub name: String,
    pub kind: DatasourceKind,
    pub templates: usize,
    pub vectors: usize,
    /// `exact` or `hnsw`: how candidates are found in this partition.
    pub search: String,
}

#[derive(Serialize, Deserialize)]
struct Body {
    /// The catalog as JSON (its free-form fields need a self-describing format).
    catalog_json: String,
    partitions: Vec<Partition>,
    head: Option<Head>,
}

#[derive(Serialize)]
struct BodyRef<'a> {
    catalog_json: &'a str,
    partitions: &'a [Partition],
    head: &'a Option<Head>,
}

impl Index {
    /// Serialise to the artifact's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let manifest = serde_json::to_vec(&self.manifest).expect("a manifest always serialises");
        let catalog_json =
            serde_json::to_string(&self.catalog).expect("a catalog always serialises");
        let body_bytes = postcard::to_stdvec(&BodyRef {
            catalog_json: &catalog_json,
            partitions: &self.partitions,
            head: &self.head,
        })
        .map_err(|e| {
            VectorsError::artifact("(memory)", format!("cannot serialise the index: {e}"))
        })?;

        Ok(seal(MAGIC, FORMAT_VERSION, &manifest, &body_bytes))
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        write_atomically(path, &self.to_bytes()?)
    }

    pub fn read(path: &Path) -> Result<Index> {
        let bytes = std::fs::read(path).map_err(|e| VectorsError::io(path, e))?;
        Index::from_bytes(&bytes, &path.display().to_string())
    }

    /// Parse and verify an artifact; `origin` (a path or `s3://bucket/key`) names it in errors.
    pub fn from_bytes(bytes: &[u8], origin: &str) -> Result<Index> {
        let fail = |problem: String| VectorsError::artifact(origin, problem);
        let frame = open_frame(bytes, MAGIC, FORMAT_VERSION, "index").map_err(fail)?;
        // The checksum (about 0.55 s for the 850 MB of 100,000 templates) runs beside the
        // decoding where there is a second vCPU; nothing decoded is used unless it holds.
        let (verified, decoded) =
            rayon::join(|| frame.verify(), || decode(frame.manifest, frame.body));
        verified.map_err(fail)?;
        let (manifest, body, catalog) = decoded.map_err(fail)?;
        check_consistency(&manifest, &body, &catalog).map_err(fail)?;

        let mut partitions = body.partitions;
        partitions.iter_mut().for_each(Partition::derive_coarse);
        Ok(Index {
            manifest,
            catalog,
            partitions,
            head: body.head,
            head_training_ms: None,
        })
    }
}

/// The manifest, the body and the catalog in it; the error is the problem, in words.
fn decode(manifest: &[u8], body: &[u8]) -> std::result::Result<(Manifest, Body, Catalog), String> {
    let manifest: Manifest =
        serde_json::from_slice(manifest).map_err(|e| format!("bad manifest: {e}"))?;
    let body: Body = postcard::from_bytes(body).map_err(|e| format!("bad body: {e}"))?;
    let catalog: Catalog =
        serde_json::from_str(&body.catalog_json).map_err(|e| format!("bad catalog: {e}"))?;
    Ok((manifest, body, catalog))
}

/// Check that the manifest, the partitions, the catalog and the head describe the same
/// index; the error is the problem, in words.
fn check_consistency(
    manifest: &Manifest,
    body: &Body,
    catalog: &Catalog,
) -> std::result::Result<(), String> {
    // The body keeps the catalog's canonical JSON: hashing it as read spares serialising
    // 100,000 templates again.
    if Catalog::content_hash_of_json(body.catalog_json.as_bytes()) != manifest.templates_hash {
        return Err("the catalog does not match the manifest's templates_hash".into());
    }
    // Row counts times the dimension, as lengths of the flat vectors (`None` on overflow).
    let rows = |n: usize| n.checked_mul(manifest.dimension);
    let counts_match = manifest.datasources.len() == body.partitions.len()
        && catalog.datasources.len() == body.partitions.len()
        && manifest
            .datasources
            .iter()
            .zip(&body.partitions)
            .zip(&catalog.datasources)
            .all(|((m, p), d)| {
                p.is_well_formed()
                    && m.name == p.datasource
                    && m.name == d.spec.name
                    && m.templates == p.template_count()
                    && m.templates == d.templates.len()
                    && m.vectors == p.vector_count()
                    && p.dimension == manifest.dimension
                    && p.vectors.len() % manifest.dimension.max(1) == 0
                    && rows(p.template_count()) == Some(p.centroids.len())
                    && rows(d.spec.negative_examples.len()) == Some(p.negatives.len())
                    && p.offsets
                        .last()
                        .is_some_and(|&n| n as usize == p.vector_count())
            });
    if !counts_match {
        return Err("the manifest's datasources and counts do not match the partitions".into());
    }
    let templates = catalog.template_count();
    let head_matches = match (&body.head, &manifest.head) {
        (None, None) => true,
        (Some(head), Some(summary)) => {
            head.dimension == manifest.dimension
                && head.templates() == templates
                && summary.templates == templates
                && rows(templates) == Some(head.weights.len())
        }
        _ => false,
    };
    if !head_matches {
        return Err("the learned head does not match the manifest and the catalog".into());
    }
    Ok(())
}
