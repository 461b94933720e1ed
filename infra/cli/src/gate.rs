//! Whether an adapted encoder earns its place: `embedding.adaptation.mode: auto` keeps it
//! only when it routes the `nl_examples` its training held out at least as well as the
//! base model does. A catalog whose examples already cover its questions (SGD's, with
//! every training turn) can lose by the adaptation; measured in the README ("The encoder
//! learns the catalog"). The verdict is kept beside the encoder in its cache folder.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use switchyard_catalog::template::Catalog;
use switchyard_index::config::{TemplateScoring, TemplateScoringMethod};
use switchyard_index::index::is_held_out;
use switchyard_vectors::embed::{dot, normalize, Embedder};

/// Bounds on the gate's cost (two models embed at most 2,000 + 100 per template texts).
const MAX_QUERIES: usize = 2000;
const MAX_REFERENCES: usize = 100;
const GATE_FILE: &str = "gate.json";

/// How many held-out examples each model routes to their own template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldOutRouting {
    pub queries: usize,
    pub base: usize,
    pub adapted: usize,
}

impl HeldOutRouting {
    /// Ties keep the adapted encoder: it was the default before the gate.
    pub fn keeps_adapted(&self) -> bool {
        self.adapted >= self.base
    }

    pub fn describe(&self) -> String {
        let share = |n: usize| 100.0 * n as f64 / self.queries.max(1) as f64;
        format!(
            "held-out examples routed right: adapted {:.2}%, base {:.2}% ({} examples)",
            share(self.adapted),
            share(self.base),
            self.queries
        )
    }
}

/// The texts the gate routes (held-out examples, by template) and routes them against
/// (each template's training texts), both evenly thinned to the bounds above.
struct HeldOut {
    references: Vec<Vec<String>>,
    queries: Vec<(usize, String)>,
}

impl HeldOut {
    fn of(catalog: &Catalog, groups: &[Vec<String>]) -> HeldOut {
        let references = groups
            .iter()
            .cloned()
            .map(|group| spread(group, MAX_REFERENCES))
            .collect();
        let queries = catalog
            .datasources
            .iter()
            .flat_map(|d| &d.templates)
            .enumerate()
            .flat_map(|(t, template)| {
                let n = template.nl_examples.len();
                template
                    .nl_examples
                    .iter()
                    .enumerate()
                    .filter(move |&(e, _)| is_held_out(e, n))
                    .map(move |(_, text)| (t, text.clone()))
            })
            .collect();
        HeldOut {
            references,
            queries: spread(queries, MAX_QUERIES),
        }
    }

    /// What the verdict depends on, so that a cached one is reused only for the same.
    fn key(&self, scoring: &TemplateScoring) -> String {
        let key = serde_json::json!({
            "references": self.references,
            "queries": self.queries,
            "scoring": scoring,
        });
        switchyard_adapt::sha256_hex(key.to_string().as_bytes())
    }

    /// How many queries `embedder` routes to their own template.
    fn routed_right(&self, embedder: &dyn Embedder, scoring: &TemplateScoring) -> Result<usize> {
        let texts: Vec<&str> = self
            .references
            .iter()
            .flatten()
            .chain(self.queries.iter().map(|(_, q)| q))
            .map(String::as_str)
            .collect();
        let mut vectors = embedder.embed(&texts)?.into_iter();
        let rows: Vec<Vec<Vec<f32>>> = self
            .references
            .iter()
            .map(|group| vectors.by_ref().take(group.len()).collect())
            .collect();
        let centroids: Vec<Vec<f32>> = rows.iter().map(|r| centroid(r)).collect();
        let score = |t: usize, query: &[f32]| {
            let best = || {
                rows[t]
                    .iter()
                    .map(|r| dot(query, r))
                    .fold(f32::MIN, f32::max)
            };
            let mean = || dot(query, &centroids[t]);
            match scoring.method {
                TemplateScoringMethod::Max => best(),
                TemplateScoringMethod::Centroid => mean(),
                TemplateScoringMethod::Blend => {
                    scoring.max_weight * best() + (1.0 - scoring.max_weight) * mean()
                }
            }
        };
        Ok(self
            .queries
            .iter()
            .zip(vectors)
            .filter(|((own, _), query)| {
                let routed = (0..rows.len())
                    .map(|t| (t, score(t, query)))
                    .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
                routed.map(|(t, _)| t) == Some(*own)
            })
            .count())
    }
}

