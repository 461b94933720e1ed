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

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use instant_distance::{Builder, HnswMap, Search};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use rayon::prelude::*;

use crate::config::{
    CompositeRetrieval, Config, IndexConfig, StringSimilarity, TemplateScoring,
    TemplateScoringMethod,
};
use crate::embed::{dot, normalize, Embedder};
use crate::error::{Error, Result};
use crate::head::{Head, TrainingSet};
use crate::keywords::id_words;
use crate::similarity::{template_similarity, PreparedQuery, TemplateTexts};
use crate::template::{Catalog, DatasourceKind};

pub const FORMAT_VERSION: u32 = 3;
const MAGIC: &[u8; 8] = b"SWYDIDX\0";
const CHECKSUM_LEN: usize = 32;

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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadSummary {
    pub templates: usize,
    pub rows: usize,
    pub epochs: usize,
    pub temperature: f32,
}

/// The automatic threshold and the confidence settings it holds for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub threshold: f32,
    /// How many `nl_examples` the median was taken over.
    pub examples: usize,
    pub embedding_weight: f32,
    pub string_similarity: StringSimilarity,
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

/// A point in the HNSW graph: a template centroid. Distance is 1 − cosine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Centroid(Vec<f32>);

impl instant_distance::Point for Centroid {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - dot(&self.0, &other.0)
    }
}

#[derive(Serialize, Deserialize)]
pub struct Partition {
    pub datasource: String,
    dimension: usize,
    /// Row-major unit vectors; template `t` owns rows `offsets[t]..offsets[t + 1]`.
    vectors: Vec<f32>,
    offsets: Vec<u32>,
    /// One unit centroid per template, row-major.
    centroids: Vec<f32>,
    /// One unit vector per negative example of the datasource, row-major, in their order.
    negatives: Vec<f32>,
    graph: Option<HnswMap<Centroid, u32>>,
    /// The centroids quantised to i8 for the exact scan (a quarter of the memory traffic);
    /// derived from `centroids` when the partition is built or loaded, never stored.
    #[serde(skip)]
    coarse: Coarse,
}

/// i8 codes with one scale per vector: `value ≈ code * scale`.
#[derive(Default)]
struct Coarse {
    codes: Vec<i8>,
    scales: Vec<f32>,
}

impl Coarse {
    fn of(vectors: &[f32], dimension: usize) -> Coarse {
        let mut codes = Vec::with_capacity(vectors.len());
        let mut scales = Vec::with_capacity(vectors.len() / dimension.max(1));
        for vector in vectors.chunks_exact(dimension) {
            let (scale, vector_codes) = quantize(vector);
            codes.extend(vector_codes);
            scales.push(scale);
        }
        Coarse { codes, scales }
    }
}

/// Symmetric i8 quantisation of one vector: (scale, codes).
fn quantize(vector: &[f32]) -> (f32, Vec<i8>) {
    let largest = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
    let codes = vector.iter().map(|x| (x / scale).round() as i8).collect();
    (scale, codes)
}

/// Integer dot product; the compiler widens to i16 pairs and multiply-adds them.
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; 16];
    let chunks_a = a.chunks_exact(16);
    let chunks_b = b.chunks_exact(16);
    let tail: i32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        for ((acc, x), y) in acc.iter_mut().zip(x).zip(y) {
            *acc += i32::from(*x) * i32::from(*y);
        }
    }
    acc.iter().sum::<i32>() + tail
}

#[derive(Serialize, Deserialize)]
struct Body {
    /// The catalog as JSON (its free-form fields need a self-describing format).
    catalog_json: String,
    partitions: Vec<Partition>,
    head: Option<Head>,
}

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

