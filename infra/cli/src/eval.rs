//! `switchyard eval`: routing quality and latency on a labelled JSON-lines data set.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use switchyard_core::config::Config;
use switchyard_eval::conversation::{replay, ConversationReport, Replay, TurnAccuracy};
use switchyard_eval::multi::{multi_intent, MultiIntentReport};
use switchyard_eval::noise::{add_noise, Noise, NoiseStats};
use switchyard_eval::report::{answers, Page, Snapshot};
use switchyard_eval::suggest::judged_traffic;
use switchyard_eval::{
    embed_queries, evaluate, load_dataset, stage_table, EvalReport, LabeledQuery, StageRow,
};
use switchyard_routing::router::Router;

pub struct Options {
    pub json: bool,
    pub latency_samples: usize,
    /// Score each stage on and off.
    pub stages: bool,
    /// What conversations are replayed with besides each turn alone.
    pub replay: Replay,
    /// With `stages`, the same catalog's router on the frozen base model, when the
    /// evaluated one runs an adapted encoder: its rows are added to the table.
    pub frozen: Option<Router>,
    /// Write the data set as judged traffic to this file (one question in `.1` judged).
    pub judge_out: Option<(PathBuf, usize)>,
    /// Write the results as an HTML page here.
    pub report: Option<PathBuf>,
    /// Write each replayed turn's routings and decision here (JSON lines).
    pub turns_out: Option<PathBuf>,
    /// Also measure a noisy copy of the questions (the noise and its seed).
    pub noise: Option<(Noise, u64)>,
}

/// `--noise`'s values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum NoiseKind {
    Typos,
    Spaces,
}

impl From<NoiseKind> for Noise {
    fn from(kind: NoiseKind) -> Noise {
        match kind {
            NoiseKind::Typos => Noise::Typos,
            NoiseKind::Spaces => Noise::Spaces,
        }
    }
}

/// The figures of a noisy copy beside the clean ones.
#[derive(Debug, Clone, serde::Serialize)]
struct NoisyFigures {
    noise: Noise,
    seed: u64,
    changes: NoiseStats,
    intent_accuracy: f64,
    datasource_accuracy: f64,
    in_scope_accuracy: f64,
    oos_recall: f64,
}

/// Route the noisy copy of `queries` and keep its headline figures.
fn noisy_figures(
    router: &Router,
    queries: &[LabeledQuery],
    (noise, seed): (Noise, u64),
) -> Result<NoisyFigures> {
    let (noisy, changes) = add_noise(queries, noise, seed);
    let embedded = embed_queries(router, &noisy)?;
    let report = evaluate(router, &noisy, &embedded, 0)?;
    Ok(NoisyFigures {
        noise,
        seed,
        changes,
        intent_accuracy: report.intent_accuracy,
        datasource_accuracy: report.datasource_accuracy,
        in_scope_accuracy: report.in_scope_accuracy,
        oos_recall: report.oos_recall,
    })
}

fn print_noisy(clean: &EvalReport, noisy: &NoisyFigures) {
    let c = &noisy.changes;
    println!(
        "
with noise ({:?}, seed {}: {} of {} questions changed, {} edits):",
        noisy.noise, noisy.seed, c.changed, c.questions, c.edits
    );
    println!(
        "{:<8} {:>7} {:>7} {:>9} {:>7}",
        "", "intent", "source", "in-scope", "oos"
    );
    let row = |name: &str, intent: f64, source: f64, in_scope: f64, oos: f64| {
        println!(
            "{:<8} {:>6.2}% {:>6.2}% {:>8.2}% {:>6.1}%",
            name,
            intent * 100.0,
            source * 100.0,
            in_scope * 100.0,
            oos * 100.0
        );
    };
    row(
        "clean",
        clean.intent_accuracy,
        clean.datasource_accuracy,
        clean.in_scope_accuracy,
        clean.oos_recall,
    );
    row(
        "noisy",
        noisy.intent_accuracy,
        noisy.datasource_accuracy,
        noisy.in_scope_accuracy,
        noisy.oos_recall,
    );
}

