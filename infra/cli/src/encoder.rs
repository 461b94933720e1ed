//! Which encoder a catalog's index is embedded with: the base model, or the base adapted
//! to the catalog (`switchyard-adapt`), trained once per catalog and settings and cached
//! under `<cache>/encoders/`. An index built with an adapted encoder carries its
//! [`EncoderManifest`]; the int8 graph travels beside it (`<index>.encoder.onnx`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use switchyard_adapt::{file_sha256, Batching, Scope, Settings};
use switchyard_catalog::config::cache_dir;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_embed::{adapted_model_id, MiniLmEmbedder, MINILM_MODEL_ID};
use switchyard_index::config::{AdaptationBatching, AdaptationConfig, AdaptationMode};
use switchyard_index::index::{
    is_held_out, template_texts, EncoderManifest, IncrementalRun, Index,
};
use switchyard_vectors::embed::{CachedEmbedder, Embedder};

use crate::gate;
use crate::lineage::{find_parent, Parent, TrainedTexts};

/// The script that builds the base model's int8 graph builds the adapted one's too: the
/// same fused graph and the same 7-bit quantization, so routing costs the same.
const GRAPH_SCRIPT: &str = include_str!("../../scripts/build_onnx_model.py");
/// Bumped when the recipe changes, so that cached encoders are retrained (v2: products
/// summed in one order on every CPU, `switchyard_adapt`'s matmul).
const RECIPE: &str = "mnrl-v2";
const MANIFEST_FILE: &str = "encoder.json";
const GRAPH_FILE: &str = "model.onnx";

/// An encoder ready to embed: the embedder, and the manifest of an adapted one.
pub struct Encoder {
    pub embedder: Arc<dyn Embedder>,
    pub manifest: Option<EncoderManifest>,
    /// The adapted int8 graph, to ship beside an index.
    pub graph: Option<PathBuf>,
}

/// The base model of the configuration.
pub fn base(config: &Config) -> Result<Encoder> {
    let embedder = MiniLmEmbedder::from_config(&config.embedding)?;
    Ok(Encoder {
        embedder: CachedEmbedder::wrap(Arc::new(embedder), config.embedding.cache_size),
        manifest: None,
        graph: None,
    })
}

/// The model the catalog's documents and SQL schemas are embedded and searched with: the
/// base model when `encoder` is adapted to the templates and the catalog has any (passage
/// retrieval loses by the adaptation: SciFact dev nDCG@10 0.836 -> 0.735), else `encoder`'s.
pub fn for_documents(
    encoder: &Encoder,
    catalog: &Catalog,
    config: &Config,
) -> Result<Option<Arc<dyn Embedder>>> {
    if encoder.manifest.is_none() || !catalog.searches_texts() {
        return Ok(None);
    }
    Ok(Some(base(config)?.embedder))
}

/// Whether `config` adapts the encoder to `catalog`.
pub fn adapts(catalog: &Catalog, adaptation: &AdaptationConfig) -> bool {
    match adaptation.mode {
        AdaptationMode::Base => false,
        AdaptationMode::Adapted => true,
        AdaptationMode::Auto => catalog.template_count() >= adaptation.min_templates,
    }
}

