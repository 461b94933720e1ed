//! The `sessions` section: how long turns are kept, how the turns before a question
//! weigh on its routing (`context`), and a caller's topic words (`topics`).

use serde::{Deserialize, Serialize};
use switchyard_catalog::config::rules::*;
use validator::{Validate, ValidationError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct SessionsConfig {
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_turns: usize,
    /// Sessions kept in memory when there is no table (local `serve`): at capacity the
    /// expired go first, then those expiring soonest.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub memory_capacity: usize,
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub ttl_seconds: u64,
    /// Turns older than this (seconds) are not context any more.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub window_seconds: u64,
    /// Keep the question's text with its turn (the context hypothesis reads the previous
    /// question); off, only the routing decision and parameters are kept.
    pub store_text: bool,
    #[validate(nested)]
    pub context: ContextConfig,
    #[validate(nested)]
    pub topics: TopicsConfig,
    #[validate(nested)]
    pub transitions: TransitionsConfig,
}

/// How often this deployment's conversations stay or switch, learned from its sessions
/// (`crate::transitions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct TransitionsConfig {
    /// Off: transitions are still counted (and shown), the configured weights stay in force.
    pub learn: bool,
    /// The configured weights count as this many turns beside the counted ones.
    pub prior_turns: usize,
    /// An instance adds its new counts to the shared store (and reads everyone's) at most
    /// this often; in memory, at every turn.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub flush_seconds: u64,
}

/// A caller's topic words across its sessions, a weak prior (`switchyard_core::topics`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct TopicsConfig {
    /// Needs `store_text` as well: topics are the questions' words.
    pub enabled: bool,
    /// A word unused this long is forgotten (the DynamoDB item's `expires_at` too).
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub ttl_seconds: u64,
    /// A word's weight halves every this many seconds.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub half_life_seconds: u64,
    /// The heaviest words kept per caller.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub max_words: usize,
    /// A template's prior is multiplied by `1 + weight × share` (the share of the caller's
    /// topic weight on the template's words).
    #[validate(custom(function = "non_negative"))]
    pub weight: f32,
}

