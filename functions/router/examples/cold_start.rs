//! The router's cold start, measured the way Lambda pays it: a fresh process fetches the
//! index through its S3 pointer, verifies and deserialises it, and loads the model.
//!
//! ```sh
//! eval "$(./infra/scripts/aws-local.sh env)"          # moto_server on 127.0.0.1
//! export SWITCHYARD_INDEX_BUCKET=cold-start
//! cargo run --release -p switchyard-router --example cold_start -- publish templates/clinc150
//! cargo run --release -p switchyard-router --example cold_start -- publish templates/clinc150 10000
//! cargo run --release -p switchyard-router --example cold_start -- load
//! ```
//!
//! `publish` builds the catalog's index (or, with a count, a synthetic catalog of that many
//! templates jittered from it, as the benchmarks use) and pushes it; `load` is the cold
//! start, printed as JSON with the process's peak resident memory.

use std::path::Path;
use std::time::Instant;

use switchyard_aws::index::IndexPublishing;
use switchyard_catalog::template::Catalog;
use switchyard_core::config::Config;
use switchyard_embed::MiniLmEmbedder;
use switchyard_index::index::Index;
use switchyard_index::synthetic::synthetic_index;
use switchyard_router::{cold_start, Clients, Settings};
use switchyard_s3::S3IndexStore;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let process_start = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sdk = switchyard_s3::sdk_config().await;
    let clients = Clients {
        s3: switchyard_s3::s3_client(&sdk),
        dynamodb: aws_sdk_dynamodb::Client::new(&sdk),
        lambda: aws_sdk_lambda::Client::new(&sdk),
    };
    let bucket = std::env::var("SWITCHYARD_INDEX_BUCKET")?;
    match args.first().map(String::as_str) {
        Some("publish") => {
            let templates = args.get(1).ok_or("publish needs a catalog folder")?;
            let config = Config::default().router();
            let embedder = MiniLmEmbedder::from_config(&config.embedding)?;
            let catalog = Catalog::load(Path::new(templates))?;
            let mut index = Index::build(catalog, &embedder, &config, &|_, _| {})?;
            if let Some(count) = args.get(2) {
                index = synthetic_index(&index, count.parse()?, 10, 4, &config, 42);
            }
            let bytes = index.to_bytes()?;
            let _ = clients.s3.create_bucket().bucket(&bucket).send().await;
            let pointer = S3IndexStore::new(clients.s3, &bucket, "indexes")
                .push(&bytes)
                .await?;
            println!("{}", serde_json::to_string(&pointer)?);
        }
        Some("load") => {
            let settings = Settings::from_env(|name| std::env::var(name).ok())?;
            let config = Config::from_env(None)?;
            let (api, report) = cold_start(&settings, config, clients, |_| None).await?;
            let ready_ms = process_start.elapsed().as_secs_f64() * 1000.0;
            println!(
                "{}",
                serde_json::json!({
                    "templates": api.router().index().catalog.template_count(),
                    "cold_start": report,
                    "process_start_to_ready_ms": ready_ms,
                    "peak_rss_mb": peak_rss_mb(),
                })
            );
        }
        _ => return Err("usage: cold_start publish <catalog> [templates] | load".into()),
    }
    Ok(())
}

/// VmHWM from /proc/self/status (Linux), in MiB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
