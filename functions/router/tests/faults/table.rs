//! The table of the run, printed (`--nocapture`): per fault, the requests (during it), the
//! answers by kind, the degraded ones, latency, panics and turns lost; then the notes.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::load::{rerank_of, saved, session_status, Phase, Reply, CLIENTS, TAIL};

pub fn print_table(
    phases: &[Phase],
    replies: &[Reply],
    lost: &BTreeMap<usize, usize>,
    requests: usize,
) {
    println!(
        "\nFaults during load: {CLIENTS} clients x {requests} requests (+{TAIL} after each fault) per phase\n"
    );
    println!("| fault | requests (during it) | ok (200) | errors by kind | degraded answers | latency p50 / max | panics | turns lost |");
    println!("|---|---|---|---|---|---|---|---|");
    for (index, phase) in phases.iter().enumerate() {
        let mine: Vec<&Reply> = replies.iter().filter(|r| r.phase == index).collect();
        let during = mine
            .iter()
            .filter(|r| phase.windows.iter().any(|w| r.overlaps(*w)))
            .count();
        let ok = mine.iter().filter(|r| r.status == 200).count();
        let mut errors = BTreeMap::<String, usize>::new();
        for reply in &mine {
            match &reply.kind {
                Ok(kind) if reply.status != 200 => *errors.entry(kind.clone()).or_default() += 1,
                Ok(_) => {}
                Err(_) => *errors.entry("malformed".into()).or_default() += 1,
            }
        }
        let errors = if errors.is_empty() {
            "none".to_owned()
        } else {
            errors
                .iter()
                .map(|(kind, n)| format!("{kind}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let unavailable = mine
            .iter()
            .filter(|r| session_status(&r.body) == "unavailable")
            .count();
        let unsaved = mine
            .iter()
            .filter(|r| saved(&r.body) == Some(false))
            .count();
        let rerank_failed = mine
            .iter()
            .filter(|r| rerank_of(&r.body).is_some_and(|x| x["status"] == "failed"))
            .count();
        let mut degraded = Vec::new();
        if unavailable > 0 {
            degraded.push(format!("session unavailable: {unavailable}"));
        }
        if unsaved > 0 {
            degraded.push(format!("turn not saved: {unsaved}"));
        }
        if rerank_failed > 0 {
            degraded.push(format!("rerank failed: {rerank_failed}"));
        }
        let degraded = if degraded.is_empty() {
            "none".into()
        } else {
            degraded.join(", ")
        };
        let mut latencies: Vec<Duration> = mine.iter().map(|r| r.answered - r.sent).collect();
        latencies.sort();
        let latency = format!(
            "{} / {} ms",
            latencies[latencies.len() / 2].as_millis(),
            latencies[latencies.len() - 1].as_millis()
        );
        println!(
            "| {} | {} ({during}) | {ok} | {errors} | {degraded} | {latency} | {} | {} |",
            phase.name,
            mine.len(),
            phase.panics,
            lost.get(&index).copied().unwrap_or(0)
        );
    }
    for phase in phases {
        for note in &phase.notes {
            println!("- {}: {note}", phase.name);
        }
    }
}
