//! `switchyard`: build indexes, route questions, evaluate a catalog, serve the local API.

mod serve;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use switchyard_core::config::{cache_dir, Config};
use switchyard_core::embed::Embedder;
use switchyard_core::eval::{evaluate, load_dataset, stage_table, EvalReport, StageRow};
use switchyard_core::index::{load_or_build, Index};
use switchyard_core::router::{Access, Outcome, Router, Routing};
use switchyard_core::template::Catalog;
use switchyard_embed::MiniLmEmbedder;

#[derive(Parser)]
#[command(
    name = "switchyard",
    version,
    about = "Route plain-language questions to the right datasource and template"
)]
struct Cli {
    /// Catalog folder (one subfolder per datasource).
    #[arg(
        long,
        global = true,
        default_value = "templates/demo",
        env = "SWITCHYARD_TEMPLATES"
    )]
    templates: PathBuf,
    /// Use this index artifact instead of building or reusing the cached one.
    #[arg(long, global = true, env = "SWITCHYARD_INDEX")]
    index: Option<PathBuf>,
    /// Configuration file merged over the embedded defaults (env SWITCHYARD_CONFIG).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Index artifacts.
    Index {
        #[command(subcommand)]
        command: IndexCommand,
    },
    /// Route one question and show every candidate with its stage scores.
    Route {
        question: String,
        /// Print the route report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Measure routing quality and latency on a labelled JSON-lines data set.
    Eval {
        #[arg(long)]
        dataset: PathBuf,
        #[arg(long)]
        json: bool,
        /// Queries routed one at a time to measure whole-route latency.
        #[arg(long, default_value_t = 200)]
        latency_samples: usize,
        /// Also score each stage on and off (same query vectors): what each contributes.
        #[arg(long)]
        stages: bool,
    },
    /// Templates per datasource and the configuration in force.
    Stats,
    /// Serve the HTTP API locally (the same handler as the router Lambda).
    Serve {
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        #[arg(long, default_value_t = 8080)]
        port: u16,
    },
}

#[derive(Subcommand)]
enum IndexCommand {
    /// Embed a catalog and write its index artifact.
    Build {
        #[arg(long, default_value = "switchyard.idx")]
        out: PathBuf,
    },
    /// Verify an artifact and print its manifest.
    Inspect { file: PathBuf },
    /// Publish an artifact to S3: uploaded under `<prefix>/<sha256>.idx`, read back and
    /// checked, then made `<prefix>/current` (the router's pointer). AWS settings come
    /// from the usual environment (`AWS_REGION`, credentials, `AWS_ENDPOINT_URL`).
    Push {
        file: PathBuf,
        #[arg(long, env = "SWITCHYARD_INDEX_BUCKET")]
        bucket: String,
        #[arg(long, env = "SWITCHYARD_INDEX_PREFIX", default_value = "indexes")]
        prefix: String,
    },
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,switchyard=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let config = Config::from_env(cli.config.as_deref())?;
    config.embedding.apply_threads();

