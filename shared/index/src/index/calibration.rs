//! The automatic threshold: the median, over the catalog's `nl_examples`, of each one's
//! best confidence against the other datasources' templates; with an adapted encoder, over
//! the examples its training held out, against every other template.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{is_held_out, Index};
use crate::config::CompositeRetrieval;
use crate::scoring::{confidence, Weights};
use switchyard_text::config::StringSimilarity;
use switchyard_text::similarity::{template_similarity, PreparedQuery, TemplateTexts};
use switchyard_vectors::embed::dot;

/// The automatic threshold and the confidence settings it holds for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub threshold: f32,
    /// How many `nl_examples` the median was taken over.
    pub examples: usize,
    pub embedding_weight: f32,
    pub string_similarity: StringSimilarity,
}

impl Index {
    /// The automatic threshold for `retrieval`'s confidence settings: for each
    /// `nl_example`, its best confidence against the templates of the other datasources
    /// (a question that belongs elsewhere), and the median of those; with an adapted
    /// encoder, for each held-out example against every other template. `None` with a
    /// single datasource (adapted: a single template). Scans at most 4,000 examples,
    /// evenly spread.
    pub fn calibrate(&self, retrieval: &CompositeRetrieval) -> Option<Calibration> {
        const MAX_EXAMPLES: usize = 4000;
        const STRING_CANDIDATES: usize = 8;
        if self.partitions.len() < 2 && self.manifest.encoder.is_none() {
            return None;
        }
        let strings = &retrieval.string_similarity;
        // The decision's own confidence, without a reranker (none runs at build time).
        let weights = Weights::for_stages(retrieval, false);
        let texts = TemplateTexts::of_catalog(&self.catalog);
        // (datasource, template, example number)
        let mut examples: Vec<(usize, usize, usize)> = Vec::new();
        // An adapted encoder was trained to pull its training texts away from other
        // templates: only the examples it did not see measure how far a stranger lands,
        // and against every other template (its own datasource's too), since telling
        // templates apart is what it learned. Measured on CLINC150 validation: against
        // other datasources only, the adapted threshold stayed at the base model's 0.40
        // while out-of-scope questions moved up (recall 78% -> 66%); against every other
        // template it is 0.50 (recall 86%, in-scope 90.8%).
        let adapted = self.manifest.encoder.is_some();
        for (d, datasource) in self.catalog.datasources.iter().enumerate() {
            for (t, template) in datasource.templates.iter().enumerate() {
                let count = template.nl_examples.len();
                examples.extend(
                    (0..count)
                        .filter(|&e| !adapted || is_held_out(e, count))
                        .map(|e| (d, t, e)),
                );
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
                    if other == d && !adapted {
                        continue;
                    }
                    for u in 0..partition.template_count() {
                        if other == d && u == t {
                            continue;
                        }
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
                        let string = strings
                            .enabled
                            .then(|| template_similarity(&query, &texts[other][u], strings));
                        confidence(&weights, cosine, string, None)
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
            embedding_weight: retrieval.scoring.embedding_weight,
            string_similarity: strings.clone(),
        })
    }
}
