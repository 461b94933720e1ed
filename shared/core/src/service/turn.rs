//! Routing one turn in its conversation: the question's own routing, the texts around it
//! (the previous question with it, what the assistant said), the conversation's decision;
//! and whether the turn only acknowledges the answer before it.

use super::routed::TurnContext;
use super::{Question, Routed, Service};
use crate::conversation::{
    assistant_text, contextualize, only_acknowledges, stands_alone, AssistantTurn, ContextTexts,
    Contextualized, Said,
};
use crate::error::Result;
use switchyard_catalog::auth::Access;
use switchyard_catalog::blocking::run_blocking;
use switchyard_routing::config::SessionsConfig;
use switchyard_routing::router::Routing;
use switchyard_routing::session::{ContextReport, Turn, TurnOutcome, Weighted};
use switchyard_routing::transitions::Transition;

impl Service {
    /// The turn's routing: the stages on the question, on the previous question with it
    /// and on what the assistant said before it (one batch), then, when there is a
    /// conversation, its decision with the report of what it did and the belief kept.
    pub(super) async fn route_turn(
        &self,
        question: &Question,
        access: &Access,
        context: &TurnContext,
        now: i64,
    ) -> Result<TurnRouted> {
        let turns = context.turns();
        let said = said(question, turns.and_then(|t| t.last()));
        let texts = ContextTexts::of(
            turns.unwrap_or_default(),
            &question.query,
            said,
            &self.config.sessions,
        );
        // Embedding and scoring: the CPU-bound part of a request. The question first: a
        // turn that stands alone is routed as its own whatever the texts around it say,
        // so they are embedded only for the others (one batch).
        let candidates = run_blocking(|| self.router.candidates(&question.query, access))?;
        let reranked = match &self.rerank {
            Some(stage) => stage.rerank(&self.router, &candidates, now).await,
            None => self.router.not_reranked(),
        };
        let own = self.router.decide(candidates, reranked);
        let alone = texts.assistant.is_none()
            && stands_alone(
                &own,
                turns.unwrap_or_default(),
                false,
                &self.config.sessions.context,
            );
        let texts = if alone {
            ContextTexts::default()
        } else {
            texts
        };
        let others = run_blocking(|| self.router.candidates_of_texts(&texts.texts(), access))?;
        let mut others = others
            .into_iter()
            .map(|c| self.router.decide(c, self.router.not_reranked()));
        let joint = texts.joint.as_ref().and_then(|_| others.next());
        let said = texts
            .assistant
            .as_ref()
            .and_then(|_| Some((others.next()?, others.next()?)));
        let assistant = said
            .as_ref()
            .map(|(alone, with_turn)| AssistantTurn { alone, with_turn });
        if turns.is_none() && assistant.is_none() {
            return Ok(TurnRouted {
                routing: own,
                context: None,
                belief: Vec::new(),
                transition: None,
            });
        }
        // The filter moves at the rates this deployment's sessions showed.
        let sessions = SessionsConfig {
            context: self.transition_rates().apply(&self.config.sessions.context),
            ..self.config.sessions.clone()
        };
        let Contextualized {
            routing,
            report,
            belief,
            transition,
        } = contextualize(
            &self.router,
            &sessions,
            own,
            joint.as_ref(),
            assistant,
            turns.unwrap_or_default(),
            context.topics.as_ref(),
            now,
        );
        Ok(TurnRouted {
            routing,
            context: Some(report),
            belief,
            transition,
        })
    }

    /// Whether the turn only acknowledges the previous answer ("thanks"): answered without
    /// running anything (`conversation::only_acknowledges`).
    pub(super) fn only_acknowledges(
        &self,
        question: &Question,
        routed: &Routed,
        context: &TurnContext,
    ) -> bool {
        let (Some(report), Some(turns)) = (&routed.context, context.turns()) else {
            return false;
        };
        let said = said(question, turns.last());
        only_acknowledges(
            &question.query,
            report,
            turns,
            said,
            &self.config.sessions.context,
        )
    }
}

/// A turn routed, in its conversation when it has one.
pub(super) struct TurnRouted {
    pub routing: Routing,
    pub context: Option<ContextReport>,
    pub belief: Vec<Weighted>,
    /// Where the conversation went, when the turn was sure of itself alone.
    pub transition: Option<Transition>,
}

/// What the assistant said before the question: the caller's text, else the session's
/// last answer. Our own answer (the session's, the same text sent back, or one the caller
/// says is ours) is evidence only for what it asks, unless it asked for a missing parameter.
fn said<'a>(question: &'a Question, last: Option<&'a Turn>) -> Option<Said<'a>> {
    let answered = |text: &'a str, turn: &Turn| match turn.outcome {
        TurnOutcome::NeedsClarification => Said::Whole(text),
        _ => Said::OwnAnswer(text),
    };
    match (question.assistant.as_deref(), last) {
        (Some(text), Some(turn)) if turn.answer.as_deref() == Some(&*assistant_text(text)) => {
            Some(answered(text, turn))
        }
        (Some(text), _) if question.assistant_is_ours => Some(Said::OwnAnswer(text)),
        (Some(text), _) => Some(Said::Whole(text)),
        (None, Some(turn)) => turn.answer.as_deref().map(|text| answered(text, turn)),
        (None, None) => None,
    }
}
