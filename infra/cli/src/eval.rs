//! `switchyard eval`: routing quality and latency on a labelled JSON-lines data set.

use std::path::Path;

use anyhow::Result;
use switchyard_core::eval::{evaluate, load_dataset, stage_table, EvalReport, StageRow};
use switchyard_core::router::Router;

/// Evaluate `router` on `dataset` (and each stage on and off with `stages`); print the
/// report as text or JSON.
pub fn run(
    router: &Router,
    dataset: &Path,
    json: bool,
    latency_samples: usize,
    stages: bool,
) -> Result<()> {
    let queries = load_dataset(dataset)?;
    let report = evaluate(router, &queries, latency_samples)?;
    let table = if stages {
        Some(stage_table(router, &queries)?)
    } else {
        None
    };
    if json {
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
