//! Deterministic parameter extraction: which values a question gives a template's
//! parameters. Patterns first, then allowed values and aliases named in the text, then the
//! session's previous values, then defaults. Nothing is guessed: a required parameter
//! still missing is reported by name.

use std::borrow::Cow;
use std::sync::LazyLock;

use chrono::NaiveDate;
use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value};

use switchyard_catalog::template::{ParamType, Parameter, Template};

use crate::error::ParamError;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Extraction {
    pub parameters: Map<String, Value>,
    pub missing: Vec<MissingParameter>,
    pub invalid: Vec<InvalidParameter>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissingParameter {
    pub name: String,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InvalidParameter {
    pub name: String,
    pub value: String,
    pub reason: String,
}

pub fn extract(template: &Template, query: &str, session: &Map<String, Value>) -> Extraction {
    let mut out = Extraction::default();
    let with_digits = number_words_as_digits(query);
    for parameter in &template.parameters {
        // Numeric parameters also match "five" as "5".
        let text = match parameter.param_type {
            ParamType::Integer | ParamType::Number => with_digits.as_ref(),
            _ => query,
        };
        // The question's own words first, then values supplied from outside it (the
        // session's previous turn, a model's fill): both go through the same checks.
        let found = from_patterns(parameter, text)
            .or_else(|| from_named_values(parameter, text))
            .or_else(|| session.get(&parameter.name).and_then(value_text));
        let value = match found {
            Some(raw) => match coerce(parameter, &raw) {
                Ok(value) => Some(value),
                Err(error) => {
                    out.invalid.push(InvalidParameter {
                        name: parameter.name.clone(),
                        value: raw,
                        reason: error.to_string(),
                    });
                    continue;
                }
            },
            None => parameter.default.clone().filter(|v| !v.is_null()),
        };
        match value {
            Some(value) => {
                out.parameters.insert(parameter.name.clone(), value);
            }
            None if parameter.required => out.missing.push(MissingParameter {
                name: parameter.name.clone(),
                description: parameter.description.clone(),
            }),
            None => {}
        }
    }
    out
}

fn from_patterns(parameter: &Parameter, query: &str) -> Option<String> {
    // Patterns were checked when the catalog loaded; one that fails here is skipped.
    parameter.extraction_patterns.iter().find_map(|pattern| {
        let regex = regex::Regex::new(pattern).ok()?;
        let captures = regex.captures(query)?;
        let value = captures.get(1).or_else(|| captures.get(0))?;
        Some(value.as_str().trim().to_owned())
    })
}

/// The longest allowed value or alias that the query names as whole words.
fn from_named_values(parameter: &Parameter, query: &str) -> Option<String> {
    let normalized = crate::similarity::normalize_text(query);
    let haystack = format!(" {normalized} ");
    let names = || {
        parameter
            .allowed_values
            .iter()
            .filter_map(value_text)
            .chain(parameter.aliases.keys().cloned())
    };
    names()
        .filter(|name| {
            let needle = crate::similarity::normalize_text(name);
            !needle.is_empty() && haystack.contains(&format!(" {needle} "))
        })
        .max_by_key(|name| name.len())
        .or_else(|| misspelt_name(names(), &normalized))
}

/// The one named value of a single word of five letters or more that a word of the
/// question misspells by one slip, keeping its first and last letters ("enginering",
/// "marketting"): a closed list, so a slip cannot make another value.
fn misspelt_name(names: impl Iterator<Item = String>, normalized: &str) -> Option<String> {
    let words: Vec<&str> = normalized.split(' ').collect();
    let mut found = names.filter(|name| {
        let needle = crate::similarity::normalize_text(name);
        needle.len() >= 5
            && !needle.contains(' ')
            && words.iter().any(|w| {
                w.chars().next() == needle.chars().next()
                    && w.chars().next_back() == needle.chars().next_back()
                    && strsim::osa_distance(w, &needle) == 1
            })
    });
    let first = found.next()?;
    // Two values a slip away: neither is read.
    found
        .all(|other| other.eq_ignore_ascii_case(&first))
        .then_some(first)
}

/// A scalar value as text (strings, numbers, booleans); `None` for anything else.
pub fn value_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Resolve aliases and allowed values, then parse the parameter's type and check bounds.
fn coerce(parameter: &Parameter, raw: &str) -> Result<Value, ParamError> {
    let mut text = raw.trim().to_owned();
    if let Some((_, canonical)) = parameter
        .aliases
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(&text))
    {
        text = canonical.clone();
    }
    if !parameter.allowed_values.is_empty() {
        let allowed = parameter
            .allowed_values
            .iter()
            .filter_map(value_text)
            .find(|v| v.eq_ignore_ascii_case(&text));
        match allowed {
            Some(canonical) => text = canonical,
            None => {
                let allowed = parameter
                    .allowed_values
                    .iter()
                    .filter_map(value_text)
                    .collect();
                return Err(ParamError::NotAllowed { allowed });
            }
        }
    }
    // Finite only: "1e400" parses to infinity, and "NaN" to itself.
    let number = |t: &str| -> Result<f64, ParamError> {
        let n = t
            .replace([',', '_'], "")
            .parse::<f64>()
            .map_err(|_| ParamError::NotANumber(t.to_owned()))?;
        if !n.is_finite() {
            return Err(ParamError::NotFinite(t.to_owned()));
        }
        Ok(n)
    };
    let value = match parameter.param_type {
        ParamType::String | ParamType::Enum => Value::String(text),
        ParamType::Integer => {
            let n = number(&text)?;
            if n.fract() != 0.0 {
                return Err(ParamError::NotWhole(text));
            }
            check_bounds(parameter, n)?;
            Value::from(n as i64)
        }
        ParamType::Number => {
            let n = number(&text)?;
            check_bounds(parameter, n)?;
            // Whole numbers stay integers, so "15" reads back as 15, not 15.0.
            if n.fract() == 0.0 && n.abs() < 9.0e15 {
                Value::from(n as i64)
            } else {
                serde_json::Number::from_f64(n)
                    .map(Value::Number)
                    .ok_or(ParamError::NotRepresentable(text))?
            }
        }
        ParamType::Boolean => match text.to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" | "1" => Value::Bool(true),
            "false" | "no" | "n" | "0" => Value::Bool(false),
            _ => return Err(ParamError::NotYesNo(text)),
        },
        ParamType::Date => {
            let today = chrono::Utc::now().date_naive();
            let date = parse_date(&text, today).ok_or(ParamError::NotADate(text))?;
            Value::String(date.format("%Y-%m-%d").to_string())
        }
    };
    Ok(value)
}

