//! Our candle embedder against sentence-transformers' own output.

use std::path::Path;

use serde::Deserialize;
use switchyard_core::config::Config;
use switchyard_core::embed::Embedder;
use switchyard_embed::MiniLmEmbedder;

#[derive(Deserialize)]
struct Reference {
    model: String,
    items: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    text: String,
    embedding: Vec<f32>,
}

#[test]
fn vectors_match_sentence_transformers_to_1e5() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/minilm-reference.json");
    let reference: Reference =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let dir = Config::default().embedding.resolved_model_dir();
    let embedder = MiniLmEmbedder::load(&dir, 32).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reference.model, embedder.model_id());

    // One batch of texts of different lengths: padding must not change any vector.
    let texts: Vec<&str> = reference.items.iter().map(|i| i.text.as_str()).collect();
    let batched = embedder.embed(&texts).unwrap();
    for (item, vector) in reference.items.iter().zip(&batched) {
        assert_eq!(vector.len(), item.embedding.len());
        let worst = vector
            .iter()
            .zip(&item.embedding)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "{:?}: max difference {worst}", item.text);
        let single = embedder.embed_one(&item.text).unwrap();
        let drift = single
            .iter()
            .zip(vector)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            drift < 1e-5,
            "{:?}: batched and single differ by {drift}",
            item.text
        );
    }
}

#[test]
fn missing_model_names_the_fetch_command() {
    let dir = tempfile::tempdir().unwrap();
    let error = MiniLmEmbedder::load(dir.path(), 8)
        .err()
        .expect("an empty folder holds no model")
        .to_string();
    assert!(error.contains("fetch-model.sh"), "{error}");
    assert!(error.contains("model.safetensors"), "{error}");
    assert!(error.contains(&dir.path().display().to_string()), "{error}");
}
