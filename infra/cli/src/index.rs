//! `switchyard index build|inspect|push`: write, verify and publish index artifacts.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use switchyard_aws::index::IndexPublishing;
use switchyard_catalog::template::{Catalog, Datasource, DatasourceKind};
use switchyard_core::config::Config;
use switchyard_documents::ChunkIndex;
use switchyard_index::index::Index;
use switchyard_vectors::embed::Embedder;

use crate::encoder;
use crate::open::{advance, progress_bar, schema_tables};
use switchyard_documents::schema::{table_documents, SCHEMA_ARTIFACT};

/// `index build`: embed the catalog in `templates`, write the artifact to `out`, report.
pub fn build(templates: &Path, config: &Config, out: &Path, strict: Option<f64>) -> Result<()> {
    let catalog = Catalog::load(templates)?;
    switchyard_adapters::check_catalog(&catalog)?;
    let start = Instant::now();
    let encoder = encoder::for_catalog(&catalog, config)?;
    let embedder = encoder.embedder.clone();
    let documents_embedder =
        encoder::for_documents(&encoder, &catalog, config)?.unwrap_or_else(|| embedder.clone());
    let bar = progress_bar();
    let index = Index::build_with_encoder(
        catalog,
        embedder.as_ref(),
        encoder.manifest.clone(),
        &config.router(),
        &advance(&bar),
    )?;
    bar.finish_and_clear();
    let astray = check_catalog(&index);
    if let Some(limit) = strict {
        if astray > limit {
            bail!(
                "--strict: {:.1}% of the examples go astray when left out (limit {:.1}%); nothing written",
                astray * 100.0,
                limit * 100.0
            );
        }
    }
    index.write(out)?;
    // The adapted graph travels beside the index; a stale one from an earlier build goes.
    let beside = encoder::graph_beside(out);
    match &encoder.graph {
        Some(graph) => {
            std::fs::copy(graph, &beside)
                .with_context(|| format!("writing {}", beside.display()))?;
        }
        None if beside.exists() => {
            std::fs::remove_file(&beside)
                .with_context(|| format!("removing the stale {}", beside.display()))?;
        }
        None => {}
    }
    if let Some(manifest) = &encoder.manifest {
        eprintln!(
            "encoder: {} adapted from {} ({} steps, {} pairs, {:.0} s); {} beside the index",
            manifest.model_id,
            manifest.base_model,
            manifest.steps,
            manifest.pairs,
            manifest.training_seconds,
            beside.display()
        );
        for run in &manifest.incremental {
            eprintln!(
                "  then trained further on {} changed templates ({} removed): {} steps, {} pairs, {:.0} s",
                run.changed.len(),
                run.removed.len(),
                run.steps,
                run.pairs,
                run.training_seconds
            );
        }
    } else {
        eprintln!("encoder: the base model (embedding.adaptation.mode is base, or auto and the catalog has fewer than min_templates templates or routes its held-out examples better with the base model beyond chance)");
    }
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "built {} ({} templates, {} datasources, {bytes} bytes) in {:.1} s",
        out.display(),
        index.catalog.template_count(),
        index.partitions.len(),
        start.elapsed().as_secs_f64()
    );
    match (&index.manifest.head, index.head_training_ms) {
        (Some(head), Some(ms)) => {
            eprintln!(
            "learned head: {} templates, {} rows, {} epochs, temperature {:.2}, trained in {:.1} s",
            head.templates, head.rows, head.epochs, head.temperature, ms / 1000.0
        )
        }
        _ => eprintln!(
            "learned head: none (off, or more than index.learned_head.max_templates templates)"
        ),
    }
    if let Some(calibration) = &index.manifest.calibration {
        eprintln!(
            "automatic threshold: {:.3} (median over {} examples)",
            calibration.threshold, calibration.examples
        );
    }
    for datasource in &index.catalog.datasources {
        if datasource.spec.kind == DatasourceKind::Documents {
            build_chunks(
                templates,
                datasource,
                documents_embedder.as_ref(),
                config,
                out,
            )?;
        }
    }
    let tables = schema_tables(&index.catalog, templates)?;
    if !tables.is_empty() {
        let schema = ChunkIndex::build(
            SCHEMA_ARTIFACT,
            &table_documents(&tables),
            documents_embedder.as_ref(),
            &config.documents,
            &|_, _| {},
        )?;
        let path = switchyard_documents::artifact_beside(out, SCHEMA_ARTIFACT);
        schema.write(&path)?;
        eprintln!("built {} ({} SQL tables)", path.display(), tables.len());
    }
    Ok(())
}

