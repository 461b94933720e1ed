//! `switchyard tune`: fit the confidence threshold and clarify margin to outcome feedback
//! and write a configuration patch; refused when a labelled data set says it is worse.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use switchyard_core::config::Config;
use switchyard_core::feedback::{FeedbackRecord, FeedbackStore};
use switchyard_eval::tune::{apply, fit, patch, resolved_share, Costs};
use switchyard_eval::{embed_queries, load_dataset};
use switchyard_routing::router::Router;

/// Where the feedback comes from.
pub enum Source {
    /// JSON lines, one record (`{"decision": ..., "feedback": ..., "reward": ...}`) each.
    File(PathBuf),
    /// A DynamoDB feedback table (the stack's `FeedbackTableName`).
    Table(String),
}

impl Source {
    /// The `--feedback FILE` or `--table NAME` given (clap requires one).
    pub fn of(feedback: &Option<PathBuf>, table: &Option<String>) -> Source {
        match (feedback, table) {
            (Some(file), _) => Source::File(file.clone()),
            (None, Some(table)) => Source::Table(table.clone()),
            (None, None) => unreachable!("clap requires one"),
        }
    }
}

pub struct Options {
    pub source: Source,
    pub dataset: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub costs: Costs,
}

/// `router` is built with `config`'s sections.
pub fn run(router: &Router, config: &Config, options: &Options) -> Result<()> {
    let records = match &options.source {
        Source::File(path) => read_records(path)?,
        Source::Table(table) => read_table(table, config.feedback.ttl_seconds)?,
    };
    let (threshold, _) = router.threshold();
    let tuned = fit(
        &records,
        threshold,
        config.composite_retrieval.clarify.margin,
        &options.costs,
    )
    .with_context(|| format!("none of the {} records carries feedback", records.len()))?;
    if let Some(dataset) = &options.dataset {
        let queries = load_dataset(dataset)?;
        let embedded = embed_queries(router, &queries)?;
        let before = resolved_share(router, &queries, &embedded.vectors)?;
        let patched = router.reconfigured(apply(router.config(), &tuned));
        let after = resolved_share(&patched, &queries, &embedded.vectors)?;
        eprintln!(
            "{}: answered right {:.2}% now, {:.2}% with the patch",
            dataset.display(),
            before * 100.0,
            after * 100.0
        );
        if after < before {
            bail!(
                "the patch would make {} worse ({:.2}% → {:.2}% answered right); not written",
                dataset.display(),
                before * 100.0,
                after * 100.0
            );
        }
    }
    let text = patch(&tuned);
    match &options.out {
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{text}"),
    }
    Ok(())
}

fn read_records(path: &Path) -> Result<Vec<FeedbackRecord>> {
    Ok(read_numbered(path)?.into_iter().map(|(_, r)| r).collect())
}

/// The records of a JSON-lines file with their line numbers; a line that is not a record
/// is an error naming it.
pub fn read_numbered(path: &Path) -> Result<Vec<(usize, FeedbackRecord)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut records: Vec<(usize, FeedbackRecord)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: FeedbackRecord = serde_json::from_str(line).with_context(|| {
            format!(
                "{} line {}: expected a feedback record {{\"decision\", \"feedback\", \"reward\"}}",
                path.display(),
                n + 1
            )
        })?;
        // `serve --traffic` appends a decision, then the same request judged: the later
        // line replaces the earlier, in the earlier's place.
        match at.get(&record.decision.request_id) {
            Some(&i) => records[i] = (n + 1, record),
            None => {
                at.insert(record.decision.request_id.clone(), records.len());
                records.push((n + 1, record));
            }
        }
    }
    Ok(records)
}

pub fn read_table(table: &str, ttl_seconds: u64) -> Result<Vec<FeedbackRecord>> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    Ok(runtime.block_on(async {
        let sdk = switchyard_s3::sdk_config().await;
        let client = aws_sdk_dynamodb::Client::new(&sdk);
        switchyard_aws::DynamoFeedbackStore::new(client, table, ttl_seconds)
            .all()
            .await
    })?)
}
