//! Does the model at hand embed as the one that built the index did?
//!
//! A model id names the model, not the numbers it gives on a CPU: the same ONNX file can
//! give other vectors on another machine (another runtime library, other int8 kernels) or
//! the file can be replaced under the same id. The builder records the vectors of a few
//! fixed probe sentences in the manifest; whoever loads the index (router cold start,
//! `serve`, the CLI) embeds them again and compares. Each probe is embedded alone, so its
//! vector depends neither on `embedding.batch_size` nor on other texts.

use serde::{Deserialize, Serialize};

use crate::config::DriftConfig;
use crate::error::IndexError;
use switchyard_vectors::embed::{dot, Embedder};
use switchyard_vectors::error::Result;

/// Short and long, questions and statements, digits and punctuation: sentences that
/// exercise what the tokenizer and every layer do.
pub const PROBE_TEXTS: [&str; 8] = [
    "How many people work in the Engineering department?",
    "what's the weather like in Paris tomorrow",
    "Transfer $250 from checking to savings, please.",
    "cancel",
    "Which flights leave Boston for Denver after 5 pm on Friday, and how much do they cost?",
    "I'd like to book a table for 2 at an Italian restaurant.",
    "The quick brown fox jumps over the lazy dog.",
    "translate 'good morning' into Spanish",
];

/// One probe sentence and its vector as the index's builder computed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub text: String,
    pub vector: Vec<f32>,
}

/// Embed every probe sentence, one at a time.
pub fn embed_probes(embedder: &dyn Embedder) -> Result<Vec<Probe>> {
    PROBE_TEXTS
        .iter()
        .map(|text| {
            Ok(Probe {
                text: (*text).to_owned(),
                vector: embedder.embed_one(text)?,
            })
        })
        .collect()
}

/// What the drift check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftStatus {
    /// Every probe at or above `embedding.drift.warn_below`.
    Same,
    /// Some probe below `warn_below` (but not below `refuse_below`): served, with a warning.
    Drifted,
    /// The index records no probes (built from given vectors): nothing to compare.
    NotRecorded,
}

/// The drift check's result, kept by the router for `/v1/health` and the start-up log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    pub status: DriftStatus,
    pub model_id: String,
    pub probes: usize,
    /// Lowest and mean cosine between a probe's recorded and recomputed vectors.
    pub min_cosine: Option<f32>,
    pub mean_cosine: Option<f32>,
    /// The tolerance in force.
    pub warn_below: f32,
    /// How long embedding the probes took.
    pub check_ms: f64,
}

/// Compare `recorded` probes with what `embedder` gives now. Below `refuse_below` the
/// model is not the builder's: an error naming both models and the cosine.
pub fn check(
    recorded: &[Probe],
    index_model_id: &str,
    embedder: &dyn Embedder,
    tolerance: &DriftConfig,
    origin: &str,
) -> std::result::Result<Drift, IndexError> {
    let started = std::time::Instant::now();
    let mut drift = Drift {
        status: DriftStatus::NotRecorded,
        model_id: embedder.model_id().to_owned(),
        probes: recorded.len(),
        min_cosine: None,
        mean_cosine: None,
        warn_below: tolerance.warn_below,
        check_ms: 0.0,
    };
    if recorded.is_empty() {
        return Ok(drift);
    }
    let mut cosines = Vec::with_capacity(recorded.len());
    for probe in recorded {
        let now = embedder.embed_one(&probe.text)?;
        if now.len() != probe.vector.len() {
            return Err(IndexError::model(
                origin,
                format!(
                    "probe `{}` was recorded with {} dimensions, the model gives {}",
                    probe.text,
                    probe.vector.len(),
                    now.len()
                ),
            ));
        }
        cosines.push(dot(&now, &probe.vector));
    }
    drift.check_ms = started.elapsed().as_secs_f64() * 1000.0;
    let min = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
    drift.min_cosine = Some(min);
    drift.mean_cosine = Some(mean);
    if min < tolerance.refuse_below {
        return Err(IndexError::model(
            origin,
            format!(
                "built with {index_model_id}, whose probe sentences the model at hand ({}) embeds at \
                 cosine {min:.4} (below embedding.drift.refuse_below {}): it is another model under \
                 that id; rebuild the index with this model, or load the builder's",
                embedder.model_id(),
                tolerance.refuse_below
            ),
        ));
    }
    drift.status = if min < tolerance.warn_below {
        DriftStatus::Drifted
    } else {
        DriftStatus::Same
    };
    Ok(drift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_vectors::embed::HashingEmbedder;

    /// The hashing embedder with every vector turned a little: a CPU with other numerics.
    struct Turned(HashingEmbedder, f32);

    impl Embedder for Turned {
        fn model_id(&self) -> &str {
            self.0.model_id()
        }
        fn dimension(&self) -> usize {
            self.0.dimension()
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            let mut vectors = self.0.embed(texts)?;
            for v in &mut vectors {
                // Mix in a fixed direction, then renormalise.
                v.iter_mut()
                    .enumerate()
                    .for_each(|(i, x)| *x += self.1 * ((i % 7) as f32 - 3.0) / 10.0);
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
            }
            Ok(vectors)
        }
    }

    const TOLERANCE: DriftConfig = DriftConfig {
        warn_below: 0.9999,
        refuse_below: 0.9,
    };

    #[test]
    fn the_builders_own_model_is_the_same() {
        let model = HashingEmbedder::new(384);
        let probes = embed_probes(&model).unwrap();
        assert_eq!(probes.len(), PROBE_TEXTS.len());
        let drift = check(&probes, model.model_id(), &model, &TOLERANCE, "test").unwrap();
        assert_eq!(drift.status, DriftStatus::Same);
        assert!(drift.min_cosine.unwrap() > 0.99999);
    }

    #[test]
    fn a_small_turn_warns_and_a_large_one_refuses() {
        let model = HashingEmbedder::new(384);
        let probes = embed_probes(&model).unwrap();
        let drift = check(&probes, "m", &Turned(model.clone(), 0.01), &TOLERANCE, "t").unwrap();
        assert_eq!(drift.status, DriftStatus::Drifted);
        let min = drift.min_cosine.unwrap();
        assert!(min < 0.9999 && min > 0.9, "cosine {min}");

        let error = check(
            &probes,
            "index-model",
            &Turned(model, 1.0),
            &TOLERANCE,
            "s3://b/k",
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("index-model") && error.contains("hashing-384"),
            "{error}"
        );
        assert!(
            error.contains("s3://b/k") && error.contains("refuse_below"),
            "{error}"
        );
    }

    #[test]
    fn an_index_without_probes_is_not_checked() {
        let model = HashingEmbedder::new(384);
        let drift = check(&[], "m", &model, &TOLERANCE, "t").unwrap();
        assert_eq!(drift.status, DriftStatus::NotRecorded);
        assert_eq!(drift.min_cosine, None);
    }
}
