//! Learned-head training time (all cores, as `index build` runs): on CLINC150 (150
//! templates, full softmax), and on synthetic catalogs of 1,000 to 5,000 templates with 12
//! texts each, where each text is trained against its `rivals` nearest templates; one full
//! softmax at 1,000 templates for comparison. The big catalogs are timed once, not sampled.
//!
//! Run: `cargo bench -p switchyard-core --bench head` (needs the model:
//! `./infra/scripts/fetch-model.sh`).

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use switchyard_catalog::template::Catalog;
use switchyard_embed::MiniLmEmbedder;
use switchyard_index::config::RouterConfig;
use switchyard_index::index::{DatasourceVectors, Index};
use switchyard_index::synthetic::synthetic_index;

fn clinc() -> Index {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config = RouterConfig::default();
    let embedder = MiniLmEmbedder::from_config(&config.embedding).unwrap_or_else(|e| panic!("{e}"));
    let catalog = Catalog::load(&root.join("templates/clinc150")).unwrap();
    Index::build(catalog, &embedder, &config, &|_, _| {}).unwrap()
}

fn with_rivals(rivals: usize) -> RouterConfig {
    let mut config = RouterConfig::default();
    config.index.learned_head.rivals = rivals;
    config
}

fn benches(c: &mut Criterion) {
    let base = clinc();
    let vectors: Vec<DatasourceVectors> = base
        .partitions
        .iter()
        .map(|p| DatasourceVectors {
            templates: (0..p.template_count())
                .map(|t| p.template_rows(t).map(<[f32]>::to_vec).collect())
                .collect(),
            negatives: Vec::new(),
        })
        .collect();
    let config = RouterConfig::default();
    let mut group = c.benchmark_group("head");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.bench_function("train/clinc150", |b| {
        b.iter(|| {
            let index = Index::from_vectors(
                base.catalog.clone(),
                vectors.clone(),
                &base.manifest.model_id,
                base.manifest.dimension,
                &config,
            );
            assert!(index.head.is_some());
        })
    });
    group.finish();

    let rivals = config.index.learned_head.rivals;
    for (templates, rivals) in [
        (1_000, rivals),
        (1_000, usize::MAX - 1),
        (2_000, rivals),
        (5_000, rivals),
    ] {
        let started = Instant::now();
        let index = synthetic_index(&base, templates, 10, 12, &with_rivals(rivals), 42);
        let head_ms = index.head_training_ms.expect("the head is trained");
        let label = if rivals > templates {
            "full softmax".to_owned()
        } else {
            format!("{rivals} rivals")
        };
        eprintln!(
            "head/train/synthetic_{templates} ({label}): {:.1} s (one build; whole build {:.1} s)",
            head_ms / 1000.0,
            started.elapsed().as_secs_f64()
        );
    }
}

criterion_group!(head, benches);
criterion_main!(head);
