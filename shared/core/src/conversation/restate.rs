//! A fragment that names a new value the template cannot read alone ("and Ivan Mueller?"
//! after "Who does Victoria Adams report to"): read as the previous question with the
//! fragment's words where the previous value was, so the template's own patterns find the
//! new value and the answer is not the previous one again.

use serde_json::{Map, Value};

use switchyard_catalog::template::Template;
use switchyard_routing::session::Turn;
use switchyard_text::params::extract;

use super::texts::after_cues;

/// Words that end a fragment without naming anything ("and Kia instead?").
const CLOSING_WORDS: [&str; 4] = ["instead", "then", "too", "please"];

/// The previous question with the fragment's words in place of a value it named, or of a
/// word pointing at one ("who does he report to"), when `template` (the previous turn's,
/// which the turn continues) reads a new value there and nothing from the fragment
/// alone. When the previous turn was itself such a fragment, the question it continued,
/// further back on the same template, is read. `None` when the turn is no fragment after
/// a continuation cue, the questions are not kept, or no such place is found in them.
pub fn restated(
    template: &Template,
    turns: &[Turn],
    query: &str,
    continuation_cues: &[String],
    pointing_words: &[String],
) -> Option<String> {
    let previous = turns.last()?;
    let words = fragment_words(after_cues(query, continuation_cues)?);
    if words.is_empty() || reads_a_value(template, query) {
        return None;
    }
    let defaults = extract(template, "", &Map::new()).parameters;
    // A new value of a parameter the previous turn had.
    let reads_new = |candidate: &str| {
        let read = extract(template, candidate, &Map::new()).parameters;
        previous.parameters.iter().any(|(name, value)| {
            read.get(name)
                .is_some_and(|new| new != value && defaults.get(name) != Some(new))
        })
    };
    let same_template =
        |t: &&Turn| t.datasource == previous.datasource && t.template_id == previous.template_id;
    turns
        .iter()
        .rev()
        .take_while(same_template)
        .find_map(|turn| {
            let asked = turn.query.as_deref()?;
            let values = turn.parameters.values().filter_map(|value| match value {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            });
            let pointing = pointing_words.iter().filter(|w| !w.contains(' ')).cloned();
            values
                .chain(pointing)
                .filter_map(|text| find_words(asked, &text))
                .flat_map(|(start, end)| replacements(asked, start, end, &words))
                .find(|candidate| reads_new(candidate))
        })
}

/// `asked` with `words` in place of its bytes `start..end`; first with the word before
/// them too when the fragment opens with it ("and in Sales?" after "who earns the most
/// in marketing": the fragment brings its own preposition).
fn replacements(asked: &str, start: usize, end: usize, words: &str) -> Vec<String> {
    let before = asked[..start].trim_end();
    let word_before = before.rsplit(' ').next().unwrap_or("");
    let first_word = words.split(' ').next().unwrap_or("");
    let mut starts = vec![start];
    if !word_before.is_empty() && word_before.eq_ignore_ascii_case(first_word) {
        starts.insert(0, before.len() - word_before.len());
    }
    starts
        .into_iter()
        .map(|s| format!("{}{words}{}", &asked[..s], &asked[end..]))
        .collect()
}

/// Whether `query`'s own words give `template` a value (not its defaults).
pub(super) fn reads_a_value(template: &Template, query: &str) -> bool {
    let given = extract(template, query, &Map::new()).parameters;
    let defaults = extract(template, "", &Map::new()).parameters;
    given
        .iter()
        .any(|(name, value)| defaults.get(name) != Some(value))
}

/// The fragment's words without its closing punctuation and words ("Ivan Mueller" of
/// "Ivan Mueller then?").
fn fragment_words(rest: &str) -> String {
    let mut words: Vec<&str> = rest
        .split_whitespace()
        .map(|w| w.trim_end_matches(['?', '!', '.', ',']))
        .filter(|w| !w.is_empty())
        .collect();
    while words
        .last()
        .is_some_and(|w| CLOSING_WORDS.iter().any(|c| w.eq_ignore_ascii_case(c)))
    {
        words.pop();
    }
    words.join(" ")
}

