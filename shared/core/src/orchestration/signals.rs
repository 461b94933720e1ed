//! Whether a question asks for several things: the seven signals. Each is cheap (words
//! and what the catalog knows), so every question is checked.

use std::collections::HashSet;

use serde::Serialize;

use super::split::{tokens, Cues, Link};
use crate::config::OrchestrationConfig;
use switchyard_catalog::template::Catalog;

/// Words that start examples without being an action ("what is", "how many", "i want").
const NOT_VERBS: &[&str] = &[
    "what", "whats", "what's", "how", "when", "where", "who", "whom", "which", "why", "is", "are",
    "was", "were", "do", "does", "did", "can", "could", "would", "will", "should", "shall", "may",
    "might", "i", "i'd", "i'm", "im", "id", "my", "me", "we", "you", "the", "a", "an", "this",
    "that", "there", "it", "please", "hey", "hi", "ok", "okay", "so", "and", "or", "but", "if",
    "in", "on", "at", "for", "to", "of", "with", "from", "by", "any", "all", "some", "your", "our",
    "its", "let", "lets", "let's", "number",
];

/// Question words that open a request ("*how many* work in Sales and *what is* 15% of
/// 200"): counted with the action verbs when they start the question or follow a cue.
const REQUEST_OPENERS: &[&str] = &[
    "what", "whats", "what's", "how", "who", "which", "when", "where", "why",
];

/// Words of order the sequential signal listens for (with the sequential cues).
const SEQUENCE_WORDS: &[&str] = &[
    "first",
    "then",
    "after",
    "finally",
    "next",
    "before",
    "subsequently",
];

/// Words that relate two phrases ("salary *of* their staff", "flights *from* A *to* B").
const RELATION_WORDS: &[&str] = &[
    "of", "for", "in", "by", "from", "to", "between", "with", "per", "than", "at", "on", "during",
    "within",
];

const DATE_WORDS: &[&str] = &[
    "today",
    "tomorrow",
    "yesterday",
    "tonight",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "weekend",
];

/// One signal: whether it fired and what it saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signal {
    pub fired: bool,
    /// The count (or, for confidence, the value) compared with its limit.
    pub value: f32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub found: Vec<String>,
}

/// The seven signals, and whether orchestration is considered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signals {
    pub action_verbs: Signal,
    pub conjunctions: Signal,
    pub long_question: Signal,
    pub entities: Signal,
    pub relationships: Signal,
    pub sequential: Signal,
    pub low_confidence: Signal,
    /// How many fired.
    pub fired: usize,
    /// At least `orchestration.min_signals` fired.
    pub considered: bool,
}

/// What the catalog knows that the signals use: its action verbs and named values.
#[derive(Debug, Clone)]
pub struct Vocabulary {
    verbs: HashSet<String>,
    /// Allowed values and aliases of every parameter, lowercase, up to three words.
    values: HashSet<String>,
}

impl Vocabulary {
    pub fn new(catalog: &Catalog, config: &OrchestrationConfig) -> Vocabulary {
        let mut verbs: HashSet<String> = config
            .action_verbs
            .iter()
            .map(|v| v.to_lowercase())
            .collect();
        let mut values = HashSet::new();
        let mut first_words: HashSet<String> = HashSet::new();
        for template in catalog.datasources.iter().flat_map(|d| &d.templates) {
            for example in &template.nl_examples {
                if let Some(first) = tokens(example).first() {
                    let word = first.word.as_str();
                    if word.len() >= 3
                        && word.chars().all(|c| c.is_alphabetic())
                        && !NOT_VERBS.contains(&word)
                    {
                        first_words.insert(first.word.clone());
                    }
                }
            }
            for parameter in &template.parameters {
                let named = parameter
                    .allowed_values
                    .iter()
                    .filter_map(|v| v.as_str())
                    .chain(parameter.aliases.keys().map(String::as_str));
                for value in named {
                    let value = value.trim().to_lowercase();
                    if !value.is_empty() && value.split_whitespace().count() <= 3 {
                        values.insert(value);
                    }
                }
            }
        }
        // A word that starts an example and names no parameter value ("Marketing ...") is
        // taken for the catalog's own verb ("add", "play", "count"). Measured: asking for
        // two examples or more lost 1.5 points on MixATIS.
        verbs.extend(
            first_words
                .into_iter()
                .filter(|word| !values.contains(word)),
        );
        Vocabulary { verbs, values }
    }
}

