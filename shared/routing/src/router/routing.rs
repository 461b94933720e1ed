//! What routing produces: the candidates with their stage scores, and the decision.

use std::fmt;

use serde::Serialize;

use crate::session::TemplateRef;
use switchyard_index::scoring::Weights;

#[derive(Debug, Clone, Serialize)]
pub struct Match {
    pub datasource: String,
    pub template_id: String,
    #[serde(skip)]
    pub datasource_position: usize,
    #[serde(skip)]
    pub template_position: usize,
    #[serde(flatten)]
    pub scores: StageScores,
    /// Set when the query is nearer one of the datasource's negative examples than to any
    /// of this template's texts: the template is then never selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declined_by: Option<Declined>,
    /// The conversation's probability for this template (turns of a session only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_probability: Option<f32>,
}

/// A candidate's score at each stage, in one place: a new stage is a field here (and its
/// wire name in the HTTP reports, which flatten their own copy).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StageScores {
    /// Cosine to the template (per `template_scoring`, the centroid by default).
    pub embedding_score: f32,
    /// The learned head's probability, over the allowed templates.
    pub learned_score: Option<f32>,
    /// BM25 relative to the best template's.
    pub keyword_score: Option<f32>,
    /// The template's share of the catalog's examples opening with the question's word.
    pub opening_score: Option<f32>,
    pub rerank_score: Option<f32>,
    pub string_similarity_score: Option<f32>,
    /// The vector and keyword scores fused (stage 1's own ranking).
    pub retrieval_score: f32,
    /// Orders the candidates: `retrieval_score` + string + rerank.
    pub rank_score: f32,
    /// The confidence, compared with the threshold.
    pub combined_score: f32,
    /// Calibrated probability that this is the template meant (the head's logits at the
    /// temperature fitted on held-out examples).
    pub probability: Option<f32>,
}

impl Match {
    pub fn is_declined(&self) -> bool {
        self.declined_by.is_some()
    }

    /// The template by name.
    pub fn template_ref(&self) -> TemplateRef {
        TemplateRef {
            datasource: self.datasource.clone(),
            template_id: self.template_id.clone(),
        }
    }
}

/// The negative example that ruled a match out, and the two cosines compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Declined {
    pub negative_example: String,
    pub similarity: f32,
    /// Cosine to the template's nearest own text (an example, the description, id words).
    pub template_similarity: f32,
}

/// What happened to the rerank stage on this query.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RerankStatus {
    Disabled,
    /// Enabled in configuration, but no provider is configured.
    NoProvider,
    /// Nothing to judge: the router found no candidate (every partition's search ran past
    /// its deadline, or the caller may use none).
    NoCandidates,
    /// The top two were further apart than `reranking.margin`: no call was needed.
    NotNeeded {
        margin: f32,
    },
    Applied {
        reranker: String,
        candidates: usize,
        /// Answered from the rerank cache, which every caller shares: kept out of answers,
        /// where it would tell a caller that someone else asked the same recently (the
        /// `RerankCacheHits` metric counts them).
        #[serde(skip)]
        cached: bool,
    },
    Failed {
        reranker: String,
        error: String,
    },
}

/// The rerank stage's result: what happened, and the scores when it was applied (one per
/// candidate, best-ranked first).
#[derive(Debug, Clone, PartialEq)]
pub struct Reranked {
    pub status: RerankStatus,
    pub scores: Vec<f32>,
    pub took_ms: f64,
}

/// What the router decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Execute,
    /// The winner clears the threshold but runners-up are close: ask which was meant.
    Clarify,
    NoMatch,
}

impl Outcome {
    /// Its name on the wire (`execute`, `clarify`, `no_match`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Execute => "execute",
            Outcome::Clarify => "clarify",
            Outcome::NoMatch => "no_match",
        }
    }
}

/// How candidates are ordered: the index's learned head, or centroid cosine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ranking {
    Learned,
    Similarity,
}