/// The encoder for building `catalog`'s index: the base model, or (as `embedding.adaptation`
/// says) one adapted to it, from the cache or trained now.
pub fn for_catalog(catalog: &Catalog, config: &Config) -> Result<Encoder> {
    let adaptation = &config.embedding.adaptation;
    if !adapts(catalog, adaptation) {
        return base(config);
    }
    let base_dir = config.embedding.resolved_model_dir();
    let groups = training_groups(catalog);
    let negatives: Vec<String> = catalog
        .datasources
        .iter()
        .flat_map(|d| d.spec.negative_examples.iter().cloned())
        .collect();
    let settings = settings(adaptation);
    let encoders = cache_dir().join("encoders");
    let base = base_sha256(&base_dir)?;
    let dir = encoders.join(cache_key(&base, &groups, &negatives, &settings));
    // `index build --full` (a share of 0) takes no encoder an incremental run made.
    let full_only = adaptation.incremental_max_share == 0.0;
    let usable = |dir: &Path| cached(dir).filter(|m| !full_only || m.incremental.is_empty());
    let manifest = match usable(&dir) {
        Some(manifest) => manifest,
        // Another process may be training this very encoder (two builds of one catalog,
        // tests in parallel): wait for it and take its result rather than train twice
        // into one folder.
        None => match (lock_training(&dir)?, usable(&dir)) {
            (_lock, Some(manifest)) => manifest,
            (_lock, None) => {
                let held_out = catalog
                    .datasources
                    .iter()
                    .flat_map(|d| &d.templates)
                    .map(|t| {
                        let n = t.nl_examples.len();
                        (0..n).filter(|&e| is_held_out(e, n)).count()
                    })
                    .sum();
                let keys = template_keys(catalog);
                let family = family(&base, &negatives, &settings);
                let parent = find_parent(
                    &encoders,
                    &family,
                    &keys,
                    &groups,
                    adaptation.incremental_max_share,
                    cached,
                );
                let rivals = match &parent {
                    Some(parent) => Some(rivals(config, parent, &groups)?),
                    None => None,
                };
                let texts = (groups.as_slice(), negatives.as_slice());
                let manifest = adapt(
                    &base_dir,
                    parent.as_ref().zip(rivals.as_deref()),
                    texts,
                    &settings,
                    adaptation,
                    held_out,
                    &dir,
                )?;
                TrainedTexts::new(&family, &keys, &groups).write(&dir)?;
                manifest
            }
        },
    };
    let graph = dir.join(GRAPH_FILE);
    let adapted = Encoder {
        embedder: load_adapted(config, &manifest, &graph, "the encoder cache")?,
        manifest: Some(manifest),
        graph: Some(graph),
    };
    if adaptation.mode != AdaptationMode::Auto {
        return Ok(adapted);
    }
    let scoring = &config.composite_retrieval.template_scoring;
    let routing = gate::held_out_routing(
        &dir,
        catalog,
        &groups,
        scoring,
        &|| Ok(self::base(config)?.embedder),
        adapted.embedder.as_ref(),
    )?;
    match routing {
        Some(routing) if !routing.keeps_adapted() => {
            eprintln!(
                "encoder: the base model, which routes the catalog's held-out examples better than the adapted one beyond chance ({}; embedding.adaptation.mode: adapted keeps it)",
                routing.describe()
            );
            self::base(config)
        }
        Some(routing) => {
            eprintln!("encoder: adapted ({})", routing.describe());
            Ok(adapted)
        }
        None => Ok(adapted),
    }
}

/// The encoder an index was built with: the base model, or the adapted graph at `graph`
/// (checked against the index's manifest; a mismatch names both).
pub fn for_index(index: &Index, graph: &Path, origin: &str, config: &Config) -> Result<Encoder> {
    match &index.manifest.encoder {
        None => base(config),
        Some(manifest) => Ok(Encoder {
            embedder: load_adapted(config, manifest, graph, origin)?,
            manifest: Some(manifest.clone()),
            graph: Some(graph.to_path_buf()),
        }),
    }
}

/// Where `index build` puts the adapted graph of the index at `index`.
pub fn graph_beside(index: &Path) -> PathBuf {
    index.with_extension("encoder.onnx")
}

fn load_adapted(
    config: &Config,
    manifest: &EncoderManifest,
    graph: &Path,
    index_origin: &str,
) -> Result<Arc<dyn Embedder>> {
    let bytes = std::fs::read(graph).with_context(|| {
        format!(
            "reading {}, the adapted encoder {} that {index_origin} was built with",
            graph.display(),
            manifest.model_id
        )
    })?;
    let origin = graph.display().to_string();
    let embedder =
        MiniLmEmbedder::adapted(&config.embedding, manifest, bytes, &origin, index_origin)?;
    Ok(CachedEmbedder::wrap(
        Arc::new(embedder),
        config.embedding.cache_size,
    ))
}

