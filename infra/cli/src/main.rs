//! `switchyard`: build indexes, route questions, evaluate a catalog, serve the local API.

//! Each subcommand lives in its own module; `main` parses the command line, reads the
//! configuration and dispatches.

mod bench;
mod encoder;
mod eval;
mod eval_docs;
mod gate;
mod index;
mod lineage;
mod open;
mod route;
mod scale;
mod serve;
mod stats;
mod suggest;
mod timing;
mod tune;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use switchyard_core::config::Config;
use switchyard_eval::conversation::Replay;
use switchyard_index::config::AdaptationMode;

use crate::open::open_router;
use switchyard_eval::tune::Costs;

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
        /// Also score each stage on and off (same query vectors): what each contributes; on
        /// a catalog with an adapted encoder, the frozen base model's rows too.
        #[arg(long)]
        stages: bool,
        /// Replay conversations (lines with `session_id`) without the session only.
        #[arg(long)]
        no_session: bool,
        /// Replay conversations with the session but not the assistant's turns (lines'
        /// `assistant`).
        #[arg(long, conflicts_with = "no_session")]
        no_assistant: bool,
        /// Also write the data set as traffic: each question's decision and, for one in
        /// `--judge-every`, a judge's feedback from its label (the expected template, or
        /// `none` out of scope), as JSON lines `suggest` and `tune` read.
        #[arg(long)]
        judge_out: Option<PathBuf>,
        #[arg(long, default_value_t = 1, requires = "judge_out")]
        judge_every: usize,
        /// Also write the results as one self-contained HTML page: per-template accuracy,
        /// confused pairs, risk–coverage and reliability charts.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Also write, for each turn of the session replay, what it saw (its routings alone,
        /// with the previous question and with the assistant's turn) and what the session
        /// chose, as JSON lines.
        #[arg(long, conflicts_with = "no_session")]
        turns_out: Option<PathBuf>,
        /// Also measure a noisy copy of the questions beside the clean figures: `typos`
        /// (keyboard slips) or `spaces` (spaces left out). Seeded by --noise-seed.
        #[arg(long, value_enum)]
        noise: Option<eval::NoiseKind>,
        #[arg(long, default_value_t = 1, requires = "noise")]
        noise_seed: u64,
    },
    /// Cold start and per-query latency on one thread: model and index load, the first
    /// query, then p50/p95/p99 of the embedding alone and of the whole route.
    Bench {
        /// Labelled JSON lines whose texts are the queries (default: the catalog's examples).
        #[arg(long)]
        dataset: Option<PathBuf>,
        /// Queries measured one at a time, after the first.
        #[arg(long, default_value_t = 600)]
        queries: usize,
        /// Also build, load and route synthetic catalogs of these many templates
        /// (comma-separated, e.g. 100,1000,10000,100000): the scale table.
        #[arg(long, value_delimiter = ',')]
        synthetic: Vec<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Measure a documents datasource's retrieval on judged queries (JSON lines
    /// `{"query_id", "text", "relevant": [doc ids]}`): nDCG@10, recall@10 and @100, MRR,
    /// search latency.
    EvalDocs {
        #[arg(long)]
        datasource: String,
        #[arg(long)]
        dataset: PathBuf,
        #[arg(long)]
        json: bool,
        /// Also score each vector type, the vectors together and BM25 alone.
        #[arg(long)]
        stages: bool,
    },
    /// Fit the confidence threshold and clarify margin to outcome feedback; print a
    /// configuration patch to review (nothing changes live).
    Tune {
        /// Feedback records as JSON lines.
        #[arg(long, conflicts_with = "table", required_unless_present = "table")]
        feedback: Option<PathBuf>,
        /// A DynamoDB feedback table (the stack's FeedbackTableName).
        #[arg(long)]
        table: Option<String>,
        /// A labelled JSON-lines data set the patch must not make worse.
        #[arg(long)]
        dataset: Option<PathBuf>,
        /// Write the patch to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Judged answers a datasource needs for a threshold of its own.
        #[arg(long, default_value_t = 200)]
        min_per_datasource: usize,
        /// What a wrong answer costs, a right one being worth 1 (higher: fewer wrong
        /// answers, more no_match).
        #[arg(long, default_value_t = 1.0)]
        wrong_answer_cost: f32,
    },
    /// Suggest catalog changes from traffic: new examples from corrected, confirmed and
    /// re-asked questions, negative examples, and candidates for new templates from
    /// unanswered questions; print a patch to review (`git apply`), nothing changes live.
    Suggest {
        /// Feedback records as JSON lines.
        #[arg(long, conflicts_with = "table", required_unless_present = "table")]
        feedback: Option<PathBuf>,
        /// A DynamoDB feedback table (the stack's FeedbackTableName).
        #[arg(long)]
        table: Option<String>,
        /// A labelled JSON-lines data set the patched catalog (re-indexed) must not make
        /// worse.
        #[arg(long)]
        dataset: Option<PathBuf>,
        /// When the data set's questions are in the traffic, cut it into this many folds and
        /// measure each against the patch made without its questions (one re-index each;
        /// 1: measure the whole patch on the data set).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
        folds: u32,
        /// Write the patch to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Unanswered questions a group needs to be a new-template candidate.
        #[arg(long, default_value_t = 5)]
        min_cluster: usize,
        /// Also write the new-template candidates (every question of each) as JSON.
        #[arg(long)]
        candidates: Option<PathBuf>,
        /// Also write the data set's eval of the patched catalog beside the catalog as it
        /// is, as one HTML page (as `eval --report`).
        #[arg(long, requires = "dataset")]
        report: Option<PathBuf>,
    },
    /// Templates per datasource and the configuration in force.
    Stats,
    /// Print the API's OpenAPI 3.1 document (the committed `openapi.json`).
    Openapi,
    /// Serve the HTTP API locally (the same app as the router Lambda).
    Serve {
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Append every decision, and each again when feedback judges it, to this
        /// JSON-lines file: the traffic `suggest --feedback` and `tune --feedback` read.
        #[arg(long)]
        traffic: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum IndexCommand {
    /// Embed a catalog and write its index artifact.
    Build {
        #[arg(long, default_value = "switchyard.idx")]
        out: PathBuf,
        /// Fail, writing nothing, when more than this share of the templates' examples
        /// are nearer another template when left out of their own (the catalog check).
        #[arg(long, value_name = "SHARE")]
        strict: Option<f64>,
        /// Adapt the encoder from the base model even when a cached one of a slightly
        /// different catalog could be trained further (embedding.adaptation
        /// .incremental_max_share 0).
        #[arg(long)]
        full: bool,
    },
    /// Verify an artifact and print its manifest.
    Inspect { file: PathBuf },
    /// Publish an artifact to S3: uploaded under `<prefix>/<sha256>.idx`, read back and
    /// checked, then made `<prefix>/current` (the router's pointer), after what it needs
    /// beside it: the adapted encoder, the documents' chunks, and the DuckDB datasources'
    /// data files from the catalog (`--templates`, the one the index was built from) under
    /// `<prefix>/data/<datasource>`. AWS settings come from the usual environment
    /// (`AWS_REGION`, credentials, `AWS_ENDPOINT_URL`).
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
    let mut config = Config::from_env(cli.config.as_deref())?;
    if matches!(cli.command, Command::Bench { .. } | Command::Eval { .. }) {
        // Measurements embed every query: a remembered vector would time nothing.
        config.embedding.cache_size = 0;
    }
    if let Command::Index {
        command: IndexCommand::Build { full: true, .. },
    } = &cli.command
    {
        config.embedding.adaptation.incremental_max_share = 0.0;
    }
    if matches!(cli.command, Command::Bench { .. }) {
        // One Lambda vCPU: one encoder session, one rayon thread.
        config.embedding.threads = 1;
    }
    config.embedding.apply_threads();

    let (templates, index_file) = (cli.templates.as_path(), cli.index.as_deref());
    match &cli.command {
        Command::Index { command } => match command {
            IndexCommand::Build { out, strict, .. } => {
                index::build(templates, &config, out, *strict)
            }
            IndexCommand::Inspect { file } => index::inspect(file),
            IndexCommand::Push {
                file,
                bucket,
                prefix,
            } => index::push(file, templates, bucket, prefix),
        },
        Command::Route { question, json } => {
            let router = open_router(templates, index_file, &config)?;
            route::run(router, config, question, *json)
        }
        Command::Eval {
            dataset,
            json,
            latency_samples,
            stages,
            no_session,
            no_assistant,
            judge_out,
            judge_every,
            report,
            turns_out,
            noise,
            noise_seed,
        } => {
            // --stages on an adapted catalog also scores the frozen base model.
            let mut base = config.clone();
            base.embedding.adaptation.mode = AdaptationMode::Base;
            let router = open_router(templates, index_file, &config)?;
            let frozen =
                if *stages && index_file.is_none() && router.index().manifest.encoder.is_some() {
                    Some(open_router(templates, None, &base)?)
                } else {
                    None
                };
            let options = eval::Options {
                json: *json,
                latency_samples: *latency_samples,
                stages: *stages,
                frozen,
                replay: match (*no_session, *no_assistant) {
                    (true, _) => Replay::NoSession,
                    (false, true) => Replay::Session,
                    (false, false) => Replay::SessionAndAssistant,
                },
                judge_out: judge_out.clone().map(|path| (path, *judge_every)),
                report: report.clone(),
                turns_out: turns_out.clone(),
                noise: noise.map(|kind| (kind.into(), *noise_seed)),
            };
            eval::run(&router, &config, dataset, &options)
        }
        Command::Bench {
            dataset,
            queries,
            synthetic,
            json,
        } => bench::run(
            templates,
            index_file,
            config,
            &bench::Options {
                dataset: dataset.clone(),
                queries: *queries,
                synthetic: synthetic.clone(),
                json: *json,
            },
        ),
        Command::EvalDocs {
            datasource,
            dataset,
            json,
            stages,
        } => eval_docs::run(
            templates,
            &config,
            &eval_docs::Options {
                datasource,
                dataset,
                json: *json,
                stages: *stages,
            },
        ),
        Command::Tune {
            feedback,
            table,
            dataset,
            out,
            min_per_datasource,
            wrong_answer_cost,
        } => {
            let router = open_router(templates, index_file, &config)?;
            let source = tune::Source::of(feedback, table);
            let options = tune::Options {
                source,
                dataset: dataset.clone(),
                out: out.clone(),
                costs: Costs {
                    wrong_answer: *wrong_answer_cost,
                    min_per_datasource: *min_per_datasource,
                    ..Costs::default()
                },
            };
            tune::run(&router, &config, &options)
        }
        Command::Suggest {
            feedback,
            table,
            dataset,
            folds,
            out,
            min_cluster,
            candidates,
            report,
        } => {
            let router = open_router(templates, index_file, &config)?;
            let source = tune::Source::of(feedback, table);
            let options = suggest::Options {
                source,
                dataset: dataset.clone(),
                out: out.clone(),
                candidates: candidates.clone(),
                report: report.clone(),
                folds: *folds as usize,
                settings: switchyard_eval::suggest::Settings {
                    min_cluster: *min_cluster,
                    ..Default::default()
                },
            };
            suggest::run(templates, &router, &config, &options)
        }
        Command::Stats => {
            let router = open_router(templates, index_file, &config)?;
            stats::run(&router, &config.sessions)
        }
        Command::Openapi => {
            print!("{}", switchyard_http::openapi::document_text());
            Ok(())
        }
        Command::Serve {
            host,
            port,
            traffic,
        } => {
            let router = open_router(templates, index_file, &config)?;
            let documents = open::open_documents(templates, index_file, &router, &config)?;
            let schema = open::open_schema(templates, index_file, &router, &config)?;
            let options = serve::Options {
                host: host.clone(),
                port: *port,
                traffic: traffic.clone(),
            };
            serve::run(config, router, templates, documents, schema, &options)
        }
    }
}