/// Where `value`'s words stand in `text` as whole words, ignoring case: byte offsets.
fn find_words(text: &str, value: &str) -> Option<(usize, usize)> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let lower = text.to_lowercase();
    let needle = value.to_lowercase();
    // Lower-casing can change byte lengths outside ASCII: offsets hold only when it did not.
    if lower.len() != text.len() {
        return None;
    }
    let boundary = |i: usize| {
        lower[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric())
    };
    lower.match_indices(&needle).find_map(|(start, _)| {
        let end = start + needle.len();
        let after = lower[end..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric());
        (boundary(start) && after).then_some((start, end))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(parameter: Value) -> Template {
        serde_json::from_value(json!({
            "id": "t", "description": "d", "nl_examples": ["x"], "parameters": [parameter]
        }))
        .unwrap()
    }

    fn manager() -> Template {
        template(
            json!({"name": "employee", "required": true, "extraction_patterns": [
            "\\b(?i:does) ([A-Z][a-z]+(?: [A-Z][a-z]+)?) (?i:report)",
            "\\b(?i:manager of|boss of) ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\\b"]}),
        )
    }

    fn turn(query: &str, parameters: Value) -> Turn {
        Turn {
            query: Some(query.into()),
            datasource: Some("hr".into()),
            template_id: Some("t".into()),
            parameters: serde_json::from_value(parameters).unwrap(),
            outcome: Default::default(),
            confidence: 0.9,
            belief: Vec::new(),
            choices: Vec::new(),
            answer: None,
            at: 0,
        }
    }

    /// What `query` reads as after `previous`, on the manager template.
    fn manager_after(previous: &Turn, query: &str) -> Option<String> {
        restated_with(&manager(), std::slice::from_ref(previous), query)
    }

    fn restated_with(template: &Template, turns: &[Turn], query: &str) -> Option<String> {
        let cues = ["and", "what about", "how about"].map(String::from);
        let pointing = ["he", "his", "she", "her", "it", "there"].map(String::from);
        restated(template, turns, query, &cues, &pointing)
    }

    #[test]
    fn a_word_pointing_at_the_previous_value_takes_the_new_one() {
        // "who does he report to" after "look up Peter Cook": the value came from the session.
        let previous = turn("who does he report to", json!({"employee": "Peter Cook"}));
        assert_eq!(
            manager_after(&previous, "and what about Laura Hall?").as_deref(),
            Some("who does Laura Hall report to")
        );
    }

    #[test]
    fn a_bare_new_value_is_read_where_the_previous_one_was() {
        let previous = turn(
            "Who does Victoria Adams report to",
            json!({"employee": "Victoria Adams"}),
        );
        assert_eq!(
            manager_after(&previous, "and Ivan Mueller?").as_deref(),
            Some("Who does Ivan Mueller report to")
        );
        assert_eq!(
            manager_after(&previous, "what about Ivan Mueller then?").as_deref(),
            Some("Who does Ivan Mueller report to")
        );
        // After "and Ivan Mueller?", the question it continued is read.
        let fragment = turn("and Ivan Mueller?", json!({"employee": "Ivan Mueller"}));
        assert_eq!(
            restated_with(&manager(), &[previous, fragment], "and Kevin Smith?").as_deref(),
            Some("Who does Kevin Smith report to")
        );
    }

    #[test]
    fn a_fragment_bringing_its_preposition_replaces_the_one_before_the_value() {
        let department = template(json!({"name": "department", "required": true,
            "extraction_patterns": ["\\bmost in ([A-Za-z]+)"]}));
        let previous = turn(
            "who earns the most in engineering",
            json!({"department": "engineering"}),
        );
        assert_eq!(
            restated_with(
                &department,
                std::slice::from_ref(&previous),
                "and in Sales?"
            )
            .as_deref(),
            Some("who earns the most in Sales")
        );
        // Where the template reads a value anywhere, the adapter reads it from the turn.
        let anywhere = template(json!({"name": "department", "required": true,
            "allowed_values": ["Engineering", "Sales"]}));
        assert_eq!(
            restated_with(&anywhere, std::slice::from_ref(&previous), "and in Sales?"),
            None
        );
    }

    #[test]
    fn nothing_is_restated_without_a_new_value_or_a_fragment() {
        let previous = turn(
            "Who does Victoria Adams report to",
            json!({"employee": "Victoria Adams"}),
        );
        // A value the template reads alone: the adapter reads the turn as it is.
        assert_eq!(
            manager_after(&previous, "and the manager of Ivan Mueller?"),
            None
        );
        // No continuation cue, no words after it, or nothing the template reads there.
        assert_eq!(manager_after(&previous, "Ivan Mueller?"), None);
        assert_eq!(manager_after(&previous, "and?"), None);
        assert_eq!(manager_after(&previous, "and his boss"), None);
        // The previous question is not kept (`store_text: false`).
        let unkept = Turn {
            query: None,
            ..previous
        };
        assert_eq!(
            restated_with(&manager(), &[unkept], "and Ivan Mueller?"),
            None
        );
    }

    #[test]
    fn a_value_is_found_as_whole_words_ignoring_case() {
        assert_eq!(
            find_words("Who does Victoria Adams report to", "victoria adams"),
            Some((9, 23))
        );
        assert_eq!(find_words("top paid in salesforce", "sales"), None);
        assert_eq!(find_words("15% of 200", "200"), Some((7, 10)));
        assert_eq!(find_words("anything", ""), None);
    }

    #[test]
    fn a_fragment_loses_its_closing_words_and_punctuation() {
        assert_eq!(fragment_words("Ivan Mueller?"), "Ivan Mueller");
        assert_eq!(fragment_words("in Sales then?"), "in Sales");
        assert_eq!(fragment_words("Kia instead"), "Kia");
        assert_eq!(fragment_words("?"), "");
    }
}