/// How the turns before a question weigh on its routing (`switchyard_core::conversation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[validate(schema(function = "informative_span"))]
#[serde(deny_unknown_fields)]
pub struct ContextConfig {
    pub enabled: bool,
    /// Weight of a turn continuing the previous turn's template (the transitions are
    /// relative weights; the belief is normalised after each turn).
    #[validate(custom(function = "unit"))]
    pub stay: f32,
    /// ... of moving from a lookup template to an action template of the same datasource.
    #[validate(custom(function = "unit"))]
    pub lookup_to_action: f32,
    /// ... of moving to another template of the same datasource otherwise.
    #[validate(custom(function = "unit"))]
    pub same_datasource: f32,
    /// ... of moving to a template of another datasource.
    #[validate(custom(function = "unit"))]
    pub other_datasource: f32,
    /// A template is an action when its description starts with one of these verbs.
    pub action_verbs: Vec<String>,
    /// The turn's own probabilities are raised to this power (below 1 trusts them less)...
    #[validate(custom(function = "positive"))]
    pub evidence_power: f32,
    /// ... scaled down linearly between these confidences of the turn's best template,
    /// as distances below and above the confidence threshold the turn was routed with:
    /// "Sure, that is great." matches nothing well and says little about the template.
    /// Relative to the threshold, so they mean the same on the base model and on an
    /// adapted encoder, whose confidences run higher.
    #[validate(custom(function = "unit"))]
    pub uninformative_below_threshold: f32,
    #[validate(custom(function = "unit"))]
    pub informative_above_threshold: f32,
    /// Added to every probability, so no template is ever ruled out by one turn.
    #[validate(custom(function = "positive"))]
    pub evidence_floor: f32,
    /// Weight of the routing of "previous question + this one" in the evidence (needs
    /// `store_text`).
    #[validate(custom(function = "unit"))]
    pub previous_question_weight: f32,
    /// The routing of "what the assistant said + this turn" is evidence raised to this
    /// power ("Would you like to book a table? Yes, please." is sure of the reservation).
    #[validate(custom(function = "non_negative"))]
    pub assistant_power: f32,
    /// Share of the prior given to what the assistant's turn alone routes to (what it
    /// offered), when it makes an offer ("Would you like to ...?") ...
    #[validate(custom(function = "unit"))]
    pub offer_weight: f32,
    /// ... which it does when its text holds one of these (lower case), and the turn
    /// accepts it: it opens with one of these.
    pub offer_cues: Vec<String>,
    pub acceptance_cues: Vec<String>,
    /// A turn opening with one of these (lower case, whole words) and a few words after
    /// continues the conversation: it stands alone (`self_contained_probability`) only
    /// where the previous question with it routes where it routes alone.
    pub continuation_cues: Vec<String>,
    /// A turn holding one of these (lower case, whole words) refers to what the previous
    /// turn named ("how many of those are in Pierce County", "list them"): its template is
    /// the likeliest of its own, in the previous turn's datasource, that takes every value
    /// the previous turn was given (not when its own best is another datasource's template,
    /// or gives the previous template a value of its own).
    pub reference_cues: Vec<String>,
    /// A whole question is read with the previous one only when it holds one of these
    /// (lower case, whole words): words that point back ("there", "his"). Empty: every
    /// question is read with the previous one.
    pub anaphora_words: Vec<String>,
    /// A turn whose every word is one of these (lower case, apostrophes dropped: "thats")
    /// only acknowledges the answer before it ("thanks", "ok great"): after an answer that
    /// asked nothing, the service answers it without running the template again
    /// (`conversation::only_acknowledges`). Empty: never.
    pub acknowledgement_words: Vec<String>,
    /// The previous turn's pull halves every this many seconds.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub half_life_seconds: u64,
    /// A datasource chosen at least this many times in the window is preferred...
    pub preference_uses: usize,
    /// ... by this factor on its templates' prior.
    #[validate(custom(function = "positive"))]
    pub preference_weight: f32,
    /// A turn whose own routing executes on a template at least this likely stands against
    /// the conversation: a self-contained question switches whatever the stay prior says.
    #[validate(custom(function = "unit"))]
    pub self_contained_probability: f32,
    /// ... and at least this likely when its template is another datasource's than the
    /// previous turn's.
    #[validate(custom(function = "unit"))]
    pub self_contained_elsewhere_probability: f32,
    /// After a request of ours for a missing parameter, a turn routing elsewhere at least
    /// this likely is a new question; below, it answers the request.
    #[validate(custom(function = "unit"))]
    pub pending_switch_probability: f32,
    /// The context's winner is executed only with at least this probability.
    #[validate(custom(function = "unit"))]
    pub min_probability: f32,
    /// Templates of the belief kept with a turn.
    #[validate(range(min = 1, message = "must be at least 1"))]
    pub belief_size: usize,
    /// How the belief carries the turns before: the best path's or the sum of all paths'.
    pub decoding: Decoding,
}

/// What a template's belief after a turn stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decoding {
    /// The likeliest sequence of templates ending on it (Viterbi, max-product): the
    /// session's turns re-decoded at every turn, so a later turn that tells two templates
    /// apart moves the whole path, and every turn after it, to the other one.
    BestPath,
    /// The probability of being on it (the forward filter, sum-product).
    Marginal,
}

switchyard_catalog::default_from_embedded! {
    SessionsConfig => "sessions",
    TopicsConfig => "sessions.topics",
    TransitionsConfig => "sessions.transitions",
    ContextConfig => "sessions.context",
}

fn informative_span(c: &ContextConfig) -> Result<(), ValidationError> {
    if c.uninformative_below_threshold + c.informative_above_threshold <= 0.0 {
        return Err(refuse(
            "informative_above_threshold",
            "must be above 0 when uninformative_below_threshold is 0",
        ));
    }
    Ok(())
}

impl ContextConfig {
    /// Where a turn's best confidence lies between saying nothing (0) and saying enough
    /// (1) about its template, when routed with `threshold`; not clamped.
    pub fn informativeness(&self, confidence: f32, threshold: f32) -> f32 {
        let low = threshold - self.uninformative_below_threshold;
        let span = self.uninformative_below_threshold + self.informative_above_threshold;
        (confidence - low) / span
    }
}
