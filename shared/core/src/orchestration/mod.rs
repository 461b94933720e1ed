//! Questions that ask for several things at once: detect (`signals`), split into
//! sub-questions (`split`, `decompose`), plan them into phases (`plan`), run the phases
//! with checkpoints (`workflow`, driven by the service) and fuse the answers (`fuse`).
//! A question with one intent never reaches the later steps and keeps today's answer.

mod chat_splitter;
mod decompose;
mod execute;
mod fuse;
mod plan;
mod signals;
mod split;
mod splitter;
mod workflow;

use std::collections::HashMap;
use std::time::Instant;

pub use chat_splitter::ChatSplitter;
pub use decompose::{choose, spans, valid_split, Span, SpanRouting, Split};
pub use execute::{run, Requests, Run};
pub use fuse::{fuse, Fused, FusionStrategy, Section};
pub use plan::{phases, plan, Task};
pub use signals::{detect, Signal, Signals, Vocabulary};
pub use split::{segments, Cues, Link, Segment};
pub use splitter::{validated_parts, QuestionSplitter};
pub use workflow::{
    context_key, context_tasks_kept, task_checkpoint_key, task_key, Checkpoint,
    MemoryWorkflowStore, TaskState, TaskStatus, WorkflowStore, MAX_CHECKPOINT_BYTES,
    MAX_CONTEXT_LIST_BYTES, MAX_CONTEXT_TASKS, MAX_WORKFLOW_ID_CHARS,
};

use crate::config::OrchestrationConfig;
use crate::error::Result;
use switchyard_catalog::auth::Access;
use switchyard_catalog::template::Catalog;
use switchyard_routing::router::{Router, Routing};

/// What the catalog and configuration give decomposition, built once per router.
#[derive(Debug, Clone)]
pub struct Decomposer {
    cues: Cues,
    vocabulary: Vocabulary,
    config: OrchestrationConfig,
}

impl Decomposer {
    pub fn new(catalog: &Catalog, config: &OrchestrationConfig) -> Decomposer {
        Decomposer {
            cues: Cues::new(&config.parallel_cues, &config.sequential_cues),
            vocabulary: Vocabulary::new(catalog, config),
            config: config.clone(),
        }
    }

    /// The seven signals for `question`, whose own best confidence is `confidence`.
    pub fn detect(&self, question: &str, confidence: f32, config: &OrchestrationConfig) -> Signals {
        detect(question, confidence, &self.vocabulary, &self.cues, config)
    }

    /// `question` cut at its cues.
    pub fn segments(&self, question: &str, config: &OrchestrationConfig) -> Vec<Segment> {
        segments(question, &self.cues, config.max_segments)
    }
}

/// A part of a split question, routed on its own.
#[derive(Debug, Clone)]
pub struct SubQuestion {
    pub text: String,
    /// How it follows the part before (none for the first).
    pub link: Option<Link>,
    /// The cue words it was cut at ("and then").
    pub cut: Option<String>,
    pub routing: Routing,
}

/// What detection and decomposition found for a question.
#[derive(Debug, Clone)]
pub struct Decomposition {
    pub signals: Signals,
    /// Cue-separated segments of the question.
    pub segments: usize,
    /// Two or more when the question was split; empty when it stays whole.
    pub parts: Vec<SubQuestion>,
    pub whole_score: f32,
    /// The chosen split's score, when one beat the whole.
    pub split_score: Option<f32>,
    /// Detection and choosing, without the sub-questions' own routing.
    pub decompose_ms: f64,
    /// The sub-questions' routing (one embedding batch).
    pub routing_ms: f64,
    /// `rules`, or the chat splitter's id when it made the split.
    pub method: String,
    /// The chat splitter's error, when it was asked and failed.
    pub splitter_error: Option<String>,
}

impl Decomposition {
    pub fn is_split(&self) -> bool {
        self.parts.len() >= 2
    }
}

/// Detect and, when the signals say so, split `whole.query`: every candidate span is
/// embedded in one batch and routed like a question of its own.
pub fn decompose(
    router: &Router,
    decomposer: &Decomposer,
    whole: &Routing,
    access: &Access,
) -> Result<Decomposition> {
    let started = Instant::now();
    let config = &decomposer.config;
    let question = whole.query.as_str();
    let whole_span = SpanRouting::of(whole);
    let signals = decomposer.detect(question, whole_span.confidence, config);
    let segments = decomposer.segments(question, config);
    let mut decomposition = Decomposition {
        signals,
        segments: segments.len(),
        parts: Vec::new(),
        whole_score: whole_span.confidence,
        split_score: None,
        decompose_ms: 0.0,
        routing_ms: 0.0,
        method: "rules".into(),
        splitter_error: None,
    };
    let spans = spans(segments.len(), config.max_parts);
    if !config.enabled || !decomposition.signals.considered || spans.is_empty() {
        decomposition.decompose_ms = ms_since(started);
        return Ok(decomposition);
    }
    let text = |(first, end): Span| &question[segments[first].start..segments[end - 1].end];
    let routed_at = Instant::now();
    let texts: Vec<&str> = spans.iter().map(|&s| text(s)).collect();
    let routings: HashMap<Span, Routing> = spans
        .iter()
        .copied()
        .zip(router.route_batch(&texts, access)?)
        .collect();
    decomposition.routing_ms = ms_since(routed_at);
    let routed: HashMap<Span, SpanRouting> = routings
        .iter()
        .map(|(span, routing)| (*span, SpanRouting::of(routing)))
        .collect();
    if let Some(split) = choose(segments.len(), &whole_span, &routed, config) {
        decomposition.split_score = Some(split.score);
        decomposition.parts = split
            .parts
            .iter()
            .map(|&span| SubQuestion {
                text: text(span).to_owned(),
                link: segments[span.0].link,
                cut: segments[span.0].cut.clone(),
                routing: routings[&span].clone(),
            })
            .collect();
    }
    decomposition.decompose_ms = ms_since(started) - decomposition.routing_ms;
    Ok(decomposition)
}

fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}
