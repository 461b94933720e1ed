//! Synthetic catalogs for benchmarks: many templates whose vectors are noisy copies of
//! real example vectors, so they cluster like real embeddings. (Uniformly random unit
//! vectors are a pathological case for HNSW and say nothing about real catalogs.)

use crate::config::RouterConfig;
use crate::index::{DatasourceVectors, Index};
use switchyard_catalog::template::{
    Catalog, Datasource, DatasourceKind, DatasourceSpec, Limits, Template,
};
use switchyard_vectors::embed::normalize;

/// A small deterministic generator (xorshift64*), so synthetic catalogs are reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f32 {
        let u = self.uniform().max(1e-7);
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f32::consts::PI * v).cos()
    }
}

/// Add Gaussian noise of total norm about `noise` to a unit vector and renormalise
/// (noise 0.6 leaves a cosine of about 0.86 to the original).
pub fn jitter(vector: &[f32], noise: f32, rng: &mut Rng) -> Vec<f32> {
    let sigma = noise / (vector.len() as f32).sqrt();
    let mut out: Vec<f32> = vector.iter().map(|x| x + sigma * rng.normal()).collect();
    normalize(&mut out);
    out
}

/// A catalog of `templates` templates over `datasources` intent datasources, each template
/// with `rows` vectors jittered from a random real template of `base`.
pub fn synthetic_index(
    base: &Index,
    templates: usize,
    datasources: usize,
    rows: usize,
    config: &RouterConfig,
    seed: u64,
) -> Index {
    let mut rng = Rng::new(seed);
    let sources: Vec<(usize, usize)> = base
        .partitions
        .iter()
        .enumerate()
        .flat_map(|(d, p)| (0..p.template_count()).map(move |t| (d, t)))
        .collect();
    let per_source = templates.div_ceil(datasources);
    let mut catalog = Catalog {
        datasources: Vec::new(),
    };
    let mut vectors = Vec::new();
    for d in 0..datasources {
        let count = per_source.min(templates - d * per_source);
        let mut spec_templates = Vec::with_capacity(count);
        let mut spec_vectors = Vec::with_capacity(count);
        for t in 0..count {
            let (bd, bt) = sources[(rng.next_u64() % sources.len() as u64) as usize];
            let origin = &base.catalog.datasources[bd].templates[bt];
            let real: Vec<&[f32]> = base.partitions[bd].template_rows(bt).collect();
            spec_vectors.push(
                (0..rows)
                    .map(|r| jitter(real[r % real.len()], 0.6, &mut rng))
                    .collect(),
            );
            spec_templates.push(Template {
                id: format!("s{d}_{t}_{}", origin.id),
                description: origin.description.clone(),
                nl_examples: origin
                    .nl_examples
                    .iter()
                    .take(rows.saturating_sub(1).max(1))
                    .cloned()
                    .collect(),
                ..origin.clone()
            });
        }
        catalog.datasources.push(Datasource {
            spec: DatasourceSpec {
                name: format!("synthetic{d}"),
                kind: DatasourceKind::Intent,
                description: "synthetic benchmark datasource".into(),
                connection: Default::default(),
                limits: Limits::default(),
                allowed_hosts: Vec::new(),
                function_name: None,
                negative_examples: Vec::new(),
                filters: Vec::new(),
            },
            templates: spec_templates,
        });
        vectors.push(DatasourceVectors {
            templates: spec_vectors,
            negatives: Vec::new(),
        });
    }
    Index::from_vectors(
        catalog,
        vectors,
        &base.manifest.model_id,
        base.manifest.dimension,
        config,
    )
}