impl Ranking {
    pub fn as_str(self) -> &'static str {
        match self {
            Ranking::Learned => "learned",
            Ranking::Similarity => "similarity",
        }
    }
}

impl fmt::Display for Ranking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StageTimings {
    pub embedding_ms: f64,
    pub search_ms: f64,
    pub string_similarity_ms: f64,
    pub rerank_ms: f64,
    pub total_ms: f64,
}

/// The candidates before the decision: stage 1 (retrieve) and stage 2 (string similarity)
/// have scored them, and they are ordered by the ranking score so far.
#[derive(Debug, Clone)]
pub struct Candidates {
    pub query: String,
    /// The question as routed when spelling correction changed it (`Speller`); the
    /// parameters are still read from `query`.
    pub corrected: Option<String>,
    /// Best first.
    pub matches: Vec<Match>,
    pub adapters_searched: Vec<String>,
    /// Datasources whose search overran `search_timeout_ms` and were left out.
    pub timed_out: Vec<String>,
    pub ranking: Ranking,
    pub timings: StageTimings,
}

impl Candidates {
    /// The ranking scores of the first two matches that may be chosen; their gap is what
    /// the rerank stage's margin gates on.
    pub fn top_gap(&self) -> f32 {
        let open: Vec<f32> = self
            .matches
            .iter()
            .take_while(|m| !m.is_declined())
            .take(2)
            .map(|m| m.scores.rank_score)
            .collect();
        match open[..] {
            [first, second] => first - second,
            _ => f32::INFINITY,
        }
    }
}

/// The router's decision. Nothing changes it afterwards: the conversation decides anew
/// into a routing of its own, and the service keeps what it learns around the routing
/// (`switchyard_core::service::Routed`).
#[derive(Debug, Clone, Serialize)]
pub struct Routing {
    pub query: String,
    /// The question as routed when spelling correction changed it.
    pub corrected: Option<String>,
    /// Best first.
    pub matches: Vec<Match>,
    pub adapters_searched: Vec<String>,
    /// Datasources whose search overran `search_timeout_ms` and were left out.
    pub timed_out: Vec<String>,
    /// Index into `matches` of the winner, if it clears the threshold.
    pub selected: Option<usize>,
    pub outcome: Outcome,
    /// With `Clarify`: how many of the first matches are the choices.
    pub choices: usize,
    pub threshold: f32,
    pub weights: Weights,
    pub rerank: RerankStatus,
    pub ranking: Ranking,
    pub timings: StageTimings,
}

impl Routing {
    /// The highest-ranked match that may be chosen (declined matches never are).
    pub fn best(&self) -> Option<&Match> {
        self.matches.first().filter(|m| !m.is_declined())
    }

    pub fn selected_match(&self) -> Option<&Match> {
        self.selected.map(|i| &self.matches[i])
    }

    /// The matches to offer when asking to clarify.
    pub fn clarify_choices(&self) -> &[Match] {
        match self.outcome {
            Outcome::Clarify => &self.matches[..self.choices],
            _ => &[],
        }
    }

    /// Why the router decided as it did (a conversation's reasons are
    /// `ContextUsed::reason`'s).
    pub fn reason(&self) -> &'static str {
        match (self.outcome, self.matches.is_empty()) {
            (Outcome::Execute, _) => "highest_ranked_confidence_above_threshold",
            (Outcome::Clarify, _) => "close_candidates_from_different_templates",
            (Outcome::NoMatch, true) => "no_templates_searched",
            // A template cleared the threshold but its datasource's negative example was nearer.
            (Outcome::NoMatch, false)
                if self
                    .matches
                    .iter()
                    .any(|m| m.is_declined() && m.scores.combined_score >= self.threshold) =>
            {
                "declined_by_negative_example"
            }
            (Outcome::NoMatch, false) => "best_confidence_below_threshold",
        }
    }
}
