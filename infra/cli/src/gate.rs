//! Whether an adapted encoder earns its place: `embedding.adaptation.mode: auto` keeps it
//! unless the base model routes the `nl_examples` its training held out better by more
//! than chance: of the examples only one of the two routes right, the base model's share
//! must pass a one-sided sign test at `SIGNIFICANCE`. A small catalog's dozen examples
//! cannot decide it (one example in 14 used to), so it keeps the default. A catalog whose examples already cover its questions (SGD's, with
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

/// The base model must beat the adapted encoder on the examples they disagree on with at
/// most this chance of doing so by luck (one in twenty) before it replaces the default.
const SIGNIFICANCE: f64 = 0.05;

/// How many held-out examples each model routes to their own template, and how many only
/// one of them does (the examples that tell them apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldOutRouting {
    pub queries: usize,
    pub base: usize,
    pub adapted: usize,
    /// Routed right by the base model only ...
    pub base_only: usize,
    /// ... and by the adapted encoder only.
    pub adapted_only: usize,
}

impl HeldOutRouting {
    /// The chance that the base model would win at least `base_only` of the examples they
    /// disagree on if both were as good (an exact one-sided sign test); 1 with none.
    pub fn chance(&self) -> f64 {
        binomial_tail(self.base_only + self.adapted_only, self.base_only)
    }

    /// The adapted encoder stays unless the base model is better beyond chance.
    pub fn keeps_adapted(&self) -> bool {
        self.base_only <= self.adapted_only || self.chance() > SIGNIFICANCE
    }

    pub fn describe(&self) -> String {
        let share = |n: usize| 100.0 * n as f64 / self.queries.max(1) as f64;
        format!(
            "held-out examples routed right: adapted {:.2}%, base {:.2}% ({} examples; right \
             by one only: adapted {}, base {}, chance {:.3})",
            share(self.adapted),
            share(self.base),
            self.queries,
            self.adapted_only,
            self.base_only,
            self.chance()
        )
    }
}

/// P(X >= k) for X ~ Binomial(n, 1/2), summed in logs (n reaches 2,000).
fn binomial_tail(n: usize, k: usize) -> f64 {
    if k == 0 {
        return 1.0;
    }
    let ln2 = std::f64::consts::LN_2;
    // ln C(n, j), from ln C(n, 0) = 0 upwards.
    let mut ln_choose = 0.0f64;
    let mut tail = 0.0f64;
    for j in 0..=n {
        if j > 0 {
            ln_choose += ((n - j + 1) as f64).ln() - (j as f64).ln();
        }
        if j >= k {
            tail += (ln_choose - n as f64 * ln2).exp();
        }
    }
    tail.min(1.0)
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

    /// Which queries `embedder` routes to their own template.
    fn routed_right(
        &self,
        embedder: &dyn Embedder,
        scoring: &TemplateScoring,
    ) -> Result<Vec<bool>> {
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
            .map(|((own, _), query)| {
                let routed = (0..rows.len())
                    .map(|t| (t, score(t, &query)))
                    .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
                routed.map(|(t, _)| t) == Some(*own)
            })
            .collect())
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
    let base = held_out.routed_right(base()?.as_ref(), scoring)?;
    let adapted = held_out.routed_right(adapted, scoring)?;
    let count = |f: &dyn Fn(bool, bool) -> bool| {
        base.iter()
            .zip(&adapted)
            .filter(|(b, a)| f(**b, **a))
            .count()
    };
    let routing = HeldOutRouting {
        queries: held_out.queries.len(),
        base: count(&|b, _| b),
        adapted: count(&|_, a| a),
        base_only: count(&|b, a| b && !a),
        adapted_only: count(&|b, a| a && !b),
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

    fn disagreeing(queries: usize, base_only: usize, adapted_only: usize) -> HeldOutRouting {
        let both = queries - base_only - adapted_only;
        HeldOutRouting {
            queries,
            base: both + base_only,
            adapted: both + adapted_only,
            base_only,
            adapted_only,
        }
    }

    #[test]
    fn only_evidence_replaces_the_adapted_encoder() {
        // MixSNIPS's catalog: 14 examples, base 14, adapted 13. One example is chance.
        let one = disagreeing(14, 1, 0);
        assert!((one.chance() - 0.5).abs() < 1e-9, "{one:?}");
        assert!(one.keeps_adapted());
        // Ties and the adapted encoder ahead keep it.
        assert!(disagreeing(10, 0, 0).keeps_adapted());
        assert!(disagreeing(10, 3, 3).keeps_adapted());
        assert!(disagreeing(10, 0, 4).keeps_adapted());
        // Four against none is 1 in 16: still chance at one in twenty; five is 1 in 32.
        assert!(disagreeing(14, 4, 0).keeps_adapted());
        assert!(!disagreeing(14, 5, 0).keeps_adapted());
        // A clear margin on many examples switches; the same share on few does not.
        assert!(!disagreeing(2000, 60, 30).keeps_adapted());
        assert!(disagreeing(40, 6, 3).keeps_adapted());
    }

    #[test]
    fn the_sign_tests_tail_is_the_binomials() {
        // P(X >= 8), X ~ B(10, 1/2) = (45 + 10 + 1) / 1024.
        assert!((binomial_tail(10, 8) - 56.0 / 1024.0).abs() < 1e-12);
        assert_eq!(binomial_tail(10, 0), 1.0);
        let large = binomial_tail(2000, 1100);
        assert!(large > 0.0 && large < 1e-5, "{large}");
    }
}
