//! One datasource's search partition: its texts' unit vectors, the template centroids
//! (with an i8 copy for the exact scan) and, for large partitions, an HNSW graph over the
//! i8 centroids; candidates are rescored exactly (f32) on all their vectors.

use std::cell::RefCell;

use instant_distance::{Builder, HnswMap, Search};
use serde::{Deserialize, Serialize};

use super::DatasourceVectors;
use crate::bytes;
use crate::config::{IndexConfig, TemplateScoring, TemplateScoringMethod};
use switchyard_vectors::embed::{dot, dot_i8, normalize};

/// A point in the HNSW graph: a template centroid quantised to i8 (the exact scan's
/// codes), a quarter of an f32 copy's memory and artifact bytes (115 MB at 100,000
/// templates). Distance is 1 − the cosine of the codes; candidates are rescored in f32.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Code {
    scale: f32,
    #[serde(with = "bytes::i8s")]
    codes: Vec<i8>,
}

impl Code {
    fn of(vector: &[f32]) -> Code {
        let (scale, codes) = quantize(vector);
        Code { scale, codes }
    }
}

impl instant_distance::Point for Code {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - dot_i8(&self.codes, &other.codes) as f32 * self.scale * other.scale
    }
}

thread_local! {
    /// The graph's search state (a visited mark per point), kept between a thread's
    /// searches instead of allocated and cleared for each.
    static SEARCH: RefCell<Search> = RefCell::new(Search::default());
}

#[derive(Serialize, Deserialize)]
pub struct Partition {
    pub datasource: String,
    pub(super) dimension: usize,
    /// Row-major unit vectors; template `t` owns rows `offsets[t]..offsets[t + 1]`.
    #[serde(with = "bytes::f32s")]
    pub(super) vectors: Vec<f32>,
    pub(super) offsets: Vec<u32>,
    /// One unit centroid per template, row-major.
    #[serde(with = "bytes::f32s")]
    pub(super) centroids: Vec<f32>,
    /// One unit vector per negative example of the datasource, row-major, in their order.
    #[serde(with = "bytes::f32s")]
    pub(super) negatives: Vec<f32>,
    pub(super) graph: Option<HnswMap<Code, u32>>,
    /// The centroids quantised to i8 for the exact scan (a quarter of the memory traffic);
    /// derived from `centroids` when a partition without a graph is built or loaded,
    /// never stored (a graph holds its own codes).
    #[serde(skip)]
    pub(super) coarse: Coarse,
}

/// i8 codes with one scale per vector: `value ≈ code * scale`.
#[derive(Default)]
pub(super) struct Coarse {
    codes: Vec<i8>,
    scales: Vec<f32>,
}

impl Coarse {
    pub(super) fn of(vectors: &[f32], dimension: usize) -> Coarse {
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

impl Partition {
    pub(super) fn build(
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
            let points: Vec<Code> = centroids.chunks_exact(dimension).map(Code::of).collect();
            let values: Vec<u32> = (0..templates.len() as u32).collect();
            Builder::default()
                .ef_construction(config.hnsw_ef_construction)
                .ef_search(config.hnsw_ef_search.max(config.candidate_pool))
                .seed(config.seed)
                .build(points, values)
        });
        let mut partition = Partition {
            datasource: datasource.to_owned(),
            dimension,
            vectors,
            offsets,
            centroids,
            negatives: source.negatives.concat(),
            graph,
            coarse: Coarse::default(),
        };
        partition.derive_coarse();
        partition
    }

    /// The exact scan's i8 centroids, for a partition searched without a graph.
    pub(super) fn derive_coarse(&mut self) {
        if self.graph.is_none() {
            self.coarse = Coarse::of(&self.centroids, self.dimension);
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

    /// Whether a loaded partition can be searched without indexing out of bounds: a
    /// positive dimension, whole rows, offsets from 0 that never decrease and end at the
    /// last row, a centroid and a graph point per template. (The checksum only proves the
    /// bytes are those written, not that the writer was this code.)
    pub(super) fn is_well_formed(&self) -> bool {
        let d = self.dimension;
        let Some(templates) = self.offsets.len().checked_sub(1) else {
            return false;
        };
        let graph_ok = self.graph.as_ref().is_none_or(|graph| {
            graph.values.len() == templates
                && graph.values.iter().all(|&t| (t as usize) < templates)
                && graph.iter().count() == templates
                && graph.iter().all(|(_, point)| point.codes.len() == d)
        });
        d > 0
            && self.vectors.len().is_multiple_of(d)
            && self.negatives.len().is_multiple_of(d)
            && self.offsets[0] == 0
            && self.offsets.windows(2).all(|w| w[0] <= w[1])
            && self.offsets[templates] as usize == self.vectors.len() / d
            && templates.checked_mul(d) == Some(self.centroids.len())
            && graph_ok
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
            Some(graph) => SEARCH.with_borrow_mut(|search| {
                graph
                    .search(&Code::of(query), search)
                    .take(candidate_pool)
                    .map(|item| *item.value as usize)
                    .collect()
            }),
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
