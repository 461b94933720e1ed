//! The index artifact: round trip, and refusal of corrupt, truncated or mismatched files.

mod common;

use std::sync::Arc;

use switchyard_catalog::template::Catalog;
use switchyard_index::config::{IndexConfig, RouterConfig, TemplateScoring, TemplateScoringMethod};
use switchyard_index::index::{load_or_build, DatasourceVectors, Index};
use switchyard_routing::router::Router;
use switchyard_vectors::embed::{normalize, Embedder};

fn built() -> (Index, Vec<u8>) {
    let dir = common::small_catalog();
    let catalog = Catalog::load(dir.path()).unwrap();
    let index = Index::build(
        catalog,
        common::embedder().as_ref(),
        &RouterConfig::default(),
        &|_, _| {},
    )
    .unwrap();
    let bytes = index.to_bytes().unwrap();
    (index, bytes)
}

fn refused(bytes: &[u8]) -> String {
    let error = Index::from_bytes(bytes, "s3://bucket/key.idx")
        .err()
        .expect("the artifact is bad");
    // The variant says what is wrong: a bad artifact, not a model mismatch.
    assert!(
        matches!(error, switchyard_vectors::VectorsError::Artifact { .. }),
        "{error:?}"
    );
    error.to_string()
}

#[test]
fn round_trip_keeps_manifest_catalog_and_scores() {
    let (index, bytes) = built();
    let loaded = Index::from_bytes(&bytes, "memory").unwrap();
    assert_eq!(loaded.manifest, index.manifest);
    assert_eq!(loaded.catalog, index.catalog);
    assert_eq!(loaded.manifest.datasources[1].name, "hr");
    assert_eq!(loaded.manifest.datasources[1].templates, 2);
    // Two examples, the description and the id words per template.
    assert_eq!(loaded.manifest.datasources[1].vectors, 8);
    // The learned head travels in the artifact, with the automatic threshold.
    assert!(index.head.is_some() && loaded.head == index.head);
    let summary = loaded.manifest.head.as_ref().unwrap();
    assert_eq!(summary.templates, loaded.catalog.template_count());
    assert!(summary.temperature > 0.0);
    assert!(loaded.manifest.calibration.as_ref().unwrap().threshold > 0.0);
    let query = common::embedder()
        .embed_one("how many people work in sales")
        .unwrap();
    let scoring = RouterConfig::default().composite_retrieval.template_scoring;
    assert_eq!(
        loaded.partitions[1].search(&query, 2, 64, &scoring),
        index.partitions[1].search(&query, 2, 64, &scoring)
    );
}

/// The head's training and the threshold run on rayon: the bytes must not depend on how
/// many threads did the work.
#[test]
fn same_input_builds_same_bytes() {
    std::env::set_var("SOURCE_DATE_EPOCH", "1700000000");
    let on_threads = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(built)
    };
    let (index, first) = on_threads(1);
    let (_, second) = on_threads(3);
    assert!(index.head.is_some());
    assert_eq!(first, second);
}

#[test]
fn flipped_byte_is_a_checksum_mismatch() {
    let (_, mut bytes) = built();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    let message = refused(&bytes);
    assert!(
        message.contains("s3://bucket/key.idx") && message.contains("checksum"),
        "{message}"
    );
}

#[test]
fn truncated_artifact_is_refused() {
    let (_, bytes) = built();
    for cut in [10, 100, bytes.len() - 1] {
        let message = refused(&bytes[..cut]);
        assert!(message.contains("truncated"), "cut at {cut}: {message}");
    }
}

#[test]
fn foreign_file_and_future_version_are_refused() {
    let message = refused(&[b'{'; 200]);
    assert!(message.contains("magic"), "{message}");
    let (_, mut bytes) = built();
    bytes[8] = 99;
    let message = refused(&bytes);
    assert!(message.contains("format version 99"), "{message}");
}

/// A stand-in embedder of another model, to see the router refuse the index.
struct OtherModel;

impl Embedder for OtherModel {
    fn model_id(&self) -> &str {
        "other/model"
    }
    fn dimension(&self) -> usize {
        8
    }
    fn embed(&self, texts: &[&str]) -> switchyard_vectors::error::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|_| vec![0.0; 8]).collect())
    }
}

#[test]
fn index_of_another_model_is_refused_at_start() {
    let (index, _) = built();
    let error = Router::new(
        index,
        RouterConfig::default(),
        Arc::new(OtherModel),
        "s3://b/k",
    )
    .err()
    .expect("mismatched model");
    assert!(
        matches!(
            error,
            switchyard_routing::RoutingError::Index(
                switchyard_index::error::IndexError::Model { .. }
            )
        ),
        "{error:?}"
    );
    let error = error.to_string();
    assert!(
        error.contains("s3://b/k")
            && error.contains("all-MiniLM-L6-v2")
            && error.contains("other/model"),
        "{error}"
    );
}

#[test]
fn cache_is_reused_and_rebuilt_when_templates_change() {
    let catalog_dir = common::small_catalog();
    let cache = tempfile::tempdir().unwrap();
    let embedder = common::embedder();
    let config = RouterConfig::default();
    let build = || {
        load_or_build(
            catalog_dir.path(),
            cache.path(),
            embedder.as_ref(),
            None,
            &config,
            &|_, _| {},
        )
        .unwrap()
    };
    let (_, built_now) = build();
    assert!(built_now);
    let (_, built_again) = build();
    assert!(!built_again, "the cached index is reused");
    let templates = catalog_dir.path().join("hr/templates.yaml");
    let text = std::fs::read_to_string(&templates).unwrap();
    std::fs::write(
        &templates,
        text.replace("Top five salaries", "Top ten salaries"),
    )
    .unwrap();
    let (index, rebuilt) = build();
    assert!(rebuilt, "a template change builds a new index");
    assert!(index.catalog.datasources[1].templates[1].nl_examples[1].contains("ten"));
}

