//! What every command that routes needs: the embedding model, the index (an artifact
//! file, or the catalog's cached index, built when missing) and the router over them.

use std::path::Path;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use switchyard_adapters::schema;
use switchyard_catalog::config::cache_dir;
use switchyard_catalog::template::{Catalog, DatasourceKind};
use switchyard_core::config::Config;
use switchyard_documents::schema::{table_documents, TableText, SCHEMA_ARTIFACT};
use switchyard_documents::ChunkIndex;
use switchyard_index::index::{load_or_build, Index};
use switchyard_routing::router::Router;

use crate::encoder::{self, Encoder};

pub fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("embedding templates {bar:40} {pos}/{len} texts ({eta})")
            .expect("a valid template"),
    );
    bar
}

/// What a build reports its progress to: `bar`'s length and position.
pub fn advance(bar: &ProgressBar) -> impl Fn(usize, usize) + Sync + '_ {
    move |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    }
}

/// The router for the CLI's catalog: `--index` (with its adapted encoder beside it, if it
/// was built with one), or the cached index of `--templates`.
pub fn open_router(templates: &Path, index: Option<&Path>, config: &Config) -> Result<Router> {
    let (index, origin, encoder) = match index {
        Some(path) => indexed(path, config)?,
        None => {
            let (index, encoder) = cached_index(templates, config)?;
            (index, templates.display().to_string(), encoder)
        }
    };
    let documents = encoder::for_documents(&encoder, &index.catalog, config)?;
    let router = Router::new(index, config.router(), encoder.embedder, &origin)?;
    Ok(match documents {
        Some(embedder) => router.with_documents_embedder(embedder),
        None => router,
    })
}

/// The index artifact at `path` and the encoder it was built with.
pub fn indexed(path: &Path, config: &Config) -> Result<(Index, String, Encoder)> {
    let origin = path.display().to_string();
    let index = Index::read(path)?;
    let encoder = encoder::for_index(&index, &encoder::graph_beside(path), &origin, config)?;
    Ok((index, origin, encoder))
}

/// The cached index of `templates` and its encoder (adapted to the catalog when
/// `embedding.adaptation` says so), built (with progress bars) and cached when missing.
pub fn cached_index(templates: &Path, config: &Config) -> Result<(Index, Encoder)> {
    let catalog = Catalog::load(templates)
        .with_context(|| format!("loading the catalog {}", templates.display()))?;
    let encoder = encoder::for_catalog(&catalog, config)?;
    let bar = progress_bar();
    let (index, built) = load_or_build(
        templates,
        &cache_dir(),
        encoder.embedder.as_ref(),
        encoder.manifest.clone(),
        &config.router(),
        &advance(&bar),
    )
    .with_context(|| format!("loading the catalog {}", templates.display()))?;
    bar.finish_and_clear();
    if built {
        // The target the log line had when this was in main.rs.
        tracing::info!(
            target: "switchyard",
            templates = %templates.display(),
            "built and cached the index"
        );
    }
    Ok((index, encoder))
}

/// The chunk artifacts of the catalog's documents datasources, with where each came from:
/// beside `--index` (written there by `index build`), or the cached ones of `--templates`,
/// built when missing.
pub fn open_documents(
    templates: &Path,
    index: Option<&Path>,
    router: &Router,
    config: &Config,
) -> Result<Vec<(ChunkIndex, String)>> {
    let mut artifacts = Vec::new();
    for datasource in &router.index().catalog.datasources {
        if datasource.spec.kind != DatasourceKind::Documents {
            continue;
        }
        let name = datasource.name();
        let (chunks, origin) = match index {
            Some(index) => {
                let path = switchyard_documents::artifact_beside(index, name);
                let chunks = ChunkIndex::read(&path).with_context(|| {
                    format!("the chunks of `{name}` (written beside the index by `index build`)")
                })?;
                (chunks, path.display().to_string())
            }
            None => {
                let bar = progress_bar();
                let (chunks, built) = switchyard_documents::load_or_build(
                    datasource,
                    &templates.join(name),
                    &cache_dir(),
                    router.documents_embedder(),
                    &config.documents,
                    &advance(&bar),
                )
                .with_context(|| format!("the chunks of `{name}`"))?;
                bar.finish_and_clear();
                if built {
                    tracing::info!(target: "switchyard", datasource = %name, chunks = chunks.manifest.chunks, "built and cached the chunks");
                }
                (
                    chunks,
                    format!("{} (cached)", templates.join(name).display()),
                )
            }
        };
        artifacts.push((chunks, origin));
    }
    Ok(artifacts)
}

/// Every SQL datasource's tables, flattened (`switchyard_adapters::schema`); datasources
/// this process cannot reach are left out.
pub fn schema_tables(catalog: &Catalog, templates: &Path) -> Result<Vec<TableText>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut tables = Vec::new();
    for datasource in &catalog.datasources {
        if datasource.spec.kind != DatasourceKind::Sql {
            continue;
        }
        let found = runtime
            .block_on(schema::introspect(datasource, Some(templates)))
            .with_context(|| format!("reading the tables of `{}`", datasource.name()))?;
        for table in found.unwrap_or_default() {
            tables.push(TableText {
                datasource: table.datasource.clone(),
                table: table.name.clone(),
                text: table.flatten(),
            });
        }
    }
    Ok(tables)
}

/// The SQL datasources' tables as a searchable artifact: beside `--index` (written by
/// `index build`), or cached for `--templates`, built when missing; `None` without SQL
/// tables.
pub fn open_schema(
    templates: &Path,
    index: Option<&Path>,
    router: &Router,
    config: &Config,
) -> Result<Option<ChunkIndex>> {
    if let Some(index) = index {
        let path = switchyard_documents::artifact_beside(index, SCHEMA_ARTIFACT);
        if !path.is_file() {
            return Ok(None);
        }
        return Ok(Some(ChunkIndex::read(&path)?));
    }
    let tables = schema_tables(&router.index().catalog, templates)?;
    if tables.is_empty() {
        return Ok(None);
    }
    let (schema, _) = switchyard_documents::load_or_build_from(
        SCHEMA_ARTIFACT,
        &table_documents(&tables),
        &cache_dir(),
        router.documents_embedder(),
        &config.documents,
        &|_, _| {},
    )?;
    Ok(Some(schema))
}
