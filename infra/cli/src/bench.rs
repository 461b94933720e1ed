//! `switchyard bench`: cold start and per-query latency on one thread, the way a 1-vCPU
//! Lambda pays them: model load, index load, the first query, then p50/p95/p99 of the
//! embedding alone and of the whole route (embedding, search, scoring), each query alone,
//! and of the route as a session's second turn (the previous question with it routed too
//! unless the turn stands alone, then the conversation's decision).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};
use serde::Serialize;
use switchyard_catalog::auth::Access;
use switchyard_catalog::config::cache_dir;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_core::conversation::{
    contextualize, joint_question, stands_alone, turn_of, unexecuted_outcome,
};
use switchyard_eval::{load_dataset, percentiles, Percentiles};
use switchyard_index::index::{load_or_build, Index};
use switchyard_routing::router::Router;

use crate::encoder;
use crate::open::cached_index;
use crate::scale::{self, ScaleRow};
use crate::timing::{ms, time_each};

pub struct Options {
    /// Labelled JSON lines; without it, the catalog's own examples.
    pub dataset: Option<PathBuf>,
    /// Queries measured (after the first).
    pub queries: usize,
    /// Also measure synthetic catalogs of these many templates (the scale table).
    pub synthetic: Vec<usize>,
    pub json: bool,
}

#[derive(Serialize)]
struct Report {
    model: String,
    templates: usize,
    queries: usize,
    threads: usize,
    /// Model load + index load + router set-up (the drift check included), index from a
    /// local file.
    cold_start_ms: f64,
    model_load_ms: f64,
    index_load_ms: f64,
    /// Embedding the index's probe sentences and comparing (part of the router set-up).
    drift_check_ms: f64,
    first_query_ms: f64,
    embedding_ms: Percentiles,
    route_ms: Percentiles,
    /// The same queries, each the second turn of a session after the query before it.
    route_in_session_ms: Percentiles,
    /// The share of those turns that stood alone (their own text embedded only).
    standing_alone: f64,
    /// The synthetic catalogs asked for, smallest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    synthetic: Vec<ScaleRow>,
}

/// `config` must already say one thread and no embedding cache (main sees to it).
pub fn run(
    templates: &Path,
    index_file: Option<&Path>,
    config: Config,
    options: &Options,
) -> Result<()> {
    if options.queries == 0 {
        bail!("--queries must be at least 1");
    }
    // Build the cached index first, untimed: the cold start reads an artifact, it does not
    // embed a catalog.
    if index_file.is_none() {
        cached_index(templates, &config)?;
    }

    // The model (the base, or the adapted graph the index names), then the index.
    let started = Instant::now();
    let (index, origin, embedder, model_load_ms, index_load_ms) = match index_file {
        Some(path) => {
            let index = Index::read(path)?;
            let index_load_ms = ms(started);
            let model = Instant::now();
            let origin = path.display().to_string();
            let encoder =
                encoder::for_index(&index, &encoder::graph_beside(path), &origin, &config)?;
            (index, origin, encoder.embedder, ms(model), index_load_ms)
        }
        None => {
            let catalog = Catalog::load(templates)?;
            let encoder = encoder::for_catalog(&catalog, &config)?;
            let model_load_ms = ms(started);
            let loading = Instant::now();
            let (index, _) = load_or_build(
                templates,
                &cache_dir(),
                encoder.embedder.as_ref(),
                encoder.manifest,
                &config.router(),
                &|_, _| {},
            )?;
            let origin = templates.display().to_string();
            (index, origin, encoder.embedder, model_load_ms, ms(loading))
        }
    };
    let router = Router::new(index, config.router(), embedder.clone(), &origin)?;
    let cold_start_ms = ms(started);

    let texts = query_texts(&router, options)?;
    let first = Instant::now();
    router.route(&texts[0], &Access::All)?;
    let first_query_ms = ms(first);

    let measured = &texts[1.min(texts.len() - 1)..];
    let embedding_ms = time_each(measured, |text| {
        embedder.embed_one(&router.embedding_text(text)).map(drop)
    })?;
    let route_ms = time_each(measured, |text| router.route(text, &Access::All).map(drop))?;
    let (route_in_session_ms, standing_alone) = route_in_session(&router, &config, &texts)?;

    let mut sizes = options.synthetic.clone();
    sizes.sort_unstable();
    let synthetic = sizes
        .iter()
        .map(|&count| scale::row(&router, embedder.clone(), count, measured))
        .collect::<Result<Vec<_>>>()?;
    let report = Report {
        model: embedder_model(&router),
        templates: router.index().catalog.template_count(),
        queries: measured.len(),
        threads: config.embedding.threads,
        cold_start_ms,
        model_load_ms,
        index_load_ms,
        drift_check_ms: router.drift().check_ms,
        first_query_ms,
        embedding_ms,
        route_ms,
        route_in_session_ms,
        standing_alone,
        synthetic,
    };
    if options.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print(&report);
    }
    Ok(())
}

