//! Encoder adaptation through the CLI, as a user runs it: `index build` with
//! `embedding.adaptation.mode: adapted` trains the encoder on the catalog (a few steps here, to
//! keep the test short), builds its int8 graph with the same script as the base model's,
//! and writes it beside the index; the index's manifest names it. Building twice gives the
//! same weights and graph; a graph that is not the one the index names is refused, naming
//! both checksums.

use std::path::Path;
use std::process::Command;

use switchyard_documents::schema::SCHEMA_ARTIFACT;
use switchyard_documents::{artifact_beside, ChunkIndex};
use switchyard_e2e::{copy_dir, model_dir, repo_root, run, run_ok, switchyard};
use switchyard_index::index::Index;

/// A few training steps on the demo catalog: enough to change the weights.
fn adapting(cache: &Path) -> Command {
    // An encoder folder of this cache's own, not the shared one: each build here trains.
    std::fs::create_dir_all(cache.join("encoders")).unwrap();
    let mut command = switchyard(cache);
    command
        .env("SWITCHYARD__EMBEDDING__ADAPTATION__MODE", "adapted")
        .env("SWITCHYARD__EMBEDDING__ADAPTATION__MAX_PAIRS", "96")
        .env("SWITCHYARD__EMBEDDING__ADAPTATION__PAIRS_PER_TEXT", "1");
    command
}

/// Build the demo index adapted, with `warn_after_seconds` as given; the build's stderr.
fn build(cache: &Path, out: &Path, warn_after_seconds: &str) -> (Index, String) {
    let output = run(adapting(cache)
        .env(
            "SWITCHYARD__EMBEDDING__ADAPTATION__WARN_AFTER_SECONDS",
            warn_after_seconds,
        )
        .args(["index", "build", "--out"])
        .arg(out));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    (Index::read(out).unwrap(), stderr)
}

#[test]
fn index_build_adapts_the_encoder_deterministically_and_ships_it_beside_the_index() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let out = first.path().join("demo.idx");
    // A bound of 1 s is past for any machine: the build warns, naming the setting, and
    // still trains in full.
    let (index, stderr) = build(first.path(), &out, "1");
    assert!(
        stderr.contains("past embedding.adaptation.warn_after_seconds (1 s)"),
        "{stderr}"
    );
    let encoder = index.manifest.encoder.clone().expect("an adapted encoder");
    assert!(encoder.model_id.contains("+adapted@"), "{encoder:?}");
    assert_eq!(index.manifest.model_id, encoder.model_id);
    assert!(encoder.steps >= 1 && encoder.pairs <= 96, "{encoder:?}");
    assert!(
        encoder.held_out > 0,
        "every fifth example is held out: {encoder:?}"
    );
    let graph = out.with_extension("encoder.onnx");
    let base = std::fs::read(model_dir().join("model.onnx")).unwrap();
    let adapted = std::fs::read(&graph).unwrap();
    assert_ne!(
        adapted, base,
        "the adapted graph differs from the base model's"
    );

    // Passages and SQL schemas stay on the base model: adapting to the templates costs
    // passage retrieval (SciFact nDCG@10 0.836 -> 0.735), so they are embedded and
    // searched with the model the encoder was adapted from.
    for artifact in ["policies", SCHEMA_ARTIFACT] {
        let chunks = ChunkIndex::read(&artifact_beside(&out, artifact)).unwrap();
        assert_eq!(
            chunks.manifest.model_id, encoder.base_model,
            "`{artifact}` is embedded with the base model"
        );
    }

    // The same catalog, settings and seed in a fresh cache: the same weights and graph.
    let (again, stderr) = build(second.path(), &second.path().join("demo.idx"), "0");
    assert!(
        !stderr.contains("warn_after_seconds"),
        "0 never warns: {stderr}"
    );
    let again = again.manifest.encoder.unwrap();
    assert_eq!(again.weights_sha256, encoder.weights_sha256);
    assert_eq!(again.onnx_sha256, encoder.onnx_sha256);

    // The index routes with its own encoder.
    let routed = run_ok(switchyard(first.path()).arg("--index").arg(&out).args([
        "route",
        "What is 15% of 200?",
        "--json",
    ]));
    let report: serde_json::Value = serde_json::from_str(&routed).unwrap();
    assert_eq!(
        report["routing_decision"]["would_route_to"], "tools",
        "{report}"
    );

    // Another graph beside the index (here the base model's) is refused, naming both.
    std::fs::write(&graph, &base).unwrap();
    let refused = run(switchyard(first.path())
        .arg("--index")
        .arg(&out)
        .args(["route", "What is 15% of 200?"]));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(stderr.contains(&encoder.onnx_sha256), "{stderr}");
    assert!(stderr.contains("different builds"), "{stderr}");

    // A missing one is named.
    std::fs::remove_file(&graph).unwrap();
    let missing = run(switchyard(first.path())
        .arg("--index")
        .arg(&out)
        .args(["route", "What is 15% of 200?"]));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(stderr.contains("demo.encoder.onnx"), "{stderr}");
}

/// A catalog one template away from a cached encoder's trains that encoder further on the
/// changed template alone, and says so in the manifest; `--full` starts from the base.
#[test]
fn a_small_change_trains_the_cached_encoder_further_and_full_starts_over() {
    let cache = tempfile::tempdir().unwrap();
    let catalog = cache.path().join("demo");
    copy_dir(&repo_root().join("templates/demo"), &catalog);
    let build = |out: &str, full: bool| -> (Index, String) {
        let out = cache.path().join(out);
        let mut command = adapting(cache.path());
        command.arg("--templates").arg(&catalog);
        command.args(["index", "build", "--out"]).arg(&out);
        if full {
            command.arg("--full");
        }
        let output = run(&mut command);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        (Index::read(&out).unwrap(), stderr)
    };
    let (first, _) = build("first.idx", false);
    let first = first.manifest.encoder.unwrap();
    assert!(first.incremental.is_empty(), "{first:?}");

    // One more example for hr's headcount template.
    let file = catalog.join("hr/templates.yaml");
    let text = std::fs::read_to_string(&file).unwrap().replacen(
        "      - How many employees work in Engineering?\n",
        "      - How many employees work in Engineering?\n      - Count the staff of the finance team\n",
        1,
    );
    std::fs::write(&file, text).unwrap();
    let (second, stderr) = build("second.idx", false);
    assert!(stderr.contains("incrementally"), "{stderr}");
    let second = second.manifest.encoder.unwrap();
    assert_eq!(second.incremental.len(), 1, "{second:?}");
    let run = &second.incremental[0];
    assert_eq!(run.from_weights_sha256, first.weights_sha256);
    assert_eq!(run.changed.len(), 1, "{run:?}");
    assert!(run.changed[0].starts_with("hr/"), "{run:?}");
    assert!(run.removed.is_empty() && run.steps >= 1, "{run:?}");
    assert_ne!(second.weights_sha256, first.weights_sha256);
    // The full run's record is kept beside it.
    assert_eq!((second.steps, second.seed), (first.steps, first.seed));

    let (full, stderr) = build("full.idx", true);
    assert!(!stderr.contains("incrementally"), "{stderr}");
    let full = full.manifest.encoder.unwrap();
    assert!(full.incremental.is_empty(), "{full:?}");
    assert_ne!(full.weights_sha256, second.weights_sha256);
}