/// A documents datasource's chunk artifact, written beside the index `out`.
fn build_chunks(
    templates: &Path,
    datasource: &Datasource,
    embedder: &dyn Embedder,
    config: &Config,
    out: &Path,
) -> Result<()> {
    let name = datasource.name();
    let start = Instant::now();
    let corpus = switchyard_documents::corpus_path(datasource, &templates.join(name))?;
    let docs = switchyard_documents::load_corpus(&corpus)?;
    let bar = progress_bar();
    let chunks = ChunkIndex::build(name, &docs, embedder, &config.documents, &advance(&bar))?;
    bar.finish_and_clear();
    let path = switchyard_documents::artifact_beside(out, name);
    chunks.write(&path)?;
    eprintln!(
        "built {} ({} documents, {} chunks, {} questions) in {:.1} s",
        path.display(),
        chunks.manifest.documents,
        chunks.manifest.chunks,
        chunks.manifest.questions,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `index inspect`: verify the artifact and print its manifest (the probe sentences by
/// their texts: their vectors are for the drift check, not for reading).
pub fn inspect(file: &Path) -> Result<()> {
    let index = Index::read(file)?;
    let mut manifest = serde_json::to_value(&index.manifest)?;
    manifest["probes"] = index
        .manifest
        .probes
        .iter()
        .map(|p| serde_json::Value::from(p.text.as_str()))
        .collect();
    println!("{}", serde_json::to_string_pretty(&manifest)?);
    Ok(())
}

/// `index push`: publish the artifact to S3, and what `index build` wrote beside it: the
/// chunk artifacts (documents datasources, the SQL schema) under `<prefix>/chunks/<name>`
/// an adapted encoder under `<prefix>/encoders/<sha256>.onnx`, and the DuckDB datasources'
/// data files under `<prefix>/data/<datasource>`; print where they went.
pub fn push(file: &Path, templates: &Path, bucket: &str, prefix: &str) -> Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let index = Index::from_bytes(&bytes, &file.display().to_string())?;
    let data = data_files(&index, templates)?;
    let mut chunks = Vec::new();
    let mut names: Vec<&str> = index
        .catalog
        .datasources
        .iter()
        .filter(|d| d.spec.kind == DatasourceKind::Documents)
        .map(|d| d.name())
        .collect();
    names.push(SCHEMA_ARTIFACT);
    for name in names {
        let path = switchyard_documents::artifact_beside(file, name);
        if path.is_file() {
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            chunks.push((name.to_owned(), bytes));
        } else if name != SCHEMA_ARTIFACT {
            anyhow::bail!(
                "{} is missing: `index build` writes it beside the index",
                path.display()
            );
        }
    }
    let encoder = match &index.manifest.encoder {
        Some(manifest) => {
            let path = encoder::graph_beside(file);
            let bytes = std::fs::read(&path).with_context(|| {
                format!(
                    "{} (the adapted encoder {}) is missing: `index build` writes it beside the index",
                    path.display(),
                    manifest.model_id
                )
            })?;
            Some((manifest.clone(), bytes))
        }
        None => None,
    };
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let pointers = runtime.block_on(async {
        let sdk = switchyard_s3::sdk_config().await;
        let client = switchyard_s3::s3_client(&sdk);
        let mut pointers = serde_json::Map::new();
        // The encoder first too: it is addressed by the checksum the index names.
        if let Some((manifest, bytes)) = &encoder {
            let place = switchyard_s3::S3IndexStore::new(client.clone(), bucket, prefix)
                .push_encoder(bytes, manifest)
                .await?;
            pointers.insert("encoder".into(), serde_json::Value::from(place));
        }
        // DuckDB datasources' data, then chunks: the index's pointer moves last, onto
        // artifacts already there.
        for (name, files) in &data {
            let manifest = switchyard_s3::S3DataStore::new(client.clone(), bucket, prefix, name)
                .push(files)
                .await?;
            pointers.insert(
                format!("data/{name}"),
                serde_json::to_value(manifest).expect("serialisable"),
            );
        }
        // Chunks first: the index's pointer moves last, onto artifacts already there.
        for (name, bytes) in &chunks {
            let prefix = switchyard_s3::chunks_prefix(prefix, name);
            let pointer = switchyard_s3::S3IndexStore::new(client.clone(), bucket, &prefix)
                .push_chunks(bytes)
                .await?;
            pointers.insert(
                name.clone(),
                serde_json::to_value(pointer).expect("serialisable"),
            );
        }
        let pointer = switchyard_s3::S3IndexStore::new(client, bucket, prefix)
            .push(&bytes)
            .await?;
        pointers.insert(
            "index".into(),
            serde_json::to_value(pointer).expect("serialisable"),
        );
        Ok::<_, switchyard_s3::S3Error>(pointers)
    })?;
    println!("{}", serde_json::to_string_pretty(&pointers)?);
    Ok(())
}

/// A datasource's data files: `(path in the datasource folder, the file on disk)`.
type DataFiles = Vec<(String, PathBuf)>;

/// The files of the index's DuckDB datasources by datasource, read from the catalog folder
/// `templates`, which must be the catalog the index was built from: the adapter function
/// fetches them from S3 at cold start.
fn data_files(index: &Index, templates: &Path) -> Result<Vec<(String, DataFiles)>> {
    let mut data = Vec::new();
    for datasource in &index.catalog.datasources {
        let Some(files) = switchyard_adapters::duckdb_data::data_files(datasource)? else {
            continue;
        };
        if data.is_empty() {
            let catalog = Catalog::load(templates)?;
            anyhow::ensure!(
                catalog.content_hash() == index.manifest.templates_hash,
                "--templates {} is not the catalog the index was built from: its DuckDB datasources' data would not match (build the index from it, or name the catalog it was built from)",
                templates.display()
            );
        }
        let folder = templates.join(datasource.name());
        let mut published = Vec::new();
        for file in files {
            let path = folder.join(&file.path);
            anyhow::ensure!(
                path.is_file(),
                "{}: connection.{} of datasource `{}` names no file",
                path.display(),
                file.key,
                datasource.name()
            );
            published.push((file.path, path));
        }
        data.push((datasource.name().to_owned(), published));
    }
    Ok(data)
}

/// Print the templates whose own examples, left out, are nearer another template (the
/// catalog check); the share of examples that go astray.
fn check_catalog(index: &Index) -> f64 {
    let (confusable, checked) = switchyard_index::index::check::confusable(index);
    let astray: usize = confusable.iter().map(|c| c.astray.len()).sum();
    let share = astray as f64 / checked.max(1) as f64;
    eprintln!(
        "catalog check: {astray} of {checked} examples ({:.1}%) are nearer another template when left out of their own",
        share * 100.0
    );
    for c in confusable.iter().take(10) {
        eprintln!(
            "  {}/{}: {} of {} go astray, mostly to {}; e.g. {:?}",
            c.datasource,
            c.template_id,
            c.astray.len(),
            c.examples,
            c.rival,
            c.astray.iter().take(2).collect::<Vec<_>>()
        );
    }
    share
}