/// Each query after the first as the second turn of a session whose first turn was the
/// query before it, as the service routes it: the question alone, then, unless it stands
/// alone (`stands_alone`), the previous question with it; then the conversation's
/// decision. No assistant text: a session's last answer is ours, and asks nothing here.
/// Also the share of turns that stood alone.
fn route_in_session(
    router: &Router,
    config: &Config,
    texts: &[String],
) -> Result<(Percentiles, f64)> {
    let sessions = &config.sessions;
    let mut samples = Vec::with_capacity(texts.len().saturating_sub(1));
    let mut alone = 0usize;
    for pair in texts.windows(2) {
        let (previous, query) = (&pair[0], &pair[1]);
        let first = router.route(previous, &Access::All)?;
        let outcome = unexecuted_outcome(&first);
        let turns = vec![turn_of(
            &first,
            &[],
            outcome,
            Default::default(),
            sessions,
            0,
        )];
        let started = Instant::now();
        let own = router.route(query, &Access::All)?;
        let joint = match stands_alone(&own, &turns, false, &sessions.context) {
            true => {
                alone += 1;
                None
            }
            false => joint_question(&turns, query, sessions)
                .map(|text| router.route(&text, &Access::All))
                .transpose()?,
        };
        black_box(contextualize(
            router,
            sessions,
            own,
            joint.as_ref(),
            None,
            &turns,
            None,
            1,
        ));
        samples.push(ms(started));
    }
    let share = alone as f64 / samples.len().max(1) as f64;
    Ok((percentiles(samples), share))
}

fn embedder_model(router: &Router) -> String {
    router.embedder().model_id().to_owned()
}

/// The dataset's texts, else every example of the catalog, cycled up to `queries` + 1.
fn query_texts(router: &Router, options: &Options) -> Result<Vec<String>> {
    let pool: Vec<String> = match &options.dataset {
        Some(path) => load_dataset(path)?.into_iter().map(|q| q.text).collect(),
        None => router
            .index()
            .catalog
            .datasources
            .iter()
            .flat_map(|d| &d.templates)
            .flat_map(|t| t.nl_examples.iter().cloned())
            .collect(),
    };
    if pool.is_empty() {
        bail!("no queries to measure: the dataset or the catalog's examples are empty");
    }
    Ok(pool
        .iter()
        .cycle()
        .take(options.queries + 1)
        .cloned()
        .collect())
}

fn print(r: &Report) {
    println!(
        "{} templates, {} queries, {} thread(s), model {}",
        r.templates, r.queries, r.threads, r.model
    );
    println!(
        "cold start {:.1} ms (model {:.1} ms, index {:.1} ms, drift check {:.1} ms); first query {:.2} ms",
        r.cold_start_ms, r.model_load_ms, r.index_load_ms, r.drift_check_ms, r.first_query_ms
    );
    let row = |name: &str, p: &Percentiles| {
        println!(
            "{name:<22} p50 {:>6.2} ms  p95 {:>6.2} ms  p99 {:>6.2} ms",
            p.p50, p.p95, p.p99
        )
    };
    row("embedding", &r.embedding_ms);
    row("route (whole)", &r.route_ms);
    row("route in a session", &r.route_in_session_ms);
    println!(
        "  ({:.0}% of those turns stood alone: their own text embedded only)",
        100.0 * r.standing_alone
    );
    if !r.synthetic.is_empty() {
        scale::print(&r.synthetic);
    }
}