const NUMBER_WORDS: [(&str, u32); 29] = [
    ("zero", 0),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
    ("hundred", 100),
];

static NUMBER_WORD: LazyLock<Regex> = LazyLock::new(|| {
    let words: Vec<&str> = NUMBER_WORDS.iter().map(|(w, _)| *w).collect();
    Regex::new(&format!(r"(?i)\b(?:{})\b", words.join("|"))).expect("a valid pattern")
});

/// "top five earners" → "top 5 earners", so numeric patterns see digits.
fn number_words_as_digits(text: &str) -> Cow<'_, str> {
    NUMBER_WORD.replace_all(text, |captures: &regex::Captures<'_>| {
        let word = captures[0].to_ascii_lowercase();
        NUMBER_WORDS
            .iter()
            .find(|(w, _)| *w == word)
            .map_or_else(|| word.clone(), |(_, n)| n.to_string())
    })
}

static ORDINAL_SUFFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(\d{1,2})(?:st|nd|rd|th)\b").expect("the ordinal pattern is valid")
});

/// Formats tried after commas are dropped and spaces collapsed.
const DATE_FORMATS: [&str; 7] = [
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%d.%m.%Y",
    "%B %d %Y", // March 15 2024, Mar 15 2024 (%B reads abbreviations too)
    "%d %B %Y", // 15 March 2024
    "%A %B %d %Y",
    "%A %d %B %Y",
];

