//! What the rules cannot split, a chat model may (`orchestration.chat_decomposer`, off by
//! default). Its sub-questions are routed and kept only when they pass the rules' checks:
//! each routes with confidence, none is far less sure than the whole, neighbours differ.

use super::decompose::{valid_split, SpanRouting};
use super::SubQuestion;
use crate::config::OrchestrationConfig;
use crate::error::Result;
use switchyard_catalog::auth::Access;
use switchyard_catalog::BoxFuture;
use switchyard_routing::router::{Router, Routing, MAX_QUERY_CHARS};

pub trait QuestionSplitter: Send + Sync {
    /// Names the splitter in reports and errors (`chat:gpt-4o-mini`).
    fn id(&self) -> &str;

    /// The separate requests `question` makes, each a self-contained question, in order.
    fn split<'a>(
        &'a self,
        question: &'a str,
    ) -> BoxFuture<'a, switchyard_contract::error::Result<Vec<String>>>;
}

/// Route `texts` (one embedding batch) and keep them as sub-questions when they split
/// `whole` validly; `None` when they do not (one part, too many, or a check failed).
pub fn validated_parts(
    router: &Router,
    whole: &Routing,
    texts: &[String],
    access: &Access,
    config: &OrchestrationConfig,
) -> Result<Option<Vec<SubQuestion>>> {
    let texts: Vec<&str> = texts
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect();
    // Each part must be about the question: it shares a word of 3 letters or more with it
    // (a model may rewrite "their" as "Engineering's", not invent a request).
    let asked = content_words(&whole.query);
    let sane = texts
        .iter()
        .all(|t| t.chars().count() <= MAX_QUERY_CHARS && !content_words(t).is_disjoint(&asked));
    if texts.len() < 2 || texts.len() > config.max_parts || !sane {
        return Ok(None);
    }
    let routings: Vec<Routing> = router.route_batch(&texts, access)?;
    let spans: Vec<SpanRouting> = routings.iter().map(SpanRouting::of).collect();
    let refs: Vec<&SpanRouting> = spans.iter().collect();
    if !valid_split(&SpanRouting::of(whole), &refs, config) {
        return Ok(None);
    }
    Ok(Some(
        texts
            .into_iter()
            .zip(routings)
            .map(|(text, routing)| SubQuestion {
                text: text.to_owned(),
                link: None,
                cut: None,
                routing,
            })
            .collect(),
    ))
}

fn content_words(text: &str) -> std::collections::HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}
