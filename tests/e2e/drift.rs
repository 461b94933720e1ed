//! The drift check at load: an index records its builder's vectors of a few probe
//! sentences; the CLI and `serve` embed them again with the model at hand. A small
//! difference (another CPU's numerics) is served with a warning and shown in `/v1/health`;
//! a large one (another model under the same id) is refused, naming both.
//!
//! The artifacts are the real model's index with the recorded probe vectors changed:
//! turned by a fixed amount (cosine about 0.9988, between the default `warn_below` 0.9999
//! and `refuse_below` 0.9), or swapped between probes (cosines of unrelated sentences,
//! far below 0.9).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use switchyard_e2e::{run, run_ok, serve_with_logs, switchyard};
use switchyard_index::index::Index;

/// The demo catalog's index, built by the CLI, with its probe vectors changed by `change`.
fn changed_index(cache: &Path, name: &str, change: impl Fn(&mut Index)) -> PathBuf {
    let built = cache.join("demo.idx");
    if !built.is_file() {
        run_ok(
            switchyard(cache)
                .args(["index", "build", "--out"])
                .arg(&built),
        );
    }
    let mut index = Index::read(&built).unwrap();
    assert_eq!(
        index.manifest.probes.len(),
        8,
        "the builder records 8 probes"
    );
    change(&mut index);
    let path = cache.join(name);
    index.write(&path).unwrap();
    // What `index build` wrote beside it: the chunk artifacts (`demo.<datasource>.chunks`)
    // and the adapted encoder's graph (`demo.encoder.onnx`).
    let stem = name.trim_end_matches(".idx");
    for entry in std::fs::read_dir(cache).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        if let Some(rest) = file
            .strip_prefix("demo.")
            .filter(|r| r.ends_with(".chunks") || *r == "encoder.onnx")
        {
            std::fs::copy(cache.join(&file), cache.join(format!("{stem}.{rest}"))).unwrap();
        }
    }
    path
}

/// Add 0.05 of a fixed unit direction to each recorded vector and renormalise: cosine
/// about 1 / sqrt(1 + 0.05²) ≈ 0.9988 to the original.
fn turn(index: &mut Index) {
    for probe in &mut index.manifest.probes {
        let n = probe.vector.len() as f32;
        for (i, x) in probe.vector.iter_mut().enumerate() {
            *x += 0.05 * if i % 2 == 0 { 1.0 } else { -1.0 } / n.sqrt();
        }
        let norm = probe.vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        probe.vector.iter_mut().for_each(|x| *x /= norm);
    }
}

#[test]
fn drift_within_tolerance_is_served_with_a_warning_and_shown_in_health() {
    let cache = tempfile::tempdir().unwrap();
    let drifted = changed_index(cache.path(), "drifted.idx", turn);

    let output = run(switchyard(cache.path()).arg("--index").arg(&drifted).args([
        "route",
        "What is 15% of 200?",
        "--json",
    ]));
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("probe sentences differently")
            && stderr.contains("min_cosine")
            && stderr.contains("onnx-int8"),
        "{stderr}"
    );

    let options = ["--index".as_ref(), drifted.as_os_str()];
    let server = serve_with_logs(cache.path(), &options, Stdio::null(), "warn");
    let health: serde_json::Value = reqwest::blocking::get(format!("{}/v1/health", server.base))
        .unwrap()
        .json()
        .unwrap();
    let embedding = &health["embedding"];
    assert_eq!(embedding["drift"], "drifted", "{health:#}");
    assert_eq!(embedding["probes"], 8);
    let min = embedding["min_cosine"].as_f64().unwrap();
    // 0.9988 by construction, give or take the model's own difference from the builder
    // (none on the same machine).
    assert!((min - 0.9988).abs() < 0.0005, "{health:#}");
}

#[test]
fn the_index_as_built_is_the_same_and_another_model_is_refused() {
    let cache = tempfile::tempdir().unwrap();
    let same = changed_index(cache.path(), "same.idx", |_| {});
    let server = serve_with_logs(
        cache.path(),
        &["--index".as_ref(), same.as_os_str()],
        Stdio::null(),
        "warn",
    );
    let health: serde_json::Value = reqwest::blocking::get(format!("{}/v1/health", server.base))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(health["embedding"]["drift"], "same", "{health:#}");
    // The same model on the same machine: the tolerance (0.9999) leaves a margin of 1e-4
    // over float rounding (about 1e-7).
    assert!(health["embedding"]["min_cosine"].as_f64().unwrap() > 0.9999);
    drop(server);

    let other = changed_index(cache.path(), "other.idx", |index| {
        let probes = &mut index.manifest.probes;
        let first = probes[0].vector.clone();
        for i in 0..probes.len() - 1 {
            probes[i].vector = probes[i + 1].vector.clone();
        }
        let last = probes.len() - 1;
        probes[last].vector = first;
    });
    let output = run(switchyard(cache.path())
        .arg("--index")
        .arg(&other)
        .args(["route", "What is 15% of 200?"]));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("other.idx")
            && stderr.contains("refuse_below")
            && stderr
                .matches("all-MiniLM-L6-v2@onnx-int8-per-channel-7bit")
                .count()
                == 2,
        "{stderr}"
    );
}