impl Partition {
    fn build(
        datasource: &str,
        dimension: usize,
        source: &DatasourceVectors,
        config: &IndexConfig,
    ) -> Partition {
        let templates = &source.templates;
        let mut vectors = Vec::new();
        let mut offsets = vec![0u32];
        let mut centroids = Vec::with_capacity(templates.len() * dimension);
        for rows in templates {
            let mut centroid = vec![0.0f32; dimension];
            for row in rows {
                vectors.extend_from_slice(row);
                centroid.iter_mut().zip(row).for_each(|(c, x)| *c += x);
            }
            normalize(&mut centroid);
            centroids.extend_from_slice(&centroid);
            offsets.push((vectors.len() / dimension) as u32);
        }
        let graph = (templates.len() > config.exact_scan_max_templates).then(|| {
            let points: Vec<Centroid> = centroids
                .chunks_exact(dimension)
                .map(|c| Centroid(c.to_vec()))
                .collect();
            let values: Vec<u32> = (0..templates.len() as u32).collect();
            Builder::default()
                .ef_construction(config.hnsw_ef_construction)
                .ef_search(config.hnsw_ef_search.max(config.candidate_pool))
                .seed(config.seed)
                .build(points, values)
        });
        let coarse = Coarse::of(&centroids, dimension);
        Partition {
            datasource: datasource.to_owned(),
            dimension,
            vectors,
            offsets,
            centroids,
            negatives: source.negatives.concat(),
            graph,
            coarse,
        }
    }

    pub fn template_count(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn vector_count(&self) -> usize {
        self.vectors.len() / self.dimension.max(1)
    }

    pub fn uses_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// The vectors of one template: its examples, then its description.
    pub fn template_rows(&self, template: usize) -> impl Iterator<Item = &[f32]> {
        let start = self.offsets[template] as usize * self.dimension;
        let end = self.offsets[template + 1] as usize * self.dimension;
        self.vectors[start..end].chunks_exact(self.dimension)
    }

    pub fn centroid(&self, template: usize) -> &[f32] {
        &self.centroids[template * self.dimension..(template + 1) * self.dimension]
    }

    /// Cosine of a unit query to the template's nearest text.
    pub fn nearest_text(&self, template: usize, query: &[f32]) -> f32 {
        self.template_rows(template)
            .map(|row| dot(query, row))
            .fold(f32::MIN, f32::max)
    }

    /// The datasource's negative example nearest a unit query: (its position, cosine).
    pub fn nearest_negative(&self, query: &[f32]) -> Option<(usize, f32)> {
        self.negatives
            .chunks_exact(self.dimension)
            .map(|row| dot(query, row))
            .enumerate()
            .fold(None, |best, (i, s)| match best {
                Some((_, b)) if b >= s => best,
                _ => Some((i, s)),
            })
    }

    /// The embedding score of one template for a unit query vector.
    pub fn score(&self, template: usize, query: &[f32], scoring: &TemplateScoring) -> f32 {
        let best = || self.nearest_text(template, query);
        let centroid = || dot(query, self.centroid(template));
        match scoring.method {
            TemplateScoringMethod::Max => best(),
            TemplateScoringMethod::Centroid => centroid(),
            TemplateScoringMethod::Blend => {
                scoring.max_weight * best() + (1.0 - scoring.max_weight) * centroid()
            }
        }
    }

    /// The best `limit` templates for `query`: (template position, embedding score),
    /// best first. Candidates come from the centroids, then are scored exactly.
    pub fn search(
        &self,
        query: &[f32],
        limit: usize,
        candidate_pool: usize,
        scoring: &TemplateScoring,
    ) -> Vec<(usize, f32)> {
        let candidates: Vec<usize> = match &self.graph {
            Some(graph) => {
                let mut search = Search::default();
                graph
                    .search(&Centroid(query.to_vec()), &mut search)
                    .take(candidate_pool)
                    .map(|item| *item.value as usize)
                    .collect()
            }
            None if self.template_count() <= candidate_pool => (0..self.template_count()).collect(),
            None => {
                // Exact scan of the quantised centroids; candidates are rescored in f32.
                let (query_scale, query_codes) = quantize(query);
                let mut by_centroid: Vec<(usize, f32)> = self
                    .coarse
                    .codes
                    .chunks_exact(self.dimension)
                    .zip(&self.coarse.scales)
                    .enumerate()
                    .map(|(t, (codes, scale))| {
                        (t, dot_i8(&query_codes, codes) as f32 * scale * query_scale)
                    })
                    .collect();
                by_centroid.select_nth_unstable_by(candidate_pool - 1, |a, b| b.1.total_cmp(&a.1));
                by_centroid.truncate(candidate_pool);
                by_centroid.into_iter().map(|(t, _)| t).collect()
            }
        };
        let mut scored: Vec<(usize, f32)> = candidates
            .into_iter()
            .map(|t| (t, self.score(t, query, scoring)))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(limit);
        scored
    }
}

/// The texts embedded for a template: every `nl_example`, the description, the id words.
pub fn template_texts(template: &crate::template::Template) -> Vec<String> {
    template
        .nl_examples
        .iter()
        .cloned()
        .chain([template.description.clone(), id_words(&template.id)])
        .collect()
}

/// Called with (texts embedded so far, total) while building.
pub type Progress<'a> = &'a dyn Fn(usize, usize);

impl Index {
    /// Embed every template text of `catalog` and build the partitions.
    pub fn build(
        catalog: Catalog,
        embedder: &dyn Embedder,
        config: &Config,
        progress: Progress<'_>,
    ) -> Result<Index> {
        let total: usize = catalog
            .datasources
            .iter()
            .map(|d| {
                d.spec.negative_examples.len()
                    + d.templates
                        .iter()
                        .map(|t| template_texts(t).len())
                        .sum::<usize>()
            })
            .sum();
        let mut done = 0;
        let mut vectors = Vec::with_capacity(catalog.datasources.len());
        for datasource in &catalog.datasources {
            let mut source = DatasourceVectors::default();
            for template in &datasource.templates {
                let texts = template_texts(template);
                let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                source.templates.push(embedder.embed(&texts)?);
                done += texts.len();
                progress(done, total);
            }
            let negatives: Vec<&str> = datasource
                .spec
                .negative_examples
                .iter()
                .map(String::as_str)
                .collect();
            if !negatives.is_empty() {
                source.negatives = embedder.embed(&negatives)?;
                done += negatives.len();
                progress(done, total);
            }
            vectors.push(source);
        }
        Ok(Index::from_vectors(
            catalog,
            vectors,
            embedder.model_id(),
            embedder.dimension(),
            config,
        ))
    }

