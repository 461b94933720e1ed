//! `switchyard suggest`: read the decisions and feedback of real traffic and write a
//! reviewable patch of the catalog (new examples, negative examples, each line with its
//! evidence), with the groups of unanswered questions that may want a template of their
//! own. With `--dataset`, the patched catalog is re-indexed and evaluated first: a patch
//! that makes the data set worse is not written. Nothing changes live.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use switchyard_core::config::Config;
use switchyard_eval::report::{answers, Page, Snapshot};
use switchyard_eval::suggest::evidence::{gather, Traffic};
use switchyard_eval::suggest::patch::{edit, unified_diff, Edited};
use switchyard_eval::suggest::{suggest, Settings, Suggestions};
use switchyard_eval::{embed_queries, evaluate, load_dataset, EvalReport};
use switchyard_routing::router::Router;

use crate::eval::file_name;
use crate::open::open_router;
use crate::tune::{read_numbered, read_table, Source};

pub struct Options {
    pub source: Source,
    pub dataset: Option<PathBuf>,
    pub out: Option<PathBuf>,
    /// Write the new-template candidates, every question of each, as JSON here.
    pub candidates: Option<PathBuf>,
    /// With `dataset`: the patched catalog's eval beside the catalog's as an HTML page here.
    pub report: Option<PathBuf>,
    pub settings: Settings,
}

pub fn run(templates: &Path, router: &Router, config: &Config, options: &Options) -> Result<()> {
    let traffic: Vec<Traffic> = match &options.source {
        Source::File(path) => read_numbered(path)?
            .into_iter()
            .map(|(line, record)| Traffic {
                at: format!("{} line {line}", path.display()),
                record,
            })
            .collect(),
        Source::Table(table) => read_table(table, config.feedback.ttl_seconds)?
            .into_iter()
            .map(|record| Traffic {
                at: format!("table {table}: request {}", record.decision.request_id),
                record,
            })
            .collect(),
    };
    let evidence = gather(
        &traffic,
        &router.index().catalog,
        options.settings.reask_seconds,
    )?;
    let suggestions = suggest(router, evidence, &options.settings)?;
    let edits = edit(templates, &suggestions.examples, &suggestions.negatives)?;
    let mut header = summary(traffic.len(), &suggestions);
    if let Some(dataset) = &options.dataset {
        let with_answers = options.report.is_some();
        let (before, after) = verify(templates, router, config, &edits, dataset, with_answers)?;
        let line = figures(dataset, &before.report, &after.report);
        header.push(format!("# {line}"));
        if let Some(path) = &options.report {
            Page {
                title: format!("switchyard suggest: {}", file_name(dataset)),
                notes: header
                    .iter()
                    .map(|l| l.trim_start_matches("# ").to_owned())
                    .collect(),
                now: &after,
                before: Some(&before),
                conversation: None,
                multi: None,
            }
            .write(path)?;
            eprintln!("report written to {}", path.display());
        }
        let (before, after) = (&before.report, &after.report);
        if after.intent_accuracy < before.intent_accuracy || after.oos_recall < before.oos_recall {
            bail!(
                "the patch would make {} worse; not written ({line})",
                dataset.display()
            );
        }
    }
    if let Some(path) = &options.candidates {
        std::fs::write(path, serde_json::to_string_pretty(&suggestions.candidates)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut text: String = header.iter().map(|l| format!("{l}\n")).collect();
    text.push_str(&unified_diff(&edits, Path::new(".")));
    match &options.out {
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{text}"),
    }
    for line in &header {
        eprintln!("{line}");
    }
    Ok(())
}

/// The patch's opening comment lines (`git apply` reads past them): what it holds, and the
/// new-template candidates, which a person names and writes.
fn summary(records: usize, s: &Suggestions) -> Vec<String> {
    let mut lines = vec![
        format!(
            "# switchyard suggest: {records} records; {} new examples, {} negative examples; {} left out (duplicates, over the per-template cap, rephrasings of another meaning); {} without the question's text",
            s.examples.len(),
            s.negatives.len(),
            s.left_out,
            s.without_text
        ),
        format!("# {} new-template candidates (questions unanswered, asked to clarify or answered just above the threshold, nobody judged, grouped by meaning; where the nearest template is the one meant, it wants these as examples instead):", s.candidates.len()),
    ];
    for (n, candidate) in s.candidates.iter().enumerate() {
        let nearest: Vec<String> = candidate
            .nearest
            .iter()
            .map(|(t, score)| format!("{t} {score:.2}"))
            .collect();
        lines.push(format!(
            "#   {}. {} questions ({} unanswered), e.g. {:?}; nearest: {}",
            n + 1,
            candidate.size,
            candidate.unanswered,
            &candidate.questions[..candidate.questions.len().min(5)],
            nearest.join(", ")
        ));
    }
    lines
}

/// The data set's eval on the catalog as it is and as patched (a copy, re-indexed with
/// the same configuration); each question's answer too `with_answers` (for `--report`).
fn verify(
    templates: &Path,
    router: &Router,
    config: &Config,
    edits: &[Edited],
    dataset: &Path,
    with_answers: bool,
) -> Result<(Snapshot, Snapshot)> {
    let queries = load_dataset(dataset)?;
    let measure = |router: &Router| -> Result<Snapshot> {
        let embedded = embed_queries(router, &queries)?;
        Ok(Snapshot {
            report: evaluate(router, &queries, &embedded, 0)?,
            // Each question routed again, only for the page.
            answers: if with_answers {
                answers(router, &queries, &embedded.vectors)?
            } else {
                Vec::new()
            },
        })
    };
    let before = measure(router)?;
    let scratch = std::env::temp_dir().join(format!("switchyard-suggest-{}", std::process::id()));
    let name = templates
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_owned()))
        .unwrap_or_else(|| "catalog".into());
    let copy = scratch.join(name);
    copy_dir(templates, &copy)?;
    for edited in edits {
        let relative = edited.path.strip_prefix(templates).unwrap_or(&edited.path);
        std::fs::write(copy.join(relative), &edited.after)
            .with_context(|| format!("writing {}", copy.join(relative).display()))?;
    }
    let patched = open_router(&copy, None, config)?;
    let after = measure(&patched)?;
    std::fs::remove_dir_all(&scratch).ok();
    Ok((before, after))
}

fn figures(dataset: &Path, before: &EvalReport, after: &EvalReport) -> String {
    let pct = |x: f64| x * 100.0;
    format!(
        "{}: intent accuracy {:.2}% → {:.2}%, in-scope accuracy {:.2}% → {:.2}%, out-of-scope recall {:.2}% → {:.2}%",
        dataset.display(),
        pct(before.intent_accuracy),
        pct(after.intent_accuracy),
        pct(before.in_scope_accuracy),
        pct(after.in_scope_accuracy),
        pct(before.oos_recall),
        pct(after.oos_recall)
    )
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}
