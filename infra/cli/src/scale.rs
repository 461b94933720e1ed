//! `switchyard bench --synthetic N,...`: how routing grows with the catalog. For each size,
//! a synthetic catalog (jittered copies of the real catalog's templates, in 10
//! datasources) is built, written to artifact bytes and loaded back from them, then routed
//! on one thread, and its answers compared with the same catalog searched by an exact scan
//! of every centroid (no HNSW graph): what the graph's shortcuts cost in agreement.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;
use switchyard_catalog::auth::Access;
use switchyard_eval::Percentiles;
use switchyard_index::config::RouterConfig;
use switchyard_index::index::Index;
use switchyard_index::synthetic::synthetic_index;
use switchyard_routing::router::Router;
use switchyard_vectors::embed::Embedder;

use crate::timing::{ms, time_each};

/// Datasources of a synthetic catalog, and the rows (texts) of each template.
const DATASOURCES: usize = 10;
const ROWS: usize = 4;
/// How many times the artifact is loaded (an odd number: the median is one of them).
const LOADS: usize = 3;

#[derive(Serialize)]
pub struct ScaleRow {
    pub templates: usize,
    /// How its partitions are searched: `head` (the learned head scores every template),
    /// `hnsw` (the graph's candidates) or `exact` (every centroid).
    pub search: String,
    /// Building the index from vectors (the texts' embedding is not part of it: the
    /// vectors are synthetic), head and graphs included.
    pub build_ms: f64,
    pub artifact_bytes: usize,
    /// From the artifact's bytes in memory to a router that answers: what a cold start
    /// costs once the bytes have arrived (model load aside; the drift check included);
    /// the median of [`LOADS`] loads, as are its two parts.
    pub load_ms: f64,
    /// Of which reading the artifact (checksum, decoding, consistency checks) ...
    pub read_ms: f64,
    /// ... and the router's own tables (keywords, openings, the drift check).
    pub router_ms: f64,
    /// The process's resident memory with this index loaded (the model included).
    pub resident_mb: f64,
    /// Whole routes (embedding included), one at a time on one thread.
    pub route_ms: Percentiles,
    /// The same routes over the same catalog scanned exactly (no graph anywhere).
    pub exact_route_ms: Percentiles,
    /// Share of the queries whose best template is the one an exact scan finds.
    pub top1_agreement: f64,
}

/// Build, load, route and compare one synthetic catalog of `count` templates.
pub fn row(
    router: &Router,
    embedder: Arc<dyn Embedder>,
    count: usize,
    texts: &[String],
) -> Result<ScaleRow> {
    let config = router.config().clone();
    let started = Instant::now();
    let built = synthetic_index(router.index(), count, DATASOURCES, ROWS, &config, 42);
    let build_ms = ms(started);
    let search = search_kind(&built);
    let bytes = built.to_bytes()?;
    drop(built);

    // Loaded LOADS times, the median of each part kept: a single cold start on a shared
    // machine varies by a fifth from run to run.
    let mut timings = Vec::with_capacity(LOADS);
    let mut loaded = None;
    for _ in 0..LOADS {
        drop(loaded.take());
        let loading = Instant::now();
        let index = Index::from_bytes(&bytes, "synthetic")?;
        let read_ms = ms(loading);
        let assembling = Instant::now();
        loaded = Some(Router::new(
            index,
            config.clone(),
            embedder.clone(),
            "synthetic",
        )?);
        timings.push((ms(loading), read_ms, ms(assembling)));
    }
    let synthetic = loaded.expect("loaded at least once");
    let median = |part: fn(&(f64, f64, f64)) -> f64| {
        let mut values: Vec<f64> = timings.iter().map(part).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let (load_ms, read_ms, router_ms) = (median(|t| t.0), median(|t| t.1), median(|t| t.2));
    let resident_mb = resident_mb();
    let route_ms = time_each(texts, |text| synthetic.route(text, &Access::All).map(drop))?;

    // The same catalog, every partition scanned exactly.
    let mut exact_config: RouterConfig = config.clone();
    exact_config.index.exact_scan_max_templates = usize::MAX;
    let exact_index = synthetic_index(router.index(), count, DATASOURCES, ROWS, &exact_config, 42);
    let exact = Router::new(
        exact_index,
        exact_config,
        embedder.clone(),
        "synthetic-exact",
    )?;
    let exact_route_ms = time_each(texts, |text| exact.route(text, &Access::All).map(drop))?;
    let mut agree = 0usize;
    for text in texts {
        let vector = embedder.embed_one(&synthetic.embedding_text(text))?;
        let best = |r: &Router| -> Result<Option<(String, String)>> {
            Ok(r.route_vector(text, &vector, &Access::All)?
                .best()
                .map(|m| (m.datasource.clone(), m.template_id.clone())))
        };
        agree += usize::from(best(&synthetic)? == best(&exact)?);
    }
    Ok(ScaleRow {
        templates: count,
        search,
        build_ms,
        artifact_bytes: bytes.len(),
        load_ms,
        read_ms,
        router_ms,
        resident_mb,
        route_ms,
        exact_route_ms,
        top1_agreement: agree as f64 / texts.len().max(1) as f64,
    })
}

fn search_kind(index: &Index) -> String {
    if index.head.is_some() {
        "head".to_owned()
    } else if index.partitions.iter().any(|p| p.uses_graph()) {
        "hnsw".to_owned()
    } else {
        "exact".to_owned()
    }
}

/// VmRSS from /proc (Linux, as Lambda); 0 where there is none.
fn resident_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

pub fn print(rows: &[ScaleRow]) {
    println!(
        "{:>9} {:>6} {:>11} {:>12} {:>18} {:>9} {:>9} {:>9} {:>11} {:>10}",
        "templates",
        "search",
        "build ms",
        "artifact MB",
        "load (read+router)",
        "RSS MB",
        "p50 ms",
        "p95 ms",
        "exact p50",
        "top-1 agr"
    );
    for r in rows {
        println!(
            "{:>9} {:>6} {:>11.0} {:>12.1} {:>6.0} ({:>4.0}+{:>4.0}) {:>9.0} {:>9.2} {:>9.2} {:>11.2} {:>9.2}%",
            r.templates,
            r.search,
            r.build_ms,
            r.artifact_bytes as f64 / 1e6,
            r.load_ms,
            r.read_ms,
            r.router_ms,
            r.resident_mb,
            r.route_ms.p50,
            r.route_ms.p95,
            r.exact_route_ms.p50,
            r.top1_agreement * 100.0
        );
    }
}
