//! What splitting questions costs, one thread, on the demo catalog:
//! - `detect_and_choose`: the seven signals, cutting, and choosing a split from routed
//!   spans (what orchestration adds to every question, the spans' routing excluded);
//! - `route_parts`: the chosen sub-questions' own routing (one embedding batch);
//! - `decompose`: the whole of it, every candidate span embedded and routed.
//!
//! Run: `cargo bench -p switchyard-core --bench orchestration` (needs the model:
//! `./infra/scripts/fetch-model.sh`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use switchyard_catalog::auth::Access;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_core::orchestration::{choose, decompose, spans, Decomposer, Span, SpanRouting};
use switchyard_embed::MiniLmEmbedder;
use switchyard_index::index::Index;
use switchyard_routing::router::{Router, Routing};
use switchyard_vectors::embed::Embedder;

/// Multi-part and single questions over the demo's HR, EV and tools datasources.
const QUESTIONS: &[&str] = &[
    "How many employees work in Sales and what is 15% of 200?",
    "Find the five highest paid people in Sales, then count the Teslas registered in King County",
    "How many employees work in Engineering and what is their average salary?",
    "Who works in Marketing, and how many electric cars are registered in Pierce County?",
    "What is 2 plus 2 and then list the people in HR",
    "How many employees work in Engineering?",
    "List all employees in the Sales department and the HR department",
    "What is the average salary in Finance?",
];

/// One question's routed spans, computed once.
struct Prepared {
    whole: Routing,
    segments: usize,
    routed: HashMap<Span, SpanRouting>,
    parts: Vec<String>,
}

fn benches(c: &mut Criterion) {
    std::env::set_var("RAYON_NUM_THREADS", "1");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config = Config::default();
    let embedder: Arc<dyn Embedder> =
        Arc::new(MiniLmEmbedder::from_config(&config.embedding).unwrap_or_else(|e| panic!("{e}")));
    let catalog = Catalog::load(&root.join("templates/demo")).unwrap();
    let index = Index::build(catalog, embedder.as_ref(), &config.router(), &|_, _| {}).unwrap();
    let router = Router::new(index, config.router(), embedder, "bench").unwrap();
    let orchestration = &config.orchestration;
    let decomposer = Decomposer::new(&router.index().catalog, orchestration);
    let prepared: Vec<Prepared> = QUESTIONS
        .iter()
        .map(|q| {
            let whole = router.route(q, &Access::All).unwrap();
            let segments = decomposer.segments(q, orchestration);
            let routed = spans(segments.len(), orchestration.max_parts)
                .into_iter()
                .map(|(first, end)| {
                    let text = &q[segments[first].start..segments[end - 1].end];
                    let routing = router.route(text, &Access::All).unwrap();
                    ((first, end), SpanRouting::of(&routing))
                })
                .collect();
            let parts = decompose(&router, &decomposer, &whole, &Access::All)
                .unwrap()
                .parts
                .into_iter()
                .map(|p| p.text)
                .collect();
            Prepared {
                whole,
                segments: segments.len(),
                routed,
                parts,
            }
        })
        .collect();

    let mut group = c.benchmark_group("orchestration");
    group.bench_function("detect_and_choose", |b| {
        b.iter(|| {
            for p in &prepared {
                let whole = SpanRouting::of(&p.whole);
                let signals = decomposer.detect(&p.whole.query, whole.confidence, orchestration);
                let segments = decomposer.segments(&p.whole.query, orchestration);
                if signals.considered && segments.len() == p.segments {
                    std::hint::black_box(choose(p.segments, &whole, &p.routed, orchestration));
                }
            }
        })
    });
    group.bench_function("route_parts", |b| {
        b.iter(|| {
            for p in prepared.iter().filter(|p| !p.parts.is_empty()) {
                let texts: Vec<String> = p.parts.iter().map(|t| router.embedding_text(t)).collect();
                let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                let vectors = router.embedder().embed(&texts).unwrap();
                for (text, vector) in p.parts.iter().zip(&vectors) {
                    std::hint::black_box(router.route_vector(text, vector, &Access::All).unwrap());
                }
            }
        })
    });
    group.bench_function("decompose", |b| {
        b.iter(|| {
            for p in &prepared {
                std::hint::black_box(
                    decompose(&router, &decomposer, &p.whole, &Access::All).unwrap(),
                );
            }
        })
    });
    group.finish();
}

criterion_group! {
    name = orchestration;
    config = Criterion::default().sample_size(20);
    targets = benches
}
criterion_main!(orchestration);
