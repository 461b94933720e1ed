//! Adaptation on the real base model (`infra/scripts/fetch-model.sh` puts it in the cache):
//! the candle encoder reproduces sentence-transformers' vectors before training, a few
//! steps pull one template's texts together, and the same seed gives the same weights.

use std::path::PathBuf;

use switchyard_adapt::{file_sha256, Batching, Encoder, Scope, Settings};

fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SWITCHYARD_MODEL_DIR") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    base.join("switchyard/models/all-MiniLM-L6-v2")
}

fn groups() -> Vec<Vec<String>> {
    let texts: [&[&str]; 4] = [
        &[
            "what is my balance",
            "how much money do i have",
            "show my account balance",
            "balance please",
        ],
        &[
            "book a flight to paris",
            "i need a plane ticket",
            "fly me to rome tomorrow",
            "find flights to berlin",
        ],
        &[
            "what's the weather",
            "will it rain today",
            "is it cold outside",
            "forecast for tomorrow",
        ],
        &[
            "play some jazz",
            "put on my workout playlist",
            "play the next song",
            "i want to hear music",
        ],
    ];
    texts
        .iter()
        .map(|g| g.iter().map(|t| t.to_string()).collect())
        .collect()
}

fn settings() -> Settings {
    Settings {
        batch_size: 4,
        max_pairs: 32,
        pairs_per_text: 2,
        learning_rate: 1e-4,
        ..Settings::default()
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn the_base_encoder_matches_sentence_transformers() {
    let reference: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/data/minilm-reference.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let items = reference["items"].as_array().unwrap();
    let texts: Vec<&str> = items.iter().map(|i| i["text"].as_str().unwrap()).collect();
    let encoder = Encoder::load(&model_dir(), &Settings::default()).unwrap();
    let vectors = encoder.embed(&texts).unwrap();
    for (item, vector) in items.iter().zip(&vectors) {
        let expected: Vec<f32> = item["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let norm = expected.iter().map(|v| v * v).sum::<f32>().sqrt();
        let expected: Vec<f32> = expected.iter().map(|v| v / norm).collect();
        // f32 on another kernel: agreement to 1e-5 in cosine, as the ONNX f32 graph's.
        assert!(cosine(vector, &expected) > 0.99999, "{}", item["text"]);
    }
}

#[test]
fn training_pulls_a_template_together_and_repeats_exactly() {
    let dir = model_dir();
    let out = tempfile::tempdir().unwrap();
    let mut shas = Vec::new();
    let probe = ["how much is in my account", "get me a flight to madrid"];
    let mut before_after = Vec::new();
    for run in 0..2 {
        let encoder = Encoder::load(&dir, &settings()).unwrap();
        let before = encoder.embed(&probe).unwrap();
        let anchor_before = encoder.embed(&["what is my balance"]).unwrap();
        let trained = encoder
            .adapt(&groups(), &[], &settings(), Scope::Every, &|_, _, _| {})
            .unwrap();
        assert!(trained.steps >= 4, "{trained:?}");
        let after = encoder.embed(&probe).unwrap();
        let anchor_after = encoder.embed(&["what is my balance"]).unwrap();
        before_after.push((
            cosine(&before[0], &anchor_before[0]),
            cosine(&after[0], &anchor_after[0]),
            cosine(&before[1], &anchor_before[0]),
            cosine(&after[1], &anchor_after[0]),
        ));
        let folder = out.path().join(format!("run{run}"));
        let sha = encoder.save(&folder).unwrap();
        assert_eq!(sha, file_sha256(&folder.join("model.safetensors")).unwrap());
        assert!(folder.join("config.json").is_file() && folder.join("tokenizer.json").is_file());
        shas.push(sha);
    }
    assert_eq!(shas[0], shas[1], "the same seed gives the same weights");
    let (same_before, same_after, other_before, other_after) = before_after[0];
    // An unseen question of the balance template moves towards it; the flight question's
    // margin below it grows.
    assert!(same_after > same_before + 0.01, "{before_after:?}");
    assert!(
        same_after - other_after > same_before - other_before + 0.01,
        "{before_after:?}"
    );

    let other_seed = Encoder::load(&dir, &settings()).unwrap();
    let seeded = Settings {
        seed: 7,
        ..settings()
    };
    other_seed
        .adapt(&groups(), &[], &seeded, Scope::Every, &|_, _, _| {})
        .unwrap();
    let sha = other_seed.save(&out.path().join("seed7")).unwrap();
    assert_ne!(sha, shas[0], "another seed, other pairs, other weights");
}

#[test]
fn a_cut_encoder_trains_with_near_batches_and_saves_as_a_smaller_model() {
    let settings = Settings {
        layers: Some(3),
        batching: Batching::Nearest,
        ..settings()
    };
    let encoder = Encoder::load(&model_dir(), &settings).unwrap();
    assert_eq!(encoder.layers(), 3);
    let negatives = ["what is the meaning of life".to_owned()];
    let run = encoder
        .adapt(
            &groups(),
            &negatives,
            &settings,
            Scope::Every,
            &|_, _, _| {},
        )
        .unwrap();
    assert!(run.steps >= 4, "{run:?}");
    let out = tempfile::tempdir().unwrap();
    encoder.save(out.path()).unwrap();
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("config.json")).unwrap())
            .unwrap();
    assert_eq!(config["num_hidden_layers"], 3);
    // The saved folder loads as a 3-layer model and embeds as the trained one did.
    let reloaded = Encoder::load(out.path(), &Settings::default()).unwrap();
    assert_eq!(reloaded.layers(), 3);
    let text = ["is it going to snow"];
    let a = encoder.embed(&text).unwrap();
    let b = reloaded.embed(&text).unwrap();
    assert!(cosine(&a[0], &b[0]) > 0.99999);
}

#[test]
fn bad_settings_are_named() {
    let encoder = Encoder::load(&model_dir(), &Settings::default()).unwrap();
    for (settings, field) in [
        (
            Settings {
                batch_size: 1,
                ..Settings::default()
            },
            "batch_size",
        ),
        (
            Settings {
                learning_rate: 0.0,
                ..Settings::default()
            },
            "learning_rate",
        ),
        (
            Settings {
                warmup: 1.5,
                ..Settings::default()
            },
            "warmup",
        ),
        (
            Settings {
                max_tokens: 513,
                ..Settings::default()
            },
            "max_tokens",
        ),
    ] {
        let error = encoder
            .adapt(&groups(), &[], &settings, Scope::Every, &|_, _, _| {})
            .unwrap_err();
        assert!(error.to_string().contains(field), "{error}");
    }
    let error = Encoder::load(
        &model_dir(),
        &Settings {
            first_trained_layer: 9,
            ..Settings::default()
        },
    )
    .err()
    .unwrap();
    assert!(error.to_string().contains("first_trained_layer"), "{error}");
    let error = Encoder::load(
        &model_dir(),
        &Settings {
            layers: Some(7),
            ..Settings::default()
        },
    )
    .err()
    .unwrap();
    assert!(error.to_string().contains("layers"), "{error}");
    let missing = Encoder::load(std::path::Path::new("/nonexistent"), &Settings::default())
        .err()
        .unwrap();
    assert!(
        missing.to_string().contains("/nonexistent/config.json"),
        "{missing}"
    );
}

#[test]
fn an_incremental_run_trains_only_the_changed_template_against_its_rivals() {
    let encoder = Encoder::load(&model_dir(), &settings()).unwrap();
    let mut changed = groups();
    changed[2].push("do i need an umbrella".into());
    // How far an unseen weather question is nearer its template's texts than the nearest
    // other template's (mean cosines).
    let margin = |encoder: &Encoder| -> f32 {
        let question = encoder
            .embed(&["will it snow this weekend"])
            .unwrap()
            .remove(0);
        let mean = |group: &[String]| -> f32 {
            let texts: Vec<&str> = group.iter().map(String::as_str).collect();
            let vectors = encoder.embed(&texts).unwrap();
            vectors.iter().map(|v| cosine(&question, v)).sum::<f32>() / vectors.len() as f32
        };
        let own = mean(&changed[2]);
        let rival = [0, 1, 3]
            .iter()
            .map(|&g| mean(&changed[g]))
            .fold(f32::MIN, f32::max);
        own - rival
    };
    let before = margin(&encoder);
    let vectors: Vec<Vec<Vec<f32>>> = changed
        .iter()
        .map(|g| {
            encoder
                .embed(&g.iter().map(String::as_str).collect::<Vec<_>>())
                .unwrap()
        })
        .collect();
    let near = switchyard_adapt::neighbours(&vectors);
    let scope = Scope::Changed {
        templates: &[2],
        neighbours: &near,
    };
    let run = encoder
        .adapt(&changed, &[], &settings(), scope, &|_, _, _| {})
        .unwrap();
    // Each of the changed template's 5 texts anchors 2 pairs, one step each, every other
    // template a rival in the step.
    assert_eq!(
        (run.steps, run.pairs),
        (5 * switchyard_adapt::INCREMENTAL_PAIRS_PER_TEXT, 5 * 2 * 4),
        "{run:?}"
    );
    let after = margin(&encoder);
    assert!(
        after > before + 0.05,
        "an unseen question of the changed template moves nearer it than its rivals: {before} -> {after}"
    );
}