/// Each template's training texts: its `nl_examples` but the held-out ones, its
/// description and id words.
pub fn training_groups(catalog: &Catalog) -> Vec<Vec<String>> {
    catalog
        .datasources
        .iter()
        .flat_map(|d| &d.templates)
        .map(|template| {
            let examples = template.nl_examples.len();
            template_texts(template)
                .into_iter()
                .enumerate()
                .filter(|&(i, _)| i >= examples || !is_held_out(i, examples))
                .map(|(_, text)| text)
                .collect()
        })
        .collect()
}

/// Every template's others, nearest first, by the cached encoder `parent` (its int8 graph:
/// seconds for a catalog, where the f32 model in training would take minutes).
fn rivals(config: &Config, parent: &Parent, groups: &[Vec<String>]) -> Result<Vec<Vec<usize>>> {
    let graph = parent.dir.join(GRAPH_FILE);
    let embedder = load_adapted(config, &parent.manifest, &graph, "the encoder cache")?;
    let mut vectors = Vec::with_capacity(groups.len());
    for group in groups {
        let texts: Vec<&str> = group.iter().map(String::as_str).collect();
        vectors.push(embedder.embed(&texts)?);
    }
    Ok(switchyard_adapt::neighbours(&vectors))
}

/// Each template's name in the cache's texts: `datasource/id`, in the groups' order.
fn template_keys(catalog: &Catalog) -> Vec<String> {
    catalog
        .datasources
        .iter()
        .flat_map(|d| {
            d.templates
                .iter()
                .map(move |t| format!("{}/{}", d.name(), t.id))
        })
        .collect()
}

pub fn settings(adaptation: &AdaptationConfig) -> Settings {
    Settings {
        seed: adaptation.seed,
        learning_rate: adaptation.learning_rate,
        epochs: adaptation.epochs,
        pairs_per_text: adaptation.pairs_per_text,
        max_pairs: adaptation.max_pairs,
        batch_size: adaptation.batch_size,
        first_trained_layer: adaptation.first_trained_layer,
        batching: match adaptation.batching {
            AdaptationBatching::Random => Batching::Random,
            AdaptationBatching::Nearest => Batching::Nearest,
        },
        layers: adaptation.layers,
        ..Settings::default()
    }
}

/// Everything that changes the adapted weights: the base weights (`base`, their sha256), the
/// texts, the settings.
fn cache_key(
    base: &str,
    groups: &[Vec<String>],
    negatives: &[String],
    settings: &Settings,
) -> String {
    let mut key = serde_json::json!({
        "recipe": RECIPE,
        "base": base,
        "groups": groups,
        "settings": settings,
    });
    // Only when there are some: catalogs without negative examples keep their cached key.
    if !negatives.is_empty() {
        key["negatives"] = serde_json::json!(negatives);
    }
    switchyard_adapt::sha256_hex(key.to_string().as_bytes())[..24].to_owned()
}

/// The sha256 of the base model's f32 weights, read once for both keys below.
fn base_sha256(base_dir: &Path) -> Result<String> {
    let weights = base_dir.join(switchyard_adapt::WEIGHTS_FILE);
    file_sha256(&weights).with_context(|| {
        format!(
            "adapting the encoder needs the base model's f32 weights {} (infra/scripts/fetch-model.sh)",
            weights.display()
        )
    })
}

/// Everything but the templates' texts that shapes the adapted weights: encoders of one
/// family differ only by their catalogs, so one can start from another.
fn family(base: &str, negatives: &[String], settings: &Settings) -> String {
    let key = serde_json::json!({
        "recipe": RECIPE,
        "base": base,
        "settings": settings,
        "negatives": negatives,
    });
    switchyard_adapt::sha256_hex(key.to_string().as_bytes())
}

/// The lock on training the encoder of `dir` (`<dir>.lock`), held until dropped; when
/// another process holds it, say so and wait.
fn lock_training(dir: &Path) -> Result<std::fs::File> {
    let path = dir.with_extension("lock");
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating the encoder cache {}", parent.display()))?;
    }
    let file = std::fs::File::create(&path)
        .with_context(|| format!("creating the lock {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            eprintln!(
                "waiting for another switchyard process adapting the same encoder ({})",
                dir.display()
            );
            file.lock()
                .with_context(|| format!("locking {}", path.display()))?;
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()));
        }
    }
    Ok(file)
}