#[derive(Serialize, Deserialize)]
struct Verdict {
    key: String,
    routing: HeldOutRouting,
}

/// The held-out routing of `adapted` against `base` for `catalog`, whose templates'
/// training texts are `groups` (in the catalog's order): read from `dir`'s verdict when it
/// was measured on the same texts, else measured and written there (`base` loads the base
/// model only then: every CLI call on a catalog passes here). `None` when the
/// catalog holds no example out (templates with fewer than five).
pub fn held_out_routing(
    dir: &Path,
    catalog: &Catalog,
    groups: &[Vec<String>],
    scoring: &TemplateScoring,
    base: &dyn Fn() -> Result<Arc<dyn Embedder>>,
    adapted: &dyn Embedder,
) -> Result<Option<HeldOutRouting>> {
    let held_out = HeldOut::of(catalog, groups);
    if held_out.queries.is_empty() {
        return Ok(None);
    }
    let key = held_out.key(scoring);
    let path = dir.join(GATE_FILE);
    let cached = std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Verdict>(&bytes).ok())
        .filter(|verdict| verdict.key == key);
    if let Some(verdict) = cached {
        return Ok(Some(verdict.routing));
    }
    let routing = HeldOutRouting {
        queries: held_out.queries.len(),
        base: held_out.routed_right(base()?.as_ref(), scoring)?,
        adapted: held_out.routed_right(adapted, scoring)?,
    };
    // Written aside and renamed, so that a build beside this one reads all of it or none;
    // a cache it cannot write costs the next call the measurement, not this one its index.
    let verdict = serde_json::to_vec_pretty(&Verdict { key, routing })?;
    let part = path.with_extension(format!("json.{}.part", std::process::id()));
    let written = std::fs::write(&part, verdict).and_then(|()| std::fs::rename(&part, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&part);
        eprintln!(
            "warning: could not keep the gate's verdict in {}: {e}",
            path.display()
        );
    }
    Ok(Some(routing))
}

/// Every `len / max`-th item (rounded up), so that at most `max` are kept, evenly spread.
fn spread<T>(items: Vec<T>, max: usize) -> Vec<T> {
    let stride = items.len().div_ceil(max).max(1);
    items.into_iter().step_by(stride).collect()
}

