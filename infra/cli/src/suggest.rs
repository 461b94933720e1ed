//! `switchyard suggest`: read the decisions and feedback of real traffic and write a
//! reviewable patch of the catalog (new examples, negative examples, each line with its
//! evidence), with the groups of unanswered questions that may want a template of their
//! own. With `--dataset`, the patched catalog is re-indexed and evaluated first: a patch
//! that makes the data set worse is not written. When the data set's questions are in the
//! traffic, a patch measured on them would be graded on its own lines: it is measured by
//! folds instead (each fold's questions against a patch made without them). Nothing
//! changes live.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{bail, Context, Result};
use switchyard_core::config::Config;
use switchyard_eval::report::{answers, Page, Snapshot};
use switchyard_eval::suggest::evidence::{gather, Traffic};
use switchyard_eval::suggest::patch::{edit, unified_diff, Edited};
use switchyard_eval::suggest::{suggest, Settings, Suggestions};
use switchyard_eval::{embed_queries, evaluate, load_dataset, EvalReport, LabeledQuery};
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
    /// Folds the data set is cut into when its questions are in the traffic (1: none).
    pub folds: usize,
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
        let queries = load_dataset(dataset)?;
        let before = measure(router, &queries, options.report.is_some())?;
        // The whole patch's eval: the gate's figures when the data set is not the traffic,
        // the page's always.
        let whole = match (options.report.is_some(), seen_in(&suggestions, &queries)) {
            (true, _) | (_, 0) => Some(measure_patched(templates, config, &edits, &queries, true)?),
            _ => None,
        };
        let seen = seen_in(&suggestions, &queries);
        let (gate, line) = if seen > 0 && options.folds > 1 {
            let held_out = by_folds(templates, config, &suggestions, &queries, options.folds)?;
            let line = format!(
                "{} of the data set's questions are in the traffic: measured by {} folds, each fold's questions against the patch made without them; {}",
                seen,
                options.folds,
                figures(dataset, &Figures::of(&before.report), &held_out)
            );
            (held_out, line)
        } else {
            let after = Figures::of(&whole.as_ref().expect("measured above").report);
            let line = figures(dataset, &Figures::of(&before.report), &after);
            (after, line)
        };
        header.push(format!("# {line}"));
        if let (Some(path), Some(after)) = (&options.report, &whole) {
            Page {
                title: format!("switchyard suggest: {}", file_name(dataset)),
                notes: header
                    .iter()
                    .map(|l| l.trim_start_matches("# ").to_owned())
                    .collect(),
                now: after,
                before: Some(&before),
                conversation: None,
                multi: None,
            }
            .write(path)?;
            eprintln!("report written to {}", path.display());
        }
        let before = Figures::of(&before.report);
        if gate.intent < before.intent || gate.oos_recall < before.oos_recall {
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

/// The data set's eval on `router`; each question's answer too `with_answers` (for
/// `--report`).
fn measure(router: &Router, queries: &[LabeledQuery], with_answers: bool) -> Result<Snapshot> {
    let embedded = embed_queries(router, queries)?;
    Ok(Snapshot {
        report: evaluate(router, queries, &embedded, 0)?,
        // Each question routed again, only for the page.
        answers: if with_answers {
            answers(router, queries, &embedded.vectors)?
        } else {
            Vec::new()
        },
    })
}

/// The data set's eval on the catalog with `edits` applied: a scratch copy, re-indexed
/// with the same configuration.
fn measure_patched(
    templates: &Path,
    config: &Config,
    edits: &[Edited],
    queries: &[LabeledQuery],
    with_answers: bool,
) -> Result<Snapshot> {
    static COPIES: AtomicUsize = AtomicUsize::new(0);
    let scratch = std::env::temp_dir().join(format!(
        "switchyard-suggest-{}-{}",
        std::process::id(),
        COPIES.fetch_add(1, Ordering::Relaxed)
    ));
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
    let measured =
        open_router(&copy, None, config).and_then(|router| measure(&router, queries, with_answers));
    std::fs::remove_dir_all(&scratch).ok();
    measured
}

/// The data set's questions the suggestions were made from (their text is a suggested line).
fn seen_in(suggestions: &Suggestions, queries: &[LabeledQuery]) -> usize {
    let lines = suggested_texts(suggestions);
    queries
        .iter()
        .filter(|q| lines.contains(&q.text.to_lowercase()))
        .count()
}

fn suggested_texts(suggestions: &Suggestions) -> HashSet<String> {
    let examples = suggestions.examples.iter().map(|e| &e.text);
    let negatives = suggestions.negatives.iter().map(|n| &n.text);
    examples
        .chain(negatives)
        .map(|t| t.to_lowercase())
        .collect()
}

/// Held-out figures: the data set cut into `folds` by position; each fold's questions
/// routed by the catalog patched with every suggestion but those made from them.
fn by_folds(
    templates: &Path,
    config: &Config,
    suggestions: &Suggestions,
    queries: &[LabeledQuery],
    folds: usize,
) -> Result<Figures> {
    let mut total = Figures::default();
    for fold in 0..folds {
        let held: Vec<LabeledQuery> = (fold..queries.len())
            .step_by(folds)
            .map(|i| queries[i].clone())
            .collect();
        let texts: HashSet<String> = held.iter().map(|q| q.text.to_lowercase()).collect();
        let unseen = |text: &String| !texts.contains(&text.to_lowercase());
        let examples: Vec<_> = suggestions
            .examples
            .iter()
            .filter(|e| unseen(&e.text))
            .cloned()
            .collect();
        let negatives: Vec<_> = suggestions
            .negatives
            .iter()
            .filter(|n| unseen(&n.text))
            .cloned()
            .collect();
        let edits = edit(templates, &examples, &negatives)?;
        let report = measure_patched(templates, config, &edits, &held, false)?.report;
        total.add(&report);
    }
    Ok(total.finish())
}

/// The three figures a patch is judged on, summed over folds by their questions.
#[derive(Debug, Default)]
struct Figures {
    intent: f64,
    in_scope: f64,
    oos_recall: f64,
    in_scope_queries: usize,
    oos_queries: usize,
}

impl Figures {
    fn of(report: &EvalReport) -> Figures {
        Figures {
            intent: report.intent_accuracy,
            in_scope: report.in_scope_accuracy,
            oos_recall: report.oos_recall,
            in_scope_queries: report.in_scope_queries,
            oos_queries: report.oos_queries,
        }
    }

    /// Add a fold's figures, weighted by its questions (`finish` divides).
    fn add(&mut self, report: &EvalReport) {
        let (n, oos) = (report.in_scope_queries as f64, report.oos_queries as f64);
        self.intent += report.intent_accuracy * n;
        self.in_scope += report.in_scope_accuracy * n;
        self.oos_recall += report.oos_recall * oos;
        self.in_scope_queries += report.in_scope_queries;
        self.oos_queries += report.oos_queries;
    }

    fn finish(self) -> Figures {
        let (n, oos) = (
            self.in_scope_queries.max(1) as f64,
            self.oos_queries.max(1) as f64,
        );
        Figures {
            intent: self.intent / n,
            in_scope: self.in_scope / n,
            oos_recall: self.oos_recall / oos,
            ..self
        }
    }
}

fn figures(dataset: &Path, before: &Figures, after: &Figures) -> String {
    let pct = |x: f64| x * 100.0;
    format!(
        "{}: intent accuracy {:.2}% → {:.2}%, in-scope accuracy {:.2}% → {:.2}%, out-of-scope recall {:.2}% → {:.2}%",
        dataset.display(),
        pct(before.intent),
        pct(after.intent),
        pct(before.in_scope),
        pct(after.in_scope),
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