    match &cli.command {
        Command::Index {
            command:
                IndexCommand::Push {
                    file,
                    bucket,
                    prefix,
                },
        } => {
            let bytes =
                std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
            let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
            let pointer = runtime.block_on(async {
                let sdk = switchyard_aws::sdk_config().await;
                switchyard_aws::S3IndexStore::new(switchyard_aws::s3_client(&sdk), bucket, prefix)
                    .push(&bytes)
                    .await
            })?;
            println!("{}", serde_json::to_string_pretty(&pointer)?);
            Ok(())
        }
        Command::Index {
            command: IndexCommand::Inspect { file },
        } => {
            let index = Index::read(file)?;
            println!("{}", serde_json::to_string_pretty(&index.manifest)?);
            Ok(())
        }
        Command::Index {
            command: IndexCommand::Build { out },
        } => {
            let embedder = load_embedder(&config)?;
            let catalog = Catalog::load(&cli.templates)?;
            switchyard_adapters::check_catalog(&catalog)?;
            let start = Instant::now();
            let bar = progress_bar();
            let index = Index::build(catalog, embedder.as_ref(), &config, &|done, total| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            })?;
            bar.finish_and_clear();
            index.write(out)?;
            let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
            eprintln!(
                "built {} ({} templates, {} datasources, {bytes} bytes) in {:.1} s",
                out.display(),
                index.catalog.template_count(),
                index.partitions.len(),
                start.elapsed().as_secs_f64()
            );
            match (&index.manifest.head, index.head_training_ms) {
                (Some(head), Some(ms)) => eprintln!(
                    "learned head: {} templates, {} rows, {} epochs, temperature {:.2}, trained in {:.1} s",
                    head.templates, head.rows, head.epochs, head.temperature, ms / 1000.0
                ),
                _ => eprintln!("learned head: none (off, or more than index.learned_head.max_templates templates)"),
            }
            if let Some(calibration) = &index.manifest.calibration {
                eprintln!(
                    "automatic threshold: {:.3} (median over {} examples)",
                    calibration.threshold, calibration.examples
                );
            }
            Ok(())
        }
        Command::Route { question, json } => {
            let router = open_router(&cli, config)?;
            let routing = router.route(question, &Access::All)?;
            if *json {
                let report = switchyard_core::api::route_report(&router, &routing);
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print_routing(&routing);
            }
            Ok(())
        }
        Command::Eval {
            dataset,
            json,
            latency_samples,
            stages,
        } => {
            let router = open_router(&cli, config)?;
            let queries = load_dataset(dataset)?;
            let report = evaluate(&router, &queries, *latency_samples)?;
            let table = if *stages {
                Some(stage_table(&router, &queries)?)
            } else {
                None
            };
            if *json {
                let mut value = serde_json::to_value(&report)?;
                if let Some(table) = &table {
                    value["stages"] = serde_json::to_value(table)?;
                }
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                print_report(&report);
                if let Some(table) = &table {
                    print_stages(table);
                }
            }
            Ok(())
        }
        Command::Stats => {
            let router = open_router(&cli, config)?;
            let stats = switchyard_core::api::stats(&router, &Access::All);
            println!("{}", serde_json::to_string_pretty(&stats)?);
            Ok(())
        }
        Command::Serve { host, port } => {
            let router = open_router(&cli, config)?;
            serve::run(router, &cli.templates, host, *port)
        }
    }
}

fn load_embedder(config: &Config) -> Result<Arc<dyn Embedder>> {
    let dir = config.embedding.resolved_model_dir();
    let embedder = MiniLmEmbedder::load(&dir, config.embedding.batch_size)?;
    Ok(Arc::new(embedder))
}

fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("embedding templates {bar:40} {pos}/{len} texts ({eta})")
            .expect("a valid template"),
    );
    bar
}

/// The router for the CLI's catalog: `--index`, or the cached index of `--templates`.
fn open_router(cli: &Cli, config: Config) -> Result<Router> {
    let embedder = load_embedder(&config)?;
    let (index, origin) = match &cli.index {
        Some(path) => (Index::read(path)?, path.display().to_string()),
        None => {
            let bar = progress_bar();
            let (index, built) = load_or_build(
                &cli.templates,
                &cache_dir(),
                embedder.as_ref(),
                &config,
                &|done, total| {
                    bar.set_length(total as u64);
                    bar.set_position(done as u64);
                },
            )
            .with_context(|| format!("loading the catalog {}", cli.templates.display()))?;
            bar.finish_and_clear();
            if built {
                tracing::info!(templates = %cli.templates.display(), "built and cached the index");
            }
            (index, cli.templates.display().to_string())
        }
    };
    Ok(Router::new(index, config, embedder, &origin)?)
}

