//! Dump the embeddings the router sees, for offline research on scoring methods.
//!
//! ```sh
//! cargo run -p switchyard-eval --example dump_vectors -- \
//!     --templates templates/clinc150 --queries tests/data/clinc150/val.jsonl --out /tmp/sy-vectors
//! ```
//!
//! For each `--templates DIR` it writes `<out>/<catalog>.templates.npy` (f32, rows × dim) and
//! `<out>/<catalog>.templates.json` (one entry per row: datasource, template, kind
//! `example` | `description`, text), every template embedded in one batch as the index
//! build does. For each `--queries FILE.jsonl` it writes `<out>/<stem>.queries.npy` and
//! `.json` (text, intent, domain), each query embedded alone as the router does; add
//! `--batch` to embed queries 32 at a time instead (faster; equal up to rounding).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;
use switchyard_catalog::template::Catalog;
use switchyard_embed::MiniLmEmbedder;
use switchyard_eval::load_dataset;
use switchyard_index::config::EmbeddingConfig;
use switchyard_index::index::template_texts;
use switchyard_vectors::embed::Embedder;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Write a little-endian f32 matrix in NumPy's .npy format (version 1.0).
fn write_npy(path: &Path, rows: &[Vec<f32>], dimension: usize) -> Result<(), BoxError> {
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}",
        rows.len(),
        dimension
    );
    // Magic (6) + version (2) + length (2) + header + '\n' must be a multiple of 64.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.div_ceil(64) * 64 - unpadded));
    header.push('\n');
    let header_len = u16::try_from(header.len())?;

    let mut bytes = Vec::with_capacity(10 + header.len() + rows.len() * dimension * 4);
    bytes.extend_from_slice(b"\x93NUMPY\x01\x00");
    bytes.extend_from_slice(&header_len.to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for row in rows {
        if row.len() != dimension {
            return Err(format!("a row has {} values, expected {dimension}", row.len()).into());
        }
        for x in row {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::File::create(path)?.write_all(&bytes)?;
    Ok(())
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), BoxError> {
    std::fs::write(path, serde_json::to_string_pretty(value)?)?;
    Ok(())
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .or_else(|| path.file_name())
        .map_or_else(|| "out".to_owned(), |s| s.to_string_lossy().into_owned())
}

fn dump_catalog(embedder: &dyn Embedder, dir: &Path, out: &Path) -> Result<(), BoxError> {
    let catalog = Catalog::load(dir)?;
    let mut rows = Vec::new();
    let mut entries = Vec::new();
    for datasource in &catalog.datasources {
        for template in &datasource.templates {
            let owned = template_texts(template);
            let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
            let vectors = embedder.embed(&texts)?;
            for (i, (text, vector)) in texts.iter().zip(vectors).enumerate() {
                let examples = template.nl_examples.len();
                let kind = match i {
                    i if i < examples => "example",
                    i if i == examples => "description",
                    _ => "id",
                };
                entries.push(json!({
                    "datasource": datasource.name(),
                    "template": template.id,
                    "kind": kind,
                    "text": text,
                }));
                rows.push(vector);
            }
        }
    }
    let name = stem(dir);
    write_npy(
        &out.join(format!("{name}.templates.npy")),
        &rows,
        embedder.dimension(),
    )?;
    write_json(
        &out.join(format!("{name}.templates.json")),
        &serde_json::Value::Array(entries),
    )?;
    eprintln!("{}: {} template texts", dir.display(), rows.len());
    Ok(())
}

fn dump_queries(
    embedder: &dyn Embedder,
    path: &Path,
    out: &Path,
    batch: bool,
) -> Result<(), BoxError> {
    let queries = load_dataset(path)?;
    let texts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
    let rows = if batch {
        embedder.embed(&texts)?
    } else {
        texts
            .iter()
            .map(|t| embedder.embed_one(t))
            .collect::<Result<Vec<_>, _>>()?
    };
    let entries: Vec<serde_json::Value> = queries
        .iter()
        .map(|q| json!({"text": q.text, "intent": q.intent, "domain": q.domain}))
        .collect();
    let name = stem(path);
    write_npy(
        &out.join(format!("{name}.queries.npy")),
        &rows,
        embedder.dimension(),
    )?;
    write_json(
        &out.join(format!("{name}.queries.json")),
        &serde_json::Value::Array(entries),
    )?;
    eprintln!("{}: {} queries", path.display(), rows.len());
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let mut catalogs = Vec::new();
    let mut datasets = Vec::new();
    let mut out = PathBuf::from("/tmp/sy-vectors");
    let mut batch = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--templates" => catalogs.push(PathBuf::from(args.next().ok_or("--templates DIR")?)),
            "--queries" => datasets.push(PathBuf::from(args.next().ok_or("--queries FILE")?)),
            "--out" => out = PathBuf::from(args.next().ok_or("--out DIR")?),
            "--batch" => batch = true,
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: dump_vectors [--templates DIR]... \
                     [--queries FILE.jsonl]... [--out DIR] [--batch]"
                )
                .into())
            }
        }
    }
    let config = EmbeddingConfig::default();
    config.apply_threads();
    let embedder = MiniLmEmbedder::from_config(&config)?;
    std::fs::create_dir_all(&out)?;
    for dir in &catalogs {
        dump_catalog(&embedder, dir, &out)?;
    }
    for path in &datasets {
        dump_queries(&embedder, path, &out, batch)?;
    }
    Ok(())
}
