//! `switchyard eval-docs`: a documents datasource's retrieval quality on judged queries.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use switchyard_catalog::config::cache_dir;
use switchyard_catalog::template::{Catalog, DatasourceKind};
use switchyard_core::config::Config;
use switchyard_documents::ChunkIndex;
use switchyard_eval::documents::{evaluate_retrieval, load_judged, stages, RetrievalReport};
use switchyard_text::keywords::TermExpansion;

use crate::encoder;
use crate::open::{advance, progress_bar};

pub struct Options<'a> {
    pub datasource: &'a str,
    pub dataset: &'a Path,
    pub json: bool,
    pub stages: bool,
}

pub fn run(templates: &Path, config: &Config, options: &Options<'_>) -> Result<()> {
    let catalog = Catalog::load(templates)?;
    let Some(datasource) = catalog.datasource(options.datasource) else {
        bail!(
            "--datasource: no datasource `{}` in {}",
            options.datasource,
            templates.display()
        );
    };
    if datasource.spec.kind != DatasourceKind::Documents {
        bail!(
            "--datasource: `{}` is a {} datasource, not documents",
            options.datasource,
            datasource.spec.kind.as_str()
        );
    }
    let queries = load_judged(options.dataset)?;
    // Documents are embedded and searched with the base model, also beside an encoder
    // adapted to the templates (`encoder::for_documents`): no need to train one here.
    let embedder = encoder::base(config)?.embedder;
    let bar = progress_bar();
    let start = Instant::now();
    let (chunks, built) = switchyard_documents::load_or_build(
        datasource,
        &templates.join(options.datasource),
        &cache_dir(),
        embedder.as_ref(),
        &config.documents,
        &advance(&bar),
    )
    .with_context(|| format!("the chunks of `{}`", options.datasource))?;
    bar.finish_and_clear();
    let build_s = start.elapsed().as_secs_f64();
    if built {
        eprintln!(
            "built the chunk artifact: {} documents, {} chunks, {} questions in {build_s:.1} s",
            chunks.manifest.documents, chunks.manifest.chunks, chunks.manifest.questions
        );
    }
    let expansion = TermExpansion::new(&config.composite_retrieval.keywords.term_expansion);
    let texts: Vec<String> = queries.iter().map(|q| expansion.expand(&q.text)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed(&refs)?;
    let rows: Vec<RetrievalReport> = if options.stages {
        stages()
            .into_iter()
            .filter(|(name, _)| *name != "questions" || chunks.manifest.questions > 0)
            .map(|stage| evaluate(&chunks, &queries, &vectors, config, &expansion, stage))
            .collect()
    } else {
        let fused = stages().pop().expect("the fused stage");
        vec![evaluate(
            &chunks, &queries, &vectors, config, &expansion, fused,
        )]
    };
    let fused = rows.last().expect("at least one row");
    if options.json {
        let mut value = serde_json::to_value(fused)?;
        value["latency_ms"] = serde_json::json!({
            "p50": fused.latency_ms.p50, "p95": fused.latency_ms.p95, "p99": fused.latency_ms.p99
        });
        value["documents"] = chunks.manifest.documents.into();
        value["chunks"] = chunks.manifest.chunks.into();
        if built {
            value["index_build_s"] = build_s.into();
        }
        if options.stages {
            value["stages"] = serde_json::to_value(&rows)?;
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!(
            "{} queries, {} documents, {} chunks",
            fused.queries, chunks.manifest.documents, chunks.manifest.chunks
        );
        println!("stage      nDCG@10  R@10    R@100   MRR     search p50/p95 ms");
        for row in &rows {
            println!(
                "{:<10} {:.4}   {:.4}  {:.4}  {:.4}  {:.2} / {:.2}",
                row.stage,
                row.ndcg_at_10,
                row.recall_at_10,
                row.recall_at_100,
                row.mrr,
                row.latency_ms.p50,
                row.latency_ms.p95
            );
        }
    }
    Ok(())
}

fn evaluate(
    chunks: &ChunkIndex,
    queries: &[switchyard_eval::documents::JudgedQuery],
    vectors: &[Vec<f32>],
    config: &Config,
    expansion: &TermExpansion,
    stage: (&str, switchyard_documents::Signals),
) -> RetrievalReport {
    evaluate_retrieval(
        chunks,
        queries,
        vectors,
        &config.documents,
        expansion,
        stage,
    )
}