/// A cached encoder whose graph still has the checksum its manifest names.
fn cached(dir: &Path) -> Option<EncoderManifest> {
    let text = std::fs::read_to_string(dir.join(MANIFEST_FILE)).ok()?;
    let manifest: EncoderManifest = serde_json::from_str(&text).ok()?;
    let sha = file_sha256(&dir.join(GRAPH_FILE)).ok()?;
    (sha == manifest.onnx_sha256).then_some(manifest)
}

/// The training's first steps, timed to project its whole length.
const PROJECT_AFTER_STEPS: usize = 5;

/// The warning for a training projected (from its first `steps`) to take `projected`
/// seconds, when that is past `bound` (0: no bound).
fn past_the_bound(projected: f64, steps: usize, bound: u64) -> Option<String> {
    (bound > 0 && projected > bound as f64).then(|| {
        format!(
            "warning: adapting the encoder will take about {projected:.0} s on this machine \
             (projected from its first {steps} steps), past embedding.adaptation.warn_after_seconds \
             ({bound} s); lower embedding.adaptation.max_pairs (the time is about linear in it) \
             or set embedding.adaptation.mode: base"
        )
    })
}

/// Train on `(groups, negatives)`, from the base model or, incrementally, from `parent`
/// on the templates changed since it; write the weights, build the int8 graph, write the
/// manifest.
fn adapt(
    base_dir: &Path,
    parent: Option<(&Parent, &[Vec<usize>])>,
    (groups, negatives): (&[Vec<String>], &[String]),
    settings: &Settings,
    adaptation: &AdaptationConfig,
    held_out: usize,
    dir: &Path,
) -> Result<EncoderManifest> {
    let incremental = settings.incremental();
    let (start, scope, settings) = match parent {
        None => (base_dir, Scope::Every, settings),
        Some((parent, neighbours)) => {
            eprintln!(
                "adapting the encoder incrementally from {} ({} templates added or changed, {} removed; `index build --full` trains from the base model)",
                parent.dir.display(),
                parent.changed.len(),
                parent.removed_keys.len()
            );
            let scope = Scope::Changed {
                templates: &parent.changed,
                neighbours,
            };
            (parent.dir.as_path(), scope, &incremental)
        }
    };
    let encoder = switchyard_adapt::Encoder::load(start, settings)?;
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "adapting the encoder {bar:40} {pos}/{len} steps ({eta}) {msg}",
        )
        .expect("a valid template"),
    );
    // The first step also pays what is done once (the frozen layers run over every text,
    // the neighbours found): the projection counts that once and times the steps after it.
    let started = std::time::Instant::now();
    let first_step_done = std::cell::Cell::new(None::<std::time::Instant>);
    let run = encoder.adapt(groups, negatives, settings, scope, &|step, steps, loss| {
        bar.set_length(steps as u64);
        bar.set_position(step as u64);
        bar.set_message(format!("loss {loss:.3}"));
        if step == 1 {
            first_step_done.set(Some(std::time::Instant::now()));
        }
        let timed = step.saturating_sub(1);
        if timed > 0 && timed == PROJECT_AFTER_STEPS.min(steps - 1) {
            let first = first_step_done.get().expect("step 1 came first");
            let per_step = first.elapsed().as_secs_f64() / timed as f64;
            let projected = (first - started).as_secs_f64() + per_step * (steps - 1) as f64;
            if let Some(warning) = past_the_bound(projected, timed, adaptation.warn_after_seconds) {
                bar.suspend(|| eprintln!("{warning}"));
            }
        }
    })?;
    bar.finish_and_clear();
    // A half-written folder is never taken for a cached encoder: the manifest comes last.
    let _ = std::fs::remove_file(dir.join(MANIFEST_FILE));
    let weights_sha256 = encoder.save(dir)?;
    // The graph's build checks itself against the trained model's own vectors.
    let reference = dir.join("reference.json");
    let texts: Vec<&str> = switchyard_index::index::PROBE_TEXTS.to_vec();
    let vectors = encoder.embed(&texts)?;
    let items: Vec<serde_json::Value> = texts
        .iter()
        .zip(vectors)
        .map(|(text, embedding)| serde_json::json!({"text": text, "embedding": embedding}))
        .collect();
    std::fs::write(
        &reference,
        serde_json::json!({ "items": items }).to_string(),
    )
    .with_context(|| format!("writing {}", reference.display()))?;
    build_graph(dir, &reference, adaptation)?;
    let onnx_sha256 = file_sha256(&dir.join(GRAPH_FILE))?;
    let manifest = match parent.map(|(parent, _)| parent) {
        // The full run's record stays; the incremental runs are stacked after it.
        Some(parent) => {
            let mut incremental = parent.manifest.incremental.clone();
            incremental.push(IncrementalRun {
                from_weights_sha256: parent.manifest.weights_sha256.clone(),
                changed: parent.changed_keys.clone(),
                removed: parent.removed_keys.clone(),
                first_trained_layer: settings.first_trained_layer,
                steps: run.steps,
                pairs: run.pairs,
                training_seconds: run.seconds,
            });
            EncoderManifest {
                model_id: adapted_model_id(&onnx_sha256),
                onnx_sha256,
                weights_sha256,
                held_out,
                incremental,
                ..parent.manifest.clone()
            }
        }
        None => EncoderManifest {
            base_model: MINILM_MODEL_ID.to_owned(),
            model_id: adapted_model_id(&onnx_sha256),
            onnx_sha256,
            weights_sha256,
            loss: if negatives.is_empty() {
                "multiple-negatives ranking (in-batch negatives)"
            } else {
                "multiple-negatives ranking (in-batch negatives and the negative examples)"
            }
            .to_owned(),
            seed: settings.seed,
            steps: run.steps,
            pairs: run.pairs,
            epochs: settings.epochs,
            learning_rate: settings.learning_rate,
            first_trained_layer: settings.first_trained_layer,
            layers: encoder.layers(),
            batching: serde_json::to_value(settings.batching)?
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            held_out,
            training_seconds: run.seconds,
            incremental: Vec::new(),
        },
    };
    let path = dir.join(MANIFEST_FILE);
    std::fs::write(&path, serde_json::to_string_pretty(&manifest)?)
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "adapted the encoder: {} steps on {} pairs in {:.0} s ({:.0} s before the first step; loss {:.3} -> {:.3}); {}",
        run.steps,
        run.pairs,
        run.seconds,
        run.setup_seconds,
        run.first_loss,
        run.last_loss,
        dir.display()
    );
    Ok(manifest)
}

