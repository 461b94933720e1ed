//! Routing benchmarks, one thread (RAYON_NUM_THREADS=1, as on a 1-vCPU Lambda):
//! query embedding; search + scoring over the CLINC150 catalog and synthetic catalogs of
//! 10,000 and 100,000 templates; exact centroid scan against the HNSW graph by partition
//! size; index build, serialisation and load for each catalog.
//!
//! Run: `cargo bench -p switchyard-eval --bench routing` (needs the model:
//! `./infra/scripts/fetch-model.sh`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use switchyard_catalog::auth::Access;
use switchyard_catalog::template::Catalog;
use switchyard_embed::MiniLmEmbedder;
use switchyard_eval::load_dataset;
use switchyard_index::config::{IndexConfig, RouterConfig};
use switchyard_index::index::Index;
use switchyard_index::synthetic::synthetic_index;
use switchyard_routing::router::Router;
use switchyard_vectors::embed::Embedder;

struct Fixture {
    embedder: Arc<dyn Embedder>,
    clinc: Index,
    queries: Vec<(String, Vec<f32>)>,
}

fn fixture() -> Fixture {
    // Before any rayon pool exists.
    std::env::set_var("RAYON_NUM_THREADS", "1");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config = RouterConfig::default();
    let embedder: Arc<dyn Embedder> =
        Arc::new(MiniLmEmbedder::from_config(&config.embedding).unwrap_or_else(|e| panic!("{e}")));
    let catalog = Catalog::load(&root.join("templates/clinc150")).unwrap();
    let clinc = Index::build(catalog, embedder.as_ref(), &config, &|_, _| {}).unwrap();
    let dataset = load_dataset(&root.join("tests/data/clinc150/val.jsonl")).unwrap();
    let texts: Vec<&str> = dataset
        .iter()
        .step_by(15)
        .map(|q| q.text.as_str())
        .collect();
    let vectors = embedder.embed(&texts).unwrap();
    let queries = texts.iter().map(|t| t.to_string()).zip(vectors).collect();
    Fixture {
        embedder,
        clinc,
        queries,
    }
}

fn router(index: Index, fixture: &Fixture) -> Router {
    Router::new(
        index,
        RouterConfig::default(),
        fixture.embedder.clone(),
        "bench",
    )
    .unwrap()
}

fn synthetic(fixture: &Fixture, templates: usize, config: &RouterConfig) -> Index {
    synthetic_index(&fixture.clinc, templates, 10, 4, config, 42)
}

fn benches(c: &mut Criterion) {
    let fixture = fixture();
    let config = RouterConfig::default();

    c.bench_function("embed_query", |b| {
        b.iter(|| {
            fixture
                .embedder
                .embed_one("can you tell me how much money is in my checking account")
                .unwrap()
        })
    });

    // Catalogs are built only when their benchmark is selected (100,000 takes minutes).
    let mut search = c.benchmark_group("search_and_scoring");
    for (name, templates) in [
        ("clinc150", 0usize),
        ("synthetic_10k", 10_000),
        ("synthetic_100k", 100_000),
    ] {
        let router = std::cell::OnceCell::new();
        let mut i = 0;
        search.bench_function(name, |b| {
            let router = router.get_or_init(|| {
                let index = if templates == 0 {
                    Index::from_bytes(&fixture.clinc.to_bytes().unwrap(), name).unwrap()
                } else {
                    synthetic(&fixture, templates, &config)
                };
                self::router(index, &fixture)
            });
            b.iter(|| {
                let (text, vector) = &fixture.queries[i % fixture.queries.len()];
                i += 1;
                router.route_vector(text, vector, &Access::All).unwrap()
            })
        });
    }
    search.finish();

    // Where does the graph start to beat an exact scan of the centroids? One partition.
    let mut crossover = c.benchmark_group("partition_search");
    for size in [500usize, 1000, 2000, 5000, 10_000] {
        for (mode, exact_max) in [("exact", usize::MAX), ("hnsw", 0)] {
            let index_config = RouterConfig {
                index: IndexConfig {
                    exact_scan_max_templates: exact_max,
                    ..config.index.clone()
                },
                ..config.clone()
            };
            let index = std::cell::OnceCell::new();
            let scoring = config.composite_retrieval.template_scoring;
            let mut i = 0;
            crossover.bench_function(BenchmarkId::new(mode, size), |b| {
                let index = index
                    .get_or_init(|| synthetic_index(&fixture.clinc, size, 1, 4, &index_config, 7));
                b.iter(|| {
                    let (_, vector) = &fixture.queries[i % fixture.queries.len()];
                    i += 1;
                    index.partitions[0].search(vector, 3, config.index.candidate_pool, &scoring)
                })
            });
        }
    }
    crossover.finish();

    let mut build = c.benchmark_group("index");
    build
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for (name, templates) in [("synthetic_10k", 10_000usize), ("synthetic_100k", 100_000)] {
        // 100,000 templates build in minutes on one thread: timed once, not sampled.
        if templates >= 100_000 {
            let start = Instant::now();
            let index = synthetic(&fixture, templates, &config);
            eprintln!(
                "index/build/{name}: {:.1} s (one build)",
                start.elapsed().as_secs_f64()
            );
            let bytes = index.to_bytes().unwrap();
            let start = Instant::now();
            Index::from_bytes(&bytes, name).unwrap();
            eprintln!(
                "index/load/{name}: {:.0} ms (one load), artifact {} bytes",
                start.elapsed().as_secs_f64() * 1000.0,
                bytes.len()
            );
            continue;
        }
        build.bench_function(BenchmarkId::new("build", name), |b| {
            b.iter(|| synthetic(&fixture, templates, &config))
        });
        let bytes = synthetic(&fixture, templates, &config).to_bytes().unwrap();
        eprintln!("{name}: artifact {} bytes", bytes.len());
        build.bench_function(BenchmarkId::new("load", name), |b| {
            b.iter(|| Index::from_bytes(&bytes, name).unwrap())
        });
    }
    let clinc_bytes = fixture.clinc.to_bytes().unwrap();
    eprintln!("clinc150: artifact {} bytes", clinc_bytes.len());
    build.bench_function(BenchmarkId::new("load", "clinc150"), |b| {
        b.iter(|| Index::from_bytes(&clinc_bytes, "clinc").unwrap())
    });
    build.bench_function(BenchmarkId::new("build_with_embedding", "clinc150"), |b| {
        b.iter(|| {
            Index::build(
                fixture.clinc.catalog.clone(),
                fixture.embedder.as_ref(),
                &config,
                &|_, _| {},
            )
            .unwrap()
        })
    });
    build.finish();
}

criterion_group!(routing, benches);
criterion_main!(routing);