/// Evaluate `router` on `dataset` (each stage on and off with `stages`; conversations
/// replayed when its lines carry `session_id`); print the report as text or JSON.
/// `config` is the router's, whose `sessions` and `orchestration` the replays read.
pub fn run(router: &Router, config: &Config, dataset: &Path, options: &Options) -> Result<()> {
    let queries = load_dataset(dataset)?;
    let embedded = embed_queries(router, &queries)?;
    if let Some((path, every)) = &options.judge_out {
        let records = judged_traffic(router, &queries, &embedded.vectors, *every)?;
        write_lines(path, &records)?;
    }
    let report = evaluate(router, &queries, &embedded, options.latency_samples)?;
    let noisy = match options.noise {
        Some(noise) => Some(noisy_figures(router, &queries, noise)?),
        None => None,
    };
    let table = if options.stages {
        let mut rows = stage_table(router, &queries, &embedded)?;
        if let Some(frozen) = &options.frozen {
            let embedded = embed_queries(frozen, &queries)?;
            for mut row in stage_table(frozen, &queries, &embedded)? {
                row.stages = format!("base encoder: {}", row.stages);
                rows.push(row);
            }
        }
        Some(rows)
    } else {
        None
    };
    let conversation = replay(
        router,
        &config.sessions,
        &queries,
        &embedded,
        options.replay,
    )?;
    if let (Some(path), Some(conversation)) = (&options.turns_out, &conversation) {
        write_lines(path, &conversation.records)?;
        eprintln!(
            "{} turns written to {}",
            conversation.records.len(),
            path.display()
        );
    }
    // Conversations are scored turn by turn above; everything else also as intent sets.
    let multi = if conversation.is_none() {
        Some(multi_intent(
            router,
            &config.orchestration,
            &queries,
            &embedded,
        )?)
    } else {
        None
    };
    if let Some(path) = &options.report {
        let now = Snapshot {
            answers: answers(router, &queries, &embedded.vectors)?,
            report: report.clone(),
        };
        Page {
            title: format!("switchyard eval: {}", file_name(dataset)),
            notes: vec![format!(
                "Data set {}; catalog of {} templates.",
                dataset.display(),
                router.index().catalog.template_count()
            )],
            now: &now,
            before: None,
            conversation: conversation.as_ref(),
            multi: multi.as_ref(),
        }
        .write(path)?;
        eprintln!("report written to {}", path.display());
    }
    if options.json {
        let mut value = serde_json::to_value(&report)?;
        if let Some(table) = &table {
            value["stages"] = serde_json::to_value(table)?;
        }
        if let Some(noisy) = &noisy {
            value["noisy"] = serde_json::to_value(noisy)?;
        }
        if let Some(conversation) = &conversation {
            value["conversation"] = serde_json::to_value(conversation)?;
        }
        if let Some(multi) = &multi {
            value["intent_set_accuracy"] = serde_json::to_value(multi.intent_set_accuracy)?;
            value["intent_set_by_count"] = serde_json::to_value(&multi.intent_set_by_count)?;
            value["false_split_rate"] = serde_json::to_value(multi.false_split_rate)?;
            value["multi_intent"] = serde_json::to_value(multi)?;
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_report(&report);
        if let Some(noisy) = &noisy {
            print_noisy(&report, noisy);
        }
        if let Some(table) = &table {
            print_stages(table);
        }
        if let Some(conversation) = &conversation {
            print_conversation(conversation);
        }
        if let Some(multi) = &multi {
            print_multi(multi);
        }
    }
    Ok(())
}

fn print_multi(report: &MultiIntentReport) {
    println!(
        "\nintent sets ({} in-scope questions; decomposition considered on {:.1}%):",
        report.questions,
        report.considered_rate * 100.0
    );
    println!(
        "  exact match {:.2}%, false splits (single-intent questions split) {:.2}%",
        report.intent_set_accuracy * 100.0,
        report.false_split_rate * 100.0
    );
    println!(
        "  {:>7} {:>9} {:>9} {:>7}",
        "intents", "questions", "accuracy", "split"
    );
    for (count, row) in &report.intent_set_by_count {
        println!(
            "  {:>7} {:>9} {:>8.2}% {:>6.1}%",
            count,
            row.questions,
            row.accuracy * 100.0,
            row.split_rate * 100.0
        );
    }
    let (d, r) = (&report.decompose_ms, &report.sub_question_routing_ms);
    println!(
        "  detection + decomposition: p50 {:.3} ms, p95 {:.3} ms; sub-question routing (when considered): p50 {:.2} ms, p95 {:.2} ms",
        d.p50, d.p95, r.p50, r.p95
    );
}

fn print_conversation(report: &ConversationReport) {
    let t = &report.turns;
    println!(
        "\nconversations: {} sessions, {} turns ({} first, {} continuing, {} switching, {} of at most 6 words)",
        report.sessions, t.all, t.first, t.continuing, t.switching, t.short
    );
    println!(
        "turn accuracy (datasource and template right):\n{:<26} {:>7} {:>7} {:>10} {:>9} {:>7}",
        "", "all", "first", "continuing", "switching", "short"
    );
    let row = |name: &str, a: &TurnAccuracy| {
        println!(
            "{:<26} {:>6.2}% {:>6.2}% {:>9.2}% {:>8.2}% {:>6.2}%",
            name,
            a.all * 100.0,
            a.first * 100.0,
            a.continuing * 100.0,
            a.switching * 100.0,
            a.short * 100.0
        );
    };
    if let Some(with) = &report.with_session {
        let name = if report.without_assistant.is_some() {
            "with session + assistant"
        } else {
            "with session"
        };
        row(name, with);
    }
    if let Some(without) = &report.without_assistant {
        row("with session only", without);
    }
    row("without session", &report.without_session);
    if let Some(oracle) = &report.oracle {
        row("oracle stay/switch", oracle);
    }
    if let Some(e) = &report.errors {
        println!(
            "wrong turns with session, share of all turns: first turn {:.2}%, carried from a wrong first turn {:.2}%, carried from a later one {:.2}%, wrong stay {:.2}%, wrong switch {:.2}%, wrong switch target {:.2}%",
            e.first_turn * 100.0,
            e.carried_from_first * 100.0,
            e.carried_later * 100.0,
            e.wrong_stay * 100.0,
            e.wrong_switch * 100.0,
            e.wrong_target * 100.0
        );
    }
}

fn print_stages(rows: &[StageRow]) {
    println!("\neach stage on and off (same query vectors; threshold automatic for each):");
    println!(
        "{:<58} {:>7} {:>7} {:>9} {:>9} {:>7} {:>8}",
        "stages", "intent", "source", "threshold", "in-scope", "oos", "clarify"
    );
    for row in rows {
        println!(
            "{:<58} {:>6.2}% {:>6.2}% {:>9.3} {:>8.2}% {:>6.1}% {:>7.2}%",
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

/// A path's last part, for a title.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Write `items` to `path` as JSON lines.
fn write_lines<T: serde::Serialize>(path: &Path, items: &[T]) -> Result<()> {
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    for item in items {
        writeln!(file, "{}", serde_json::to_string(item)?)?;
    }
    file.flush()
        .with_context(|| format!("writing {}", path.display()))
}