/// Check `question` (whose own best confidence is `confidence`) against the signals.
pub fn detect(
    question: &str,
    confidence: f32,
    vocabulary: &Vocabulary,
    cues: &Cues,
    config: &OrchestrationConfig,
) -> Signals {
    let limits = &config.signals;
    let tokens = tokens(question);
    let words: Vec<&str> = tokens
        .iter()
        .map(|t| t.word.as_str())
        .filter(|w| *w != "," && *w != ";")
        .collect();

    let mut verbs: Vec<String> = words
        .iter()
        .filter(|w| vocabulary.verbs.contains(**w))
        .map(|w| w.to_string())
        .collect();
    let segments = super::split::segments(question, cues, config.max_segments);
    for segment in &segments {
        let opener = tokens
            .iter()
            .find(|t| t.start == segment.start)
            .map(|t| t.word.as_str());
        if let Some(word) = opener.filter(|w| REQUEST_OPENERS.contains(w)) {
            verbs.push(word.to_owned());
        }
    }
    let found_cues = cues.found(question);
    let conjunctions: Vec<String> = found_cues
        .iter()
        .filter(|(cue, link)| *link == Link::Parallel && cue.chars().any(char::is_alphabetic))
        .map(|(cue, _)| cue.clone())
        .collect();
    let mut sequence: Vec<String> = found_cues
        .iter()
        .filter(|(_, link)| *link == Link::Sequential)
        .map(|(cue, _)| cue.clone())
        .collect();
    for word in &words {
        if SEQUENCE_WORDS.contains(word) && !sequence.iter().any(|s| s.contains(word)) {
            sequence.push(word.to_string());
        }
    }
    let entities = entities(question, &tokens, vocabulary);
    let relationships: Vec<String> = words
        .windows(3)
        .filter(|w| RELATION_WORDS.contains(&w[1]) && is_content(w[0]) && is_content(w[2]))
        .map(|w| w.join(" "))
        .collect();

    let count = |found: Vec<String>, more_than: usize| Signal {
        fired: found.len() > more_than,
        value: found.len() as f32,
        found,
    };
    let signals = [
        count(verbs, limits.action_verbs.saturating_sub(1)),
        count(conjunctions, 0),
        Signal {
            fired: words.len() > limits.words,
            value: words.len() as f32,
            found: Vec::new(),
        },
        count(entities, limits.entities),
        count(relationships, limits.relationships),
        count(sequence, 0),
        Signal {
            fired: confidence < limits.low_confidence,
            value: confidence,
            found: Vec::new(),
        },
    ];
    let fired = signals.iter().filter(|s| s.fired).count();
    let [action_verbs, conjunctions, long_question, entities, relationships, sequential, low_confidence] =
        signals;
    Signals {
        action_verbs,
        conjunctions,
        long_question,
        entities,
        relationships,
        sequential,
        low_confidence,
        fired,
        considered: fired >= config.min_signals,
    }
}

fn is_content(word: &str) -> bool {
    word.len() > 2 && !NOT_VERBS.contains(&word) && !RELATION_WORDS.contains(&word)
}

/// Numbers, dates, capitalised names (not the first word) and the catalog's named values.
fn entities(
    question: &str,
    tokens: &[super::split::Token],
    vocabulary: &Vocabulary,
) -> Vec<String> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let word = tokens[i].word.as_str();
        // The catalog's values first, longest phrase first.
        let phrase = (1..=3).rev().find_map(|n| {
            let end = i + n;
            (end <= tokens.len())
                .then(|| {
                    tokens[i..end]
                        .iter()
                        .map(|t| t.word.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .filter(|p| vocabulary.values.contains(p))
                .map(|p| (p, n))
        });
        if let Some((phrase, n)) = phrase {
            found.push(phrase);
            i += n;
            continue;
        }
        let original = &question[tokens[i].start..tokens[i].end];
        let capitalised =
            i > 0 && original.chars().next().is_some_and(char::is_uppercase) && word != "i";
        if word.chars().any(|c| c.is_ascii_digit()) || DATE_WORDS.contains(&word) {
            found.push(word.to_owned());
        } else if capitalised {
            // A run of capitalised words is one name.
            let mut end = i + 1;
            while end < tokens.len()
                && question[tokens[end].start..tokens[end].end]
                    .chars()
                    .next()
                    .is_some_and(char::is_uppercase)
            {
                end += 1;
            }
            found.push(question[tokens[i].start..tokens[end - 1].end].to_owned());
            i = end;
            continue;
        }
        i += 1;
    }
    found
}