fn print_routing(routing: &Routing) {
    println!("query: {}", routing.query);
    println!(
        "{:>3}  {:<14} {:<34} {:>6} {:>6} {:>6} {:>10} {:>9} {:>6} {:>6}",
        "#",
        "datasource",
        "template",
        "rank",
        "prob",
        "words",
        "confidence",
        "embedding",
        "string",
        "rerank"
    );
    let score = |s: Option<f32>| s.map_or_else(|| "-".to_owned(), |s| format!("{s:.3}"));
    for (rank, m) in routing.matches.iter().enumerate() {
        println!(
            "{:>3}  {:<14} {:<34} {:>6.3} {:>6} {:>6} {:>10.3} {:>9.3} {:>6} {:>6}{}",
            rank + 1,
            m.datasource,
            m.template_id,
            m.rank_score,
            score(m.probability),
            score(m.keyword_score),
            m.combined_score,
            m.embedding_score,
            score(m.string_similarity_score),
            score(m.rerank_score),
            match &m.declined_by {
                Some(d) => format!(
                    "  (declined: nearer the negative example \"{}\", {:.3} vs {:.3})",
                    d.negative_example, d.similarity, d.template_similarity
                ),
                None if m.combined_score < routing.threshold => "  (below threshold)".to_owned(),
                None => String::new(),
            }
        );
    }
    let (threshold, source) = (routing.threshold, routing.ranking);
    match (routing.outcome, routing.selected_match()) {
        (Outcome::Clarify, _) => println!(
            "→ clarify between {} ({}; {source} ranking)",
            routing
                .clarify_choices()
                .iter()
                .map(|m| format!("{}/{}", m.datasource, m.template_id))
                .collect::<Vec<_>>()
                .join(", "),
            routing.reason()
        ),
        (_, Some(m)) => println!(
            "→ {} / {} (confidence {:.3} ≥ threshold {threshold:.3}; {}; {source} ranking)",
            m.datasource,
            m.template_id,
            m.combined_score,
            routing.reason()
        ),
        (_, None) => println!(
            "→ no_match ({}; threshold {threshold:.3})",
            routing.reason()
        ),
    }
    println!(
        "timings: embedding {:.2} ms, search {:.3} ms, string {:.3} ms, total {:.2} ms",
        routing.timings.embedding_ms,
        routing.timings.search_ms,
        routing.timings.string_similarity_ms,
        routing.timings.total_ms
    );
}

fn print_stages(rows: &[StageRow]) {
    println!("\neach stage on and off (same query vectors; threshold automatic for each):");
    println!(
        "{:<44} {:>7} {:>7} {:>9} {:>9} {:>7} {:>8}",
        "stages", "intent", "source", "threshold", "in-scope", "oos", "clarify"
    );
    for row in rows {
        println!(
            "{:<44} {:>6.2}% {:>6.2}% {:>9.3} {:>8.2}% {:>6.1}% {:>7.2}%",
            row.stages,
            row.intent_accuracy * 100.0,
            row.datasource_accuracy * 100.0,
            row.threshold,
            row.in_scope_accuracy * 100.0,
            row.oos_recall * 100.0,
            row.clarify_rate * 100.0
        );
    }
}

fn print_report(report: &EvalReport) {
    let pct = |x: f64| format!("{:.2}%", x * 100.0);
    println!(
        "queries: {} ({} in scope, {} out of scope)",
        report.queries, report.in_scope_queries, report.oos_queries
    );
    println!(
        "intent accuracy (argmax, in scope): {}",
        pct(report.intent_accuracy)
    );
    println!(
        "datasource accuracy (argmax, in scope): {}",
        pct(report.datasource_accuracy)
    );
    println!(
        "at threshold {:.3} ({}): in-scope accuracy {}, out-of-scope recall {}, precision {}",
        report.threshold,
        report.threshold_source,
        pct(report.in_scope_accuracy),
        pct(report.oos_recall),
        pct(report.oos_precision)
    );
    println!(
        "clarify: {} of in-scope queries, the right template among the choices in {}; resolved (right execute or right among choices) {}",
        pct(report.clarify_rate),
        pct(report.clarify_contains_expected),
        pct(report.in_scope_resolved)
    );
    println!(
        "\n{:>9}  {:>17}  {:>10}  {:>13}",
        "threshold", "in-scope accuracy", "oos recall", "oos precision"
    );
    for row in &report.thresholds {
        println!(
            "{:>9.2}  {:>17}  {:>10}  {:>13}",
            row.threshold,
            pct(row.in_scope_accuracy),
            pct(row.oos_recall),
            pct(row.oos_precision)
        );
    }
    println!("\nmost confused (expected → predicted):");
    for pair in &report.confused_pairs {
        println!(
            "  {:>3}  {} → {}",
            pair.count, pair.expected, pair.predicted
        );
    }
    let l = &report.latency_ms;
    let s = &report.scoring_latency_ms;
    println!(
        "\nrouting latency (embedding + scoring, {} queries): p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms",
        l.samples, l.p50, l.p95, l.p99
    );
    let e = &report.embedding_latency_ms;
    println!(
        "of which embedding: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms",
        e.p50, e.p95, e.p99
    );
    println!(
        "search + scoring only ({} queries): p50 {:.3} ms, p95 {:.3} ms, p99 {:.3} ms",
        s.samples, s.p50, s.p95, s.p99
    );
}