/// A calendar date in one of the accepted spellings: YYYY-MM-DD (also with a time after it),
/// YYYY/MM/DD, DD.MM.YYYY, "March 15, 2024", "15 March 2024", "Mar 15 2024", "15th March
/// 2024", or today / tomorrow / yesterday relative to `today`.
pub fn parse_date(text: &str, today: NaiveDate) -> Option<NaiveDate> {
    let text = text.trim();
    match text.to_ascii_lowercase().as_str() {
        "today" => return Some(today),
        "tomorrow" => return today.succ_opt(),
        "yesterday" => return today.pred_opt(),
        _ => {}
    }
    // An ISO timestamp: its date part.
    if let Some((date, _)) = text.split_once(['T', ' ']) {
        if let Ok(date) = NaiveDate::parse_from_str(date, "%Y-%m-%d") {
            return Some(date);
        }
    }
    let cleaned = ORDINAL_SUFFIX.replace_all(text, "$1").replace(',', " ");
    let cleaned = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    DATE_FORMATS
        .iter()
        .find_map(|format| NaiveDate::parse_from_str(&cleaned, format).ok())
}

fn check_bounds(parameter: &Parameter, n: f64) -> Result<(), ParamError> {
    if let Some(min) = parameter.min.filter(|&min| n < min) {
        return Err(ParamError::BelowMinimum { value: n, min });
    }
    if let Some(max) = parameter.max.filter(|&max| n > max) {
        return Err(ParamError::AboveMaximum { value: n, max });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(parameters: &str) -> Template {
        let yaml = format!("id: t\ndescription: d\nnl_examples: [x]\nparameters:\n{parameters}");
        let value: Value = serde_saphyr::from_str(&yaml).unwrap();
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn pattern_alias_and_allowed_values() {
        let t = template(
            "  - name: department\n    required: true\n    allowed_values: [Engineering, Sales]\n    aliases: {eng: Engineering}\n",
        );
        let got = extract(&t, "how many people in eng?", &Map::new());
        assert_eq!(got.parameters["department"], "Engineering");
        let got = extract(&t, "headcount of SALES please", &Map::new());
        assert_eq!(got.parameters["department"], "Sales");
    }

    #[test]
    fn a_named_value_misspelt_by_one_slip_is_read() {
        let t = template(
            "  - name: department\n    required: true\n    allowed_values: [Engineering, Sales, Marketing]\n    aliases: {eng: Engineering}\n",
        );
        let read = |q: &str| {
            extract(&t, q, &Map::new())
                .parameters
                .get("department")
                .cloned()
        };
        assert_eq!(
            read("how many work in enginering"),
            Some("Engineering".into())
        );
        assert_eq!(read("top paid in marketting"), Some("Marketing".into()));
        // Short values, and slips that change the first or last letter, are not guessed.
        assert_eq!(read("headcount of sals"), Some("Sales".into()));
        assert_eq!(read("headcount of emg"), None);
        assert_eq!(read("headcount of xngineering"), None);
    }

    #[test]
    fn missing_required_is_named_and_session_fills_it() {
        let t = template(
            "  - name: department\n    required: true\n    description: Department name\n",
        );
        let got = extract(&t, "how many people?", &Map::new());
        assert_eq!(got.missing[0].name, "department");
        let mut session = Map::new();
        session.insert("department".into(), "Sales".into());
        let got = extract(&t, "how many people?", &session);
        assert!(got.missing.is_empty());
        assert_eq!(got.parameters["department"], "Sales");
    }

    #[test]
    fn number_words_and_date_spellings() {
        let t = template(
            "  - name: limit\n    type: integer\n    extraction_patterns: ['top (\\d+)']\n  - name: day\n    type: date\n    extraction_patterns: ['on (.+)$']\n",
        );
        let got = extract(&t, "top five earners on March 15, 2024", &Map::new());
        assert_eq!(got.parameters["limit"], 5);
        assert_eq!(got.parameters["day"], "2024-03-15");
        let bad = extract(&t, "top 3 on 2023-02-29", &Map::new());
        assert_eq!(bad.invalid[0].name, "day", "{bad:?}");
    }

    #[test]
    fn numbers_are_typed_and_bounded() {
        let t = template(
            "  - name: limit\n    type: integer\n    min: 1\n    max: 100\n    default: 5\n    extraction_patterns: ['top (\\d[\\d,]*)']\n",
        );
        assert_eq!(
            extract(&t, "top 7 earners", &Map::new()).parameters["limit"],
            7
        );
        assert_eq!(
            extract(&t, "best earners", &Map::new()).parameters["limit"],
            5
        );
        let bad = extract(&t, "top 1,000 earners", &Map::new());
        assert_eq!(bad.invalid[0].name, "limit");
        assert!(
            bad.invalid[0].reason.contains("maximum"),
            "{:?}",
            bad.invalid
        );
    }
}