    /// Build from vectors already computed, one [`DatasourceVectors`] per datasource.
    /// Used by [`Index::build`] and by benchmarks on synthetic data.
    pub fn from_vectors(
        catalog: Catalog,
        vectors: Vec<DatasourceVectors>,
        model_id: &str,
        dimension: usize,
        full_config: &Config,
    ) -> Index {
        let config = &full_config.index;
        let partitions: Vec<Partition> = catalog
            .datasources
            .iter()
            .zip(&vectors)
            .map(|(datasource, source)| {
                Partition::build(datasource.name(), dimension, source, config)
            })
            .collect();
        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            model_id: model_id.to_owned(),
            dimension,
            templates_hash: catalog.content_hash(),
            built_at: build_time(),
            datasources: catalog
                .datasources
                .iter()
                .zip(&partitions)
                .map(|(d, p)| ManifestDatasource {
                    name: d.spec.name.clone(),
                    kind: d.spec.kind,
                    templates: p.template_count(),
                    vectors: p.vector_count(),
                    search: if p.uses_graph() { "hnsw" } else { "exact" }.to_owned(),
                })
                .collect(),
            build: config.clone(),
            head: None,
            calibration: None,
        };
        let mut index = Index {
            manifest,
            catalog,
            partitions,
            head: None,
            head_training_ms: None,
        };
        let templates = index.catalog.template_count();
        let head_settings = &config.learned_head;
        if head_settings.enabled && (2..=head_settings.max_templates).contains(&templates) {
            let began = std::time::Instant::now();
            let head = index.train_head(head_settings);
            index.head_training_ms = Some(began.elapsed().as_secs_f64() * 1000.0);
            index.manifest.head = Some(HeadSummary {
                templates,
                rows: index.partitions.iter().map(Partition::vector_count).sum(),
                epochs: head_settings.epochs,
                temperature: head.temperature,
            });
            index.head = Some(head);
        }
        index.manifest.calibration = index.calibrate(&full_config.composite_retrieval);
        index
    }