/// The Python that builds the graph: the setting, `$SWITCHYARD_PYTHON`, the project
/// virtualenv's (where fetch-model.sh installed onnx and onnxruntime), else `python3`.
fn python(adaptation: &AdaptationConfig) -> PathBuf {
    if let Some(python) = &adaptation.python {
        return python.clone();
    }
    if let Some(python) = std::env::var_os("SWITCHYARD_PYTHON") {
        return PathBuf::from(python);
    }
    let venv = cache_dir().join("venv").join("bin").join("python");
    if venv.is_file() {
        return venv;
    }
    PathBuf::from("python3")
}

/// Run build_onnx_model.py on the adapted folder `dir`: `dir/model.onnx`.
fn build_graph(dir: &Path, reference: &Path, adaptation: &AdaptationConfig) -> Result<()> {
    let script = dir.join("build_onnx_model.py");
    std::fs::write(&script, GRAPH_SCRIPT)
        .with_context(|| format!("writing {}", script.display()))?;
    let python = python(adaptation);
    let output = Command::new(&python)
        .arg(&script)
        .arg(dir)
        .arg("--reference")
        .arg(reference)
        .output()
        .with_context(|| {
            format!(
                "running {} to build the adapted encoder's int8 graph (set embedding.adaptation.python or SWITCHYARD_PYTHON to a Python with onnx and onnxruntime, as infra/scripts/fetch-model.sh installs them)",
                python.display()
            )
        })?;
    if !output.status.success() {
        bail!(
            "building the adapted encoder's int8 graph in {} failed ({}): {}",
            dir.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}
