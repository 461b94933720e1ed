//! `switchyard route`: route one question and show every candidate with its stage scores.

use anyhow::Result;
use switchyard_core::router::{Access, Outcome, Router, Routing};

/// Route `question` over every datasource; print the table, or the route report as JSON.
pub fn run(router: &Router, question: &str, json: bool) -> Result<()> {
    let routing = router.route(question, &Access::All)?;
    if json {
        let report = switchyard_http::render::Render(router).route_report(&routing);
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_routing(&routing);
    }
    Ok(())
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