    /// Train the head on every template text; the temperature is fitted on every fifth
    /// `nl_example` of templates with at least three, held out of a first training.
    fn train_head(&self, settings: &crate::config::LearnedHeadConfig) -> Head {
        let dimension = self.manifest.dimension;
        let mut rows = Vec::new();
        let mut labels = Vec::new();
        let mut row_weights = Vec::new();
        let mut held_out = Vec::new();
        let mut centroids = Vec::new();
        let mut number = 0u32;
        for (datasource, partition) in self.catalog.datasources.iter().zip(&self.partitions) {
            for (t, template) in datasource.templates.iter().enumerate() {
                let examples = template.nl_examples.len();
                for (r, row) in partition.template_rows(t).enumerate() {
                    rows.extend_from_slice(row);
                    labels.push(number);
                    row_weights.push(if r == examples {
                        settings.description_weight
                    } else {
                        1.0
                    });
                    held_out.push(r < examples && examples >= 3 && r % 5 == 4);
                }
                centroids.extend_from_slice(partition.centroid(t));
                number += 1;
            }
        }
        let keep = |flag: bool| -> (Vec<f32>, Vec<u32>, Vec<f32>) {
            let mut kept = (Vec::new(), Vec::new(), Vec::new());
            for (i, &out) in held_out.iter().enumerate() {
                if out == flag {
                    kept.0
                        .extend_from_slice(&rows[i * dimension..(i + 1) * dimension]);
                    kept.1.push(labels[i]);
                    kept.2.push(row_weights[i]);
                }
            }
            kept
        };
        let (train_rows, train_labels, train_weights) = keep(false);
        let (probe_rows, probe_labels, _) = keep(true);
        let full = TrainingSet {
            dimension,
            rows: &rows,
            labels: &labels,
            row_weights: &row_weights,
            centroids: &centroids,
        };
        let without = TrainingSet {
            dimension,
            rows: &train_rows,
            labels: &train_labels,
            row_weights: &train_weights,
            centroids: &centroids,
        };
        Head::train(
            &full,
            Some((&without, &probe_rows, &probe_labels)),
            settings,
        )
    }

    /// The automatic threshold for `retrieval`'s confidence settings: for each
    /// `nl_example`, its best confidence against the templates of the other datasources
    /// (a question that belongs elsewhere), and the median of those. `None` with a single
    /// datasource. Scans at most 4,000 examples, evenly spread.
    pub fn calibrate(&self, retrieval: &CompositeRetrieval) -> Option<Calibration> {
        const MAX_EXAMPLES: usize = 4000;
        const STRING_CANDIDATES: usize = 8;
        if self.partitions.len() < 2 {
            return None;
        }
        let strings = &retrieval.string_similarity;
        let embedding_weight = retrieval.scoring.embedding_weight;
        let string_weight = if strings.enabled { strings.weight } else { 0.0 };
        let total_weight = embedding_weight + string_weight;
        let texts: Vec<Vec<TemplateTexts>> = self
            .catalog
            .datasources
            .iter()
            .map(|d| d.templates.iter().map(TemplateTexts::of).collect())
            .collect();
        // (datasource, template, example number)
        let mut examples: Vec<(usize, usize, usize)> = Vec::new();
        for (d, datasource) in self.catalog.datasources.iter().enumerate() {
            for (t, template) in datasource.templates.iter().enumerate() {
                examples.extend((0..template.nl_examples.len()).map(|e| (d, t, e)));
            }
        }
        let stride = examples.len().div_ceil(MAX_EXAMPLES).max(1);
        let sampled: Vec<(usize, usize, usize)> = examples.into_iter().step_by(stride).collect();
        let mut best: Vec<f32> = sampled
            .par_iter()
            .map(|&(d, t, e)| {
                let vector = self.partitions[d].template_rows(t).nth(e).expect("row");
                let mut nearest: Vec<(usize, usize, f32)> = Vec::new();
                for (other, partition) in self.partitions.iter().enumerate() {
                    if other == d {
                        continue;
                    }
                    for u in 0..partition.template_count() {
                        nearest.push((other, u, dot(vector, partition.centroid(u))));
                    }
                }
                let keep = STRING_CANDIDATES.min(nearest.len());
                if keep == 0 {
                    return f32::MIN;
                }
                nearest.select_nth_unstable_by(keep - 1, |a, b| b.2.total_cmp(&a.2));
                nearest.truncate(keep);
                let query =
                    PreparedQuery::new(&self.catalog.datasources[d].templates[t].nl_examples[e]);
                nearest
                    .iter()
                    .map(|&(other, u, cosine)| {
                        let string = if strings.enabled {
                            template_similarity(&query, &texts[other][u], strings)
                        } else {
                            0.0
                        };
                        (embedding_weight * cosine + string_weight * string) / total_weight
                    })
                    .fold(f32::MIN, f32::max)
            })
            .collect();
        best.retain(|&v| v > f32::MIN);
        if best.is_empty() {
            return None;
        }
        best.sort_by(f32::total_cmp);
        let threshold = best[best.len() / 2];
        Some(Calibration {
            threshold,
            examples: best.len(),
            embedding_weight,
            string_similarity: strings.clone(),
        })
    }

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
        .map_err(|e| Error::index("(memory)", format!("cannot serialise the index: {e}")))?;

