//! `switchyard route`: route one question and show every candidate with its stage scores.

use std::sync::Arc;

use anyhow::Result;
use switchyard_adapters::respond::IntentInvoker;
use switchyard_catalog::auth::Access;
use switchyard_core::config::Config;
use switchyard_core::service::{Question, Routed, Service};
use switchyard_routing::router::{Outcome, Router};
use switchyard_routing::session::MemorySessionStore;

/// Route `question` over every datasource with the service that `serve` and the router
/// Lambda run (splitting it when it asks for several things); print the table, or the
/// route report as JSON. Nothing is executed, so the service gets no adapters. `router`
/// is built with `config`'s sections.
pub fn run(router: Router, config: Config, question: &str, json: bool) -> Result<()> {
    let catalog = router.index().catalog.clone();
    let sessions = MemorySessionStore::new(config.sessions.clone());
    let service = Service::new(
        config,
        router,
        Arc::new(IntentInvoker::new(catalog)),
        Arc::new(sessions),
    );
    let question = Question {
        query: question.to_owned(),
        owner: "cli".into(),
        ..Question::default()
    };
    let routed = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(service.route(&question, &Access::All))?;
    if json {
        let render = switchyard_http::render::Render(service.router());
        let mut report = render.route_report(&routed);
        report.orchestration = render.plan_report(&routed);
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_routing(&routed);
        print_plan(&routed);
    }
    Ok(())
}

fn print_plan(routed: &Routed) {
    let Some(decomposition) = &routed.decomposition else {
        return;
    };
    let signals = &decomposition.signals;
    println!(
        "\nmulti-part signals: {} of 7 fired ({})",
        signals.fired,
        if signals.considered {
            "decomposition considered"
        } else {
            "not considered"
        }
    );
    let Some(plan) = &routed.plan else {
        println!("→ one question (no split explains it better)");
        return;
    };
    println!("→ split into {} sub-questions:", plan.tasks.len());
    for task in &plan.tasks {
        let after = if task.depends_on.is_empty() {
            String::new()
        } else {
            format!(" (after {})", task.depends_on.join(", "))
        };
        println!(
            "  {} {:<48} {} / {} ({:.3}){after}",
            task.id, task.question, task.datasource, task.template_id, task.confidence
        );
    }
    let phases: Vec<String> = plan
        .phases
        .iter()
        .map(|p| {
            p.iter()
                .map(|&i| plan.tasks[i].id.as_str())
                .collect::<Vec<_>>()
                .join(" + ")
        })
        .collect();
    println!("  phases: {}", phases.join(" → "));
}

fn print_routing(routed: &Routed) {
    let routing = &routed.routing;
    println!("query: {}", routing.query);
    println!(
        "{:>3}  {:<14} {:<34} {:>6} {:>6} {:>6} {:>7} {:>10} {:>9} {:>6} {:>6}",
        "#",
        "datasource",
        "template",
        "rank",
        "prob",
        "words",
        "opening",
        "confidence",
        "embedding",
        "string",
        "rerank"
    );
    let score = |s: Option<f32>| s.map_or_else(|| "-".to_owned(), |s| format!("{s:.3}"));
    for (rank, m) in routing.matches.iter().enumerate() {
        println!(
            "{:>3}  {:<14} {:<34} {:>6.3} {:>6} {:>6} {:>7} {:>10.3} {:>9.3} {:>6} {:>6}{}",
            rank + 1,
            m.datasource,
            m.template_id,
            m.scores.rank_score,
            score(m.scores.probability),
            score(m.scores.keyword_score),
            score(m.scores.opening_score),
            m.scores.combined_score,
            m.scores.embedding_score,
            score(m.scores.string_similarity_score),
            score(m.scores.rerank_score),
            match &m.declined_by {
                Some(d) => format!(
                    "  (declined: nearer the negative example \"{}\", {:.3} vs {:.3})",
                    d.negative_example, d.similarity, d.template_similarity
                ),
                None if m.scores.combined_score < routing.threshold =>
                    "  (below threshold)".to_owned(),
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
            routed.reason()
        ),
        (_, Some(m)) => println!(
            "→ {} / {} (confidence {:.3} ≥ threshold {threshold:.3}; {}; {source} ranking)",
            m.datasource,
            m.template_id,
            m.scores.combined_score,
            routed.reason()
        ),
        (_, None) => println!("→ no_match ({}; threshold {threshold:.3})", routed.reason()),
    }
    println!(
        "timings: embedding {:.2} ms, search {:.3} ms, string {:.3} ms, total {:.2} ms",
        routing.timings.embedding_ms,
        routing.timings.search_ms,
        routing.timings.string_similarity_ms,
        routing.timings.total_ms
    );
}
