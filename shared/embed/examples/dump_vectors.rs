//! Dump the embeddings the router sees, for offline research on scoring methods.
//!
//! ```sh
//! cargo run -p switchyard-embed --example dump_vectors -- \
//!     --templates templates/clinc150 --queries tests/data/clinc150/val.jsonl --out /tmp/sy-vectors
//! ```
//!
//! For each `--templates DIR` it writes `<out>/<catalog>.templates.npy` (f32, rows × dim) and
//! `<out>/<catalog>.templates.json` (one entry per row: datasource, template, kind
//! `example` | `description`, text), every template embedded in one batch as the index
//! build does. For each `--queries FILE.jsonl` it writes `<out>/<stem>.queries.npy` and
//! `.json` (text, intent, domain), each query embedded alone as the router does; add
//! `--batch` to embed queries 32 at a time instead (faster; equal up to rounding).
//!
//! `--poolings` also writes, next to each `.npy`, `.max.npy` (max over real tokens) and
//! `.cls.npy` (the [CLS] token) from the same forward pass, each L2-normalised: research on
//! features other than the router's mean pooling.

use std::io::Write;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use serde_json::json;
use switchyard_core::config::Config;
use switchyard_core::embed::Embedder;
use switchyard_core::eval::load_dataset;
use switchyard_core::index::template_texts;
use switchyard_core::template::Catalog;
use switchyard_embed::MiniLmEmbedder;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Rows = Vec<Vec<f32>>;

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

/// Max and [CLS] pooling of all-MiniLM-L6-v2's last layer (the router uses mean pooling).
struct Pooler {
    model: BertModel,
    tokenizer: Tokenizer,
}

impl Pooler {
    fn load(dir: &Path) -> Result<Pooler, BoxError> {
        let config: BertConfig = serde_json::from_slice(&std::fs::read(dir.join("config.json"))?)?;
        let weights = std::fs::read(dir.join("model.safetensors"))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)?;
        let model = BertModel::load(vb, &config)?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        tokenizer.with_truncation(Some(TruncationParams {
            max_length: 256,
            ..TruncationParams::default()
        }))?;
        Ok(Pooler { model, tokenizer })
    }

    /// (max-pooled, CLS) unit vectors, one pair per text.
    fn pool(&self, texts: &[&str]) -> Result<(Rows, Rows), BoxError> {
        let (mut maxes, mut clss) = (Vec::new(), Vec::new());
        for chunk in texts.chunks(32) {
            let encodings = self.tokenizer.encode_batch(chunk.to_vec(), true)?;
            let stack =
                |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> candle_core::Result<Tensor> {
                    let rows: Vec<Tensor> = encodings
                        .iter()
                        .map(|e| Tensor::new(f(e), &Device::Cpu))
                        .collect::<candle_core::Result<_>>()?;
                    Tensor::stack(&rows, 0)
                };
            let ids = stack(&|e| e.get_ids())?;
            let type_ids = stack(&|e| e.get_type_ids())?;
            let mask = stack(&|e| e.get_attention_mask())?;
            let hidden = self.model.forward(&ids, &type_ids, Some(&mask))?;
            let hidden: Vec<Vec<Vec<f32>>> = hidden.to_vec3()?;
            for (states, encoding) in hidden.iter().zip(&encodings) {
                let real = encoding
                    .get_attention_mask()
                    .iter()
                    .filter(|&&m| m == 1)
                    .count();
                let mut max = states[0].clone();
                for token in &states[1..real] {
                    max.iter_mut().zip(token).for_each(|(m, x)| *m = m.max(*x));
                }
                maxes.push(unit(max));
                clss.push(unit(states[0].clone()));
            }
        }
        Ok((maxes, clss))
    }
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// Write the extra poolings of `texts` as `<out>/<base>.max.npy` and `<out>/<base>.cls.npy`.
fn write_poolings(pooler: &Pooler, texts: &[&str], out: &Path, base: &str) -> Result<(), BoxError> {
    let (maxes, clss) = pooler.pool(texts)?;
    let dimension = maxes.first().map_or(0, Vec::len);
    write_npy(&out.join(format!("{base}.max.npy")), &maxes, dimension)?;
    write_npy(&out.join(format!("{base}.cls.npy")), &clss, dimension)?;
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

fn dump_catalog(
    embedder: &dyn Embedder,
    pooler: Option<&Pooler>,
    dir: &Path,
    out: &Path,
) -> Result<(), BoxError> {
    let catalog = Catalog::load(dir)?;
    let mut rows = Vec::new();
    let mut entries = Vec::new();
    let mut all_texts = Vec::new();
    for datasource in &catalog.datasources {
        for template in &datasource.templates {
            let owned = template_texts(template);
            let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
            let vectors = embedder.embed(&texts)?;
            all_texts.extend(owned.iter().cloned());
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
    if let Some(pooler) = pooler {
        let all_texts: Vec<&str> = all_texts.iter().map(String::as_str).collect();
        write_poolings(pooler, &all_texts, out, &format!("{name}.templates"))?;
    }
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
    pooler: Option<&Pooler>,
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
    if let Some(pooler) = pooler {
        write_poolings(pooler, &texts, out, &format!("{name}.queries"))?;
    }
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
    let mut poolings = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--templates" => catalogs.push(PathBuf::from(args.next().ok_or("--templates DIR")?)),
            "--queries" => datasets.push(PathBuf::from(args.next().ok_or("--queries FILE")?)),
            "--out" => out = PathBuf::from(args.next().ok_or("--out DIR")?),
            "--batch" => batch = true,
            "--poolings" => poolings = true,
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: dump_vectors [--templates DIR]... \
                     [--queries FILE.jsonl]... [--out DIR] [--batch] [--poolings]"
                )
                .into())
            }
        }
    }
    let config = Config::default();
    config.embedding.apply_threads();
    let model_dir = config.embedding.resolved_model_dir();
    let embedder = MiniLmEmbedder::load(&model_dir, config.embedding.batch_size)?;
    let pooler = if poolings {
        Some(Pooler::load(&model_dir)?)
    } else {
        None
    };
    std::fs::create_dir_all(&out)?;
    for dir in &catalogs {
        dump_catalog(&embedder, pooler.as_ref(), dir, &out)?;
    }
    for path in &datasets {
        dump_queries(&embedder, pooler.as_ref(), path, &out, batch)?;
    }
    Ok(())
}