        let mut out = Vec::with_capacity(body_bytes.len() + manifest.len() + 64);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(manifest.len() as u32).to_le_bytes());
        out.extend_from_slice(&manifest);
        out.extend_from_slice(&(body_bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(&body_bytes);
        let checksum = Sha256::digest(&out);
        out.extend_from_slice(&checksum);
        Ok(out)
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        // Write beside, then rename, so a reader never sees half an artifact.
        let partial = path.with_extension("partial");
        std::fs::write(&partial, &bytes).map_err(|e| Error::io(&partial, e))?;
        std::fs::rename(&partial, path).map_err(|e| Error::io(path, e))
    }

    pub fn read(path: &Path) -> Result<Index> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Index::from_bytes(&bytes, &path.display().to_string())
    }

    /// Parse and verify an artifact; `origin` (a path or `s3://bucket/key`) names it in errors.
    pub fn from_bytes(bytes: &[u8], origin: &str) -> Result<Index> {
        let fail = |problem: String| Error::index(origin, problem);
        let header = MAGIC.len() + 8;
        if bytes.len() < header + 8 + CHECKSUM_LEN {
            return Err(fail(format!(
                "truncated: {} bytes is too short for an index artifact",
                bytes.len()
            )));
        }
        if &bytes[..MAGIC.len()] != MAGIC {
            return Err(fail("not a Switchyard index (bad magic bytes)".into()));
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if version != FORMAT_VERSION {
            return Err(fail(format!(
                "format version {version}, this build reads version {FORMAT_VERSION}; rebuild the index"
            )));
        }
        let manifest_len = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) as usize;
        let body_len_at = header + manifest_len;
        if bytes.len() < body_len_at + 8 + CHECKSUM_LEN {
            return Err(fail("truncated inside the manifest".into()));
        }
        let body_len = u64::from_le_bytes(
            bytes[body_len_at..body_len_at + 8]
                .try_into()
                .expect("8 bytes"),
        ) as usize;
        let body_at = body_len_at + 8;
        let expected_len = body_at
            .checked_add(body_len)
            .and_then(|n| n.checked_add(CHECKSUM_LEN));
        if expected_len != Some(bytes.len()) {
            return Err(fail(format!(
                "truncated or padded: the header promises {} bytes, the artifact has {}",
                expected_len.map_or_else(|| "too many".to_owned(), |n| n.to_string()),
                bytes.len()
            )));
        }
        let sealed = bytes.len() - CHECKSUM_LEN;
        if Sha256::digest(&bytes[..sealed]).as_slice() != &bytes[sealed..] {
            return Err(fail("checksum mismatch: the artifact is corrupt".into()));
        }
        let manifest: Manifest = serde_json::from_slice(&bytes[header..body_len_at])
            .map_err(|e| fail(format!("bad manifest: {e}")))?;
        let body: Body = postcard::from_bytes(&bytes[body_at..body_at + body_len])
            .map_err(|e| fail(format!("bad body: {e}")))?;
        let catalog: Catalog = serde_json::from_str(&body.catalog_json)
            .map_err(|e| fail(format!("bad catalog: {e}")))?;

        if catalog.content_hash() != manifest.templates_hash {
            return Err(fail(
                "the catalog does not match the manifest's templates_hash".into(),
            ));
        }
        let counts_match = manifest.datasources.len() == body.partitions.len()
            && catalog.datasources.len() == body.partitions.len()
            && manifest
                .datasources
                .iter()
                .zip(&body.partitions)
                .zip(&catalog.datasources)
                .all(|((m, p), d)| {
                    m.name == p.datasource
                        && m.name == d.spec.name
                        && m.templates == p.template_count()
                        && m.templates == d.templates.len()
                        && m.vectors == p.vector_count()
                        && p.dimension == manifest.dimension
                        && p.vectors.len() % manifest.dimension.max(1) == 0
                        && p.centroids.len() == p.template_count() * manifest.dimension
                        && p.negatives.len() == d.spec.negative_examples.len() * manifest.dimension
                        && p.offsets
                            .last()
                            .is_some_and(|&n| n as usize == p.vector_count())
                });
        if !counts_match {
            return Err(fail(
                "the manifest's datasources and counts do not match the partitions".into(),
            ));
        }
        let templates = catalog.template_count();
        let head_matches = match (&body.head, &manifest.head) {
            (None, None) => true,
            (Some(head), Some(summary)) => {
                head.dimension == manifest.dimension
                    && head.templates() == templates
                    && summary.templates == templates
                    && head.weights.len() == templates * manifest.dimension
            }
            _ => false,
        };
        if !head_matches {
            return Err(fail(
                "the learned head does not match the manifest and the catalog".into(),
            ));
        }
        let mut partitions = body.partitions;
        for partition in &mut partitions {
            partition.coarse = Coarse::of(&partition.centroids, partition.dimension);
        }
        Ok(Index {
            manifest,
            catalog,
            partitions,
            head: body.head,
            head_training_ms: None,
        })
    }

    /// Refuse an embedder other than the one that built the index.
    pub fn check_embedder(&self, embedder: &dyn Embedder, origin: &str) -> Result<()> {
        if embedder.model_id() != self.manifest.model_id
            || embedder.dimension() != self.manifest.dimension
        {
            return Err(Error::index(
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
        Ok(())
    }
}

#[derive(Serialize)]
struct BodyRef<'a> {
    catalog_json: &'a str,
    partitions: &'a [Partition],
    head: &'a Option<Head>,
}

fn build_time() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        })
}