/// Noisy copies of a few base directions: clustered like real embeddings.
fn clustered_vectors(
    templates: usize,
    rows: usize,
    dimension: usize,
    seed: u64,
) -> Vec<Vec<Vec<f32>>> {
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f32 / (1u64 << 53) as f32 - 0.5
    };
    let bases: Vec<Vec<f32>> = (0..40)
        .map(|_| (0..dimension).map(|_| next()).collect())
        .collect();
    (0..templates)
        .map(|t| {
            let centre: Vec<f32> = bases[t % bases.len()]
                .iter()
                .map(|x| x + 0.6 * next())
                .collect();
            (0..rows)
                .map(|_| {
                    let mut v: Vec<f32> = centre.iter().map(|x| x + 0.3 * next()).collect();
                    normalize(&mut v);
                    v
                })
                .collect()
        })
        .collect()
}

#[test]
fn graph_search_finds_what_an_exact_scan_finds() {
    let templates = 3000;
    let dimension = 64;
    let yaml: String = (0..templates)
        .map(|t| format!("  - id: t{t}\n    description: template {t}\n    nl_examples: [a, b]\n"))
        .collect();
    let dir = common::catalog(&[
        (
            "big/datasource.yaml",
            "name: big\nkind: intent\ndescription: many templates\n",
        ),
        ("big/templates.yaml", &format!("templates:\n{yaml}")),
    ]);
    let catalog = Catalog::load(dir.path()).unwrap();
    let vectors = vec![DatasourceVectors {
        templates: clustered_vectors(templates, 3, dimension, 7),
        negatives: Vec::new(),
    }];
    let with_index = |index: IndexConfig| RouterConfig {
        index,
        ..RouterConfig::default()
    };
    let graph_config = with_index(IndexConfig {
        exact_scan_max_templates: 100,
        ..RouterConfig::default().index
    });
    let exact_config = with_index(IndexConfig {
        exact_scan_max_templates: usize::MAX,
        ..RouterConfig::default().index
    });
    let graph = Index::from_vectors(
        catalog.clone(),
        vectors.clone(),
        "m",
        dimension,
        &graph_config,
    );
    let exact = Index::from_vectors(catalog, vectors.clone(), "m", dimension, &exact_config);
    assert!(graph.partitions[0].uses_graph() && !exact.partitions[0].uses_graph());

    let scoring = TemplateScoring {
        method: TemplateScoringMethod::Max,
        max_weight: 1.0,
    };
    let queries = clustered_vectors(300, 1, dimension, 99);
    let found = queries
        .iter()
        .filter(|q| {
            let q = &q[0];
            graph.partitions[0].search(q, 1, 64, &scoring)[0].0
                == exact.partitions[0].search(q, 1, usize::MAX, &scoring)[0].0
        })
        .count();
    // Measured 300 of 300 with the default graph settings (ef_search 128, ef_construction
    // 400; 95 of 100 was the bound for the earlier 96 / 100): the bound is the 99% the
    // scale table asks of 100,000 templates, three misses.
    assert!(found >= 297, "top-1 recall of the graph: {found}/300");
}

/// Two templates the texts cannot tell apart, one with five times the other's examples:
/// by count the head learns the larger one's share as a prior (log-odds 0.45 here for a
/// question both fit); `balance_templates` weighs every template alike and
/// that lead goes (-0.83 here: the smaller one's examples are all in both).
#[test]
fn balanced_templates_do_not_learn_their_example_counts_as_a_prior() {
    let examples = |n: usize| -> String {
        [
            "Play a song for me",
            "Put on some music",
            "I want to hear a track",
            "Play something by the Beatles",
            "Start the music please",
            "Can you play a tune",
            "Play me a song",
            "Put a track on",
            "I'd like to listen to music",
            "Play some songs",
        ][..n]
            .iter()
            .map(|e| format!("      - {e}\n"))
            .collect()
    };
    let templates = format!(
        "templates:\n  - id: play_song\n    description: Play a song\n    nl_examples:\n{}  - id: play_media\n    description: Play a song\n    nl_examples:\n{}",
        examples(2),
        examples(10)
    );
    let dir = common::catalog(&[
        (
            "music/datasource.yaml",
            "name: music\nkind: intent\ndescription: Music\n",
        ),
        ("music/templates.yaml", &templates),
        ("hr/datasource.yaml", common::HR_DATASOURCE),
        ("hr/templates.yaml", common::HR_TEMPLATES),
    ]);
    let odds = |balance: bool| -> f32 {
        // Both settings: the test compares them (the default is `false`).
        let mut config = RouterConfig::default();
        config.index.learned_head.balance_templates = balance;
        let catalog = Catalog::load(dir.path()).unwrap();
        let index =
            Index::build(catalog, common::embedder().as_ref(), &config, &|_, _| {}).unwrap();
        let query = common::embedder().embed_one("play a song").unwrap();
        let head = index.head.as_ref().unwrap();
        // The head numbers templates in catalog order.
        let number = |id: &str| {
            index
                .catalog
                .datasources
                .iter()
                .flat_map(|d| &d.templates)
                .position(|t| t.id == id)
                .unwrap_or_else(|| panic!("{id} not in the catalog"))
        };
        let logits = head.logits(&query, 0..head.templates());
        // The log-odds of the larger template over the smaller one.
        logits[number("play_media")] - logits[number("play_song")]
    };
    let (by_count, balanced) = (odds(false), odds(true));
    assert!(
        by_count > 0.2,
        "the larger template leads by count: {by_count}"
    );
    assert!(
        balanced < by_count - 0.5,
        "balanced {balanced} against {by_count} by count"
    );
}