fn centroid(rows: &[Vec<f32>]) -> Vec<f32> {
    let mut sum = vec![0.0f32; rows.first().map_or(0, Vec::len)];
    for row in rows {
        sum.iter_mut().zip(row).for_each(|(s, x)| *s += x);
    }
    normalize(&mut sum);
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_vectors::embed::HashingEmbedder;

    /// Each template's `nl_examples` but the held-out ones (the training texts, less the
    /// description and id words `encoder::training_groups` adds).
    fn training_groups(catalog: &Catalog) -> Vec<Vec<String>> {
        catalog
            .datasources
            .iter()
            .flat_map(|d| &d.templates)
            .map(|t| {
                let n = t.nl_examples.len();
                (0..n)
                    .filter(|&e| !is_held_out(e, n))
                    .map(|e| t.nl_examples[e].clone())
                    .collect()
            })
            .collect()
    }

    fn demo() -> Catalog {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
        Catalog::load(&dir).expect("the demo catalog")
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("switchyard-gate-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A pseudo-random unit vector per text (seeded by its bytes): a model that learned
    /// nothing a template's examples share.
    struct Garbled;

    impl Embedder for Garbled {
        fn model_id(&self) -> &str {
            "garbled"
        }
        fn dimension(&self) -> usize {
            HashingEmbedder::DEFAULT_DIMENSION
        }
        fn embed(&self, texts: &[&str]) -> switchyard_vectors::error::Result<Vec<Vec<f32>>> {
            let vector = |text: &str| {
                let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
                });
                let mut v: Vec<f32> = (0..self.dimension())
                    .map(|_| {
                        state = state
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1);
                        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                    })
                    .collect();
                normalize(&mut v);
                v
            };
            Ok(texts.iter().map(|t| vector(t)).collect())
        }
    }

    /// An embedder that fails: a verdict read from the cache never calls it.
    struct Failing;

    impl Embedder for Failing {
        fn model_id(&self) -> &str {
            "failing"
        }
        fn dimension(&self) -> usize {
            384
        }
        fn embed(&self, _: &[&str]) -> switchyard_vectors::error::Result<Vec<Vec<f32>>> {
            Err(switchyard_vectors::VectorsError::embedding(
                "not to be called",
            ))
        }
    }

    /// The default template scoring.
    fn centroids() -> TemplateScoring {
        TemplateScoring {
            method: TemplateScoringMethod::Centroid,
            max_weight: 0.5,
        }
    }

    fn hashing() -> Result<Arc<dyn Embedder>> {
        Ok(Arc::new(HashingEmbedder::new(
            HashingEmbedder::DEFAULT_DIMENSION,
        )))
    }

    fn failing() -> Result<Arc<dyn Embedder>> {
        Ok(Arc::new(Failing))
    }

    #[test]
    fn a_worse_encoder_loses_the_gate_and_the_verdict_is_kept() {
        let catalog = demo();
        let groups = training_groups(&catalog);
        let dir = scratch("worse");
        let scoring = centroids();
        let routing = held_out_routing(&dir, &catalog, &groups, &scoring, &hashing, &Garbled)
            .unwrap()
            .expect("the demo holds examples out");
        assert!(routing.queries >= 5, "{routing:?}");
        assert!(routing.base > routing.adapted, "{routing:?}");
        assert!(!routing.keeps_adapted());
        // Measured once: the same texts read the verdict back without embedding.
        let again =
            held_out_routing(&dir, &catalog, &groups, &scoring, &failing, &Failing).unwrap();
        assert_eq!(again, Some(routing));
        // Another scoring is another measurement.
        let max = TemplateScoring {
            method: TemplateScoringMethod::Max,
            ..scoring
        };
        assert!(held_out_routing(&dir, &catalog, &groups, &max, &failing, &Failing).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_same_encoder_ties_and_keeps_the_adapted_one() {
        let catalog = demo();
        let groups = training_groups(&catalog);
        let dir = scratch("same");
        let scoring = centroids();
        let model = HashingEmbedder::new(HashingEmbedder::DEFAULT_DIMENSION);
        let routing = held_out_routing(&dir, &catalog, &groups, &scoring, &hashing, &model)
            .unwrap()
            .unwrap();
        assert_eq!(routing.base, routing.adapted);
        assert!(routing.keeps_adapted());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn spread_keeps_at_most_max_evenly() {
        let kept = spread((0..10).collect(), 4);
        assert_eq!(kept, vec![0, 3, 6, 9]);
        assert_eq!(spread((0..3).collect::<Vec<_>>(), 4), vec![0, 1, 2]);
    }

    #[test]
    fn a_cache_it_cannot_write_still_gives_the_verdict() {
        let catalog = demo();
        let groups = training_groups(&catalog);
        let dir = scratch("missing");
        let missing = dir.join("no-such-folder");
        let scoring = centroids();
        let routing = held_out_routing(&missing, &catalog, &groups, &scoring, &hashing, &Garbled)
            .unwrap()
            .unwrap();
        assert!(!routing.keeps_adapted(), "{routing:?}");
        assert!(!missing.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ties_keep_the_adapted_encoder() {
        let routing = |base, adapted| HeldOutRouting {
            queries: 10,
            base,
            adapted,
        };
        assert!(routing(7, 7).keeps_adapted());
        assert!(routing(6, 7).keeps_adapted());
        assert!(!routing(8, 7).keeps_adapted());
    }
}