/// Where a built index for `catalog` is cached: the key covers the templates, the model,
/// the index settings and the format, so any change builds a fresh one.
pub fn cache_path(
    cache_dir: &Path,
    templates_dir: &Path,
    catalog: &Catalog,
    model_id: &str,
    config: &Config,
) -> std::path::PathBuf {
    let mut hasher = Sha256::new();
    hasher.update(catalog.content_hash());
    hasher.update(model_id);
    hasher.update(serde_json::to_vec(&config.index).expect("serialisable"));
    hasher.update(FORMAT_VERSION.to_le_bytes());
    let key = hex::encode(hasher.finalize());
    let name = templates_dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "catalog".to_owned());
    cache_dir
        .join("index")
        .join(format!("{name}-{}.idx", &key[..16]))
}

/// Load the catalog in `templates_dir`, then reuse its cached index or build and cache one.
/// Returns the index and whether it was built now.
pub fn load_or_build(
    templates_dir: &Path,
    cache_dir: &Path,
    embedder: &dyn Embedder,
    config: &Config,
    progress: Progress<'_>,
) -> Result<(Index, bool)> {
    let catalog = Catalog::load(templates_dir)?;
    let path = cache_path(
        cache_dir,
        templates_dir,
        &catalog,
        embedder.model_id(),
        config,
    );
    if path.is_file() {
        match Index::read(&path) {
            Ok(index) if index.manifest.templates_hash == catalog.content_hash() => {
                return Ok((index, false))
            }
            Ok(_) => tracing::warn!(path = %path.display(), "cached index is stale; rebuilding"),
            Err(e) => tracing::warn!(error = %e, "cached index unreadable; rebuilding"),
        }
    }
    let index = Index::build(catalog, embedder, config, progress)?;
    index.write(&path)?;
    Ok((index, true))
}

/// Where the router gets its index artifact's bytes: a file locally, S3 on AWS
/// (`switchyard-aws`). `origin` names the place for errors and logs.
pub trait IndexSource: Send + Sync {
    fn origin(&self) -> String;
    fn fetch(&self) -> impl std::future::Future<Output = Result<Vec<u8>>> + Send;
}

/// An artifact on the local file system.
pub struct FileIndexSource(pub PathBuf);

impl IndexSource for FileIndexSource {
    fn origin(&self) -> String {
        self.0.display().to_string()
    }

    async fn fetch(&self) -> Result<Vec<u8>> {
        std::fs::read(&self.0).map_err(|e| Error::io(&self.0, e))
    }
}
