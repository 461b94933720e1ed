//! A turn that only acknowledges the answer before it ("thanks", "ok great", "that's all").
//!
//! The conversation keeps such a turn on the template it was on (it names nothing new, so
//! the stay prior wins), which is right for routing: SGD labels "Thank you." with the
//! dialogue's intent. Executing it is not: it would run the previous template again and
//! repeat its answer, or repeat an action (a POST that is not idempotent). The service
//! answers it without running anything (`Service::query`), and the session keeps no turn
//! for it, so "and in Pierce?" after "thanks" continues the question before.

use switchyard_routing::config::ContextConfig;
use switchyard_routing::session::{ContextReport, ContextUsed, Turn, TurnOutcome};

use super::Said;

/// Words that thank rather than acknowledge: the reply says "you're welcome" to them.
const THANKS: [&str; 7] = [
    "thanks",
    "thank",
    "thankyou",
    "thx",
    "ty",
    "cheers",
    "appreciate",
];

/// Whether `query` only acknowledges the answer before it: every word is one of
/// `words` (lower case, apostrophes dropped: "that's" is "thats").
pub fn acknowledges(query: &str, words: &[String]) -> bool {
    let said = words_of(query);
    !said.is_empty() && said.iter().all(|w| words.contains(w))
}

/// Whether a turn in a conversation only acknowledges our previous answer and is to be
/// answered without executing: it `acknowledges`, the previous turn executed and asked
/// nothing (a clarify or a request of ours, or another agent's question or offer, is
/// answered by "ok" or "sure"), and the turn alone is not sure of a template of its own
/// (a catalog with a "thank you" intent answers it there).
pub fn only_acknowledges(
    query: &str,
    report: &ContextReport,
    turns: &[Turn],
    said: Option<Said<'_>>,
    config: &ContextConfig,
) -> bool {
    let answered = turns
        .last()
        .is_some_and(|p| p.outcome == TurnOutcome::Execute);
    let asked_by_another = matches!(said, Some(Said::Whole(_)));
    let sure_alone = report
        .turn
        .as_ref()
        .is_some_and(|t| t.probability >= config.self_contained_probability)
        && report.used == ContextUsed::Turn;
    answered
        && !asked_by_another
        && !sure_alone
        && acknowledges(query, &config.acknowledgement_words)
}

/// What the service answers an acknowledgement with.
pub fn acknowledgement_reply(query: &str) -> &'static str {
    if words_of(query).iter().any(|w| THANKS.contains(&w.as_str())) {
        "You're welcome. Ask another question any time."
    } else {
        "Noted. Ask another question any time."
    }
}

/// The turn's words, lower case, apostrophes dropped.
fn words_of(query: &str) -> Vec<String> {
    query
        .to_lowercase()
        .replace(['\'', '\u{2019}'], "")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_routing::session::Weighted;

    fn config() -> ContextConfig {
        ContextConfig::default()
    }

    fn report(used: ContextUsed, alone: f32) -> ContextReport {
        ContextReport {
            used,
            turns: 1,
            previous: None,
            seconds_since_previous: Some(5),
            weight: 1.0,
            preferred_datasource: None,
            previous_question: false,
            turn: Some(Weighted {
                datasource: "d".into(),
                template_id: "t".into(),
                probability: alone,
            }),
            context: None,
            self_contained: false,
            topic_words: 0,
            topic_boost: None,
            assistant: None,
        }
    }

    fn answered(outcome: TurnOutcome) -> Vec<Turn> {
        vec![Turn {
            query: Some("how many teslas are registered".into()),
            datasource: Some("ev".into()),
            template_id: Some("vehicles_count_by_make".into()),
            parameters: Default::default(),
            outcome,
            confidence: 0.9,
            belief: Vec::new(),
            choices: Vec::new(),
            answer: None,
            at: 0,
        }]
    }

    #[test]
    fn only_whole_acknowledgements_acknowledge() {
        let words = config().acknowledgement_words;
        for text in [
            "thanks",
            "Thank you so much!",
            "ok great",
            "That's all, thanks.",
            "perfect, thank you",
            "cool",
            "no that’s all",
        ] {
            assert!(acknowledges(text, &words), "{text}");
        }
        for text in [
            "",
            "?",
            "ok and in sales?",
            "thanks, what about marketing",
            "great, how many teslas are there",
            "do it again",
            "yes please book it",
        ] {
            assert!(!acknowledges(text, &words), "{text}");
        }
    }

    #[test]
    fn an_acknowledgement_is_not_executed_only_after_an_answer_that_asked_nothing() {
        let config = config();
        let ours = Some(Said::OwnAnswer("40 Tesla vehicles are registered."));
        let stayed = report(ContextUsed::Context, 0.3);
        let after_answer = answered(TurnOutcome::Execute);
        assert!(only_acknowledges(
            "thanks",
            &stayed,
            &after_answer,
            ours,
            &config
        ));
        assert!(only_acknowledges(
            "ok great",
            &stayed,
            &after_answer,
            None,
            &config
        ));
        // After our request for a value, or another agent's offer, "ok" answers it.
        let requested = answered(TurnOutcome::NeedsClarification);
        assert!(!only_acknowledges("ok", &stayed, &requested, ours, &config));
        let offered = Some(Said::Whole("Would you like to book a table?"));
        assert!(!only_acknowledges(
            "ok",
            &stayed,
            &after_answer,
            offered,
            &config
        ));
        // No conversation: nothing to repeat.
        assert!(!only_acknowledges("thanks", &stayed, &[], None, &config));
        // A catalog that answers "thank you" routes it there on its own.
        let sure = report(ContextUsed::Turn, 0.95);
        assert!(!only_acknowledges(
            "thank you",
            &sure,
            &after_answer,
            ours,
            &config
        ));
        // A turn that is not an acknowledgement is executed as routed.
        assert!(!only_acknowledges(
            "and in pierce?",
            &stayed,
            &after_answer,
            ours,
            &config
        ));
    }

    #[test]
    fn thanks_are_welcomed_and_the_rest_noted() {
        assert!(acknowledgement_reply("Thanks a lot").starts_with("You're welcome"));
        assert!(acknowledgement_reply("ok great").starts_with("Noted"));
    }
}
