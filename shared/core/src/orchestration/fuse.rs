//! One answer from a split question's task results. Strategies:
//! - `simple`: the answers in the order asked;
//! - `score`: the surest answers first;
//! - `hierarchical`: one numbered section per sub-question;
//! - `temporal`: ordered by the earliest date each answer mentions, undated last;
//! - `semantic`: near-duplicate rows and sentences merged (parts asking the same thing).
//!
//! `auto` picks `semantic` when every task has the same template, `temporal` when the
//! question asks about time and at least two answers carry dates, else `hierarchical`.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;
use serde_json::{json, Value};

use super::workflow::{TaskState, TaskStatus};
pub use crate::config::FusionStrategy;

/// Words that make a question about time (for `auto`).
const TIME_WORDS: &[&str] = &[
    "when",
    "timeline",
    "chronological",
    "chronologically",
    "earliest",
    "latest",
    "before",
    "after",
    "first",
    "last",
    "date",
    "dates",
];

/// One sub-question's part of the answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    pub task: String,
    pub question: String,
    pub status: TaskStatus,
    pub content: String,
    pub confidence: f32,
    /// The earliest date the answer mentions (`temporal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fused {
    pub strategy: FusionStrategy,
    /// The strategy came from `auto` rather than the request or configuration.
    pub automatic: bool,
    pub content: String,
    pub sections: Vec<Section>,
    /// Share of sub-questions answered.
    pub coverage: f32,
    /// Share of parameters named by several answered tasks that have one value across
    /// them (1 when none is shared).
    pub consistency: f32,
    /// `semantic`: rows and sentences merged into an earlier one.
    pub merged_duplicates: usize,
    /// `semantic`: the answers' rows, near-duplicates merged.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub data: Value,
}

/// The strategy `auto` stands for on this question and these results.
pub fn automatic_strategy(question: &str, tasks: &[TaskState]) -> FusionStrategy {
    let templates: HashSet<(&str, &str)> = tasks
        .iter()
        .map(|t| (t.task.datasource.as_str(), t.task.template_id.as_str()))
        .collect();
    if tasks.len() > 1 && templates.len() == 1 {
        return FusionStrategy::Semantic;
    }
    let lower = question.to_lowercase();
    let about_time = lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| TIME_WORDS.contains(&w));
    let dated = tasks.iter().filter(|t| earliest_date(t).is_some()).count();
    if about_time && dated >= 2 {
        FusionStrategy::Temporal
    } else {
        FusionStrategy::Hierarchical
    }
}

pub fn fuse(
    requested: FusionStrategy,
    question: &str,
    tasks: &[TaskState],
    duplicate_similarity: f32,
) -> Fused {
    let automatic = requested == FusionStrategy::Auto;
    let strategy = if automatic {
        automatic_strategy(question, tasks)
    } else {
        requested
    };
    let mut sections: Vec<Section> = tasks.iter().map(section).collect();
    let answered = tasks.iter().filter(|t| t.status == TaskStatus::Ok).count();
    let mut fused = Fused {
        strategy,
        automatic,
        content: String::new(),
        sections: Vec::new(),
        coverage: if tasks.is_empty() {
            0.0
        } else {
            answered as f32 / tasks.len() as f32
        },
        consistency: consistency(tasks),
        merged_duplicates: 0,
        data: Value::Null,
    };
    match strategy {
        FusionStrategy::Auto | FusionStrategy::Simple => {
            fused.content = join(&sections, " ");
        }
        FusionStrategy::Score => {
            sections.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
            fused.content = join(&sections, " ");
        }
        FusionStrategy::Hierarchical => {
            fused.content = sections
                .iter()
                .enumerate()
                .map(|(i, s)| format!("{}. {}: {}", i + 1, s.question, s.content))
                .collect::<Vec<_>>()
                .join("\n");
        }
        FusionStrategy::Temporal => {
            // Stable: undated answers keep their order, after the dated ones.
            sections.sort_by(|a, b| match (&a.date, &b.date) {
                (Some(x), Some(y)) => x.cmp(y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            });
            fused.content = sections
                .iter()
                .map(|s| match &s.date {
                    Some(date) => format!("{date}: {}", s.content),
                    None => s.content.clone(),
                })
                .collect::<Vec<_>>()
                .join("\n");
        }
        FusionStrategy::Semantic => {
            let (content, sentences_merged) = unique_sentences(&sections, duplicate_similarity);
            let (rows, rows_merged) = unique_rows(tasks, duplicate_similarity);
            fused.content = content;
            fused.merged_duplicates = sentences_merged + rows_merged;
            fused.data = json!({ "rows": rows });
        }
    }
    fused.sections = sections;
    fused
}

fn section(state: &TaskState) -> Section {
    let content = match (&state.status, &state.response) {
        (TaskStatus::Pending, _) => "not run yet.".to_owned(),
        (TaskStatus::Failed, response) => format!(
            "not answered: {}",
            state
                .error
                .clone()
                .or_else(|| response.as_ref().and_then(|r| r.error().map(str::to_owned)))
                .unwrap_or_else(|| "the adapter failed".into())
        ),
        (_, Some(response)) => response.content.clone(),
        (_, None) => String::new(),
    };
    Section {
        task: state.task.id.clone(),
        question: state.task.question.clone(),
        status: state.status,
        content,
        confidence: state.task.confidence,
        date: earliest_date(state),
    }
}

fn join(sections: &[Section], separator: &str) -> String {
    sections
        .iter()
        .map(|s| s.content.as_str())
        .collect::<Vec<_>>()
        .join(separator)
}

/// The earliest ISO date (`YYYY-MM-DD`, or `YYYY-MM`) in an answer's text or data.
fn earliest_date(state: &TaskState) -> Option<String> {
    let response = state.response.as_ref()?;
    let text = format!("{} {}", response.content, response.data);
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        range.end <= bytes.len() && bytes[range].iter().all(u8::is_ascii_digit)
    };
    let mut dates: Vec<String> = Vec::new();
    for i in 0..bytes.len() {
        let starts_word = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if starts_word
            && digits(i..i + 4)
            && bytes.get(i + 4) == Some(&b'-')
            && digits(i + 5..i + 7)
        {
            let day = bytes.get(i + 7) == Some(&b'-') && digits(i + 8..i + 10);
            let end = if day { i + 10 } else { i + 7 };
            dates.push(text[i..end].to_owned());
        }
    }
    dates.into_iter().min()
}

fn consistency(tasks: &[TaskState]) -> f32 {
    let mut values: BTreeMap<&str, HashSet<String>> = BTreeMap::new();
    let mut named: BTreeMap<&str, usize> = BTreeMap::new();
    for state in tasks.iter().filter(|t| t.status == TaskStatus::Ok) {
        let Some(response) = &state.response else {
            continue;
        };
        for (name, value) in &response.parameters {
            *named.entry(name).or_default() += 1;
            values
                .entry(name)
                .or_default()
                .insert(value.to_string().to_lowercase());
        }
    }
    let shared: Vec<&str> = named
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(name, _)| *name)
        .collect();
    if shared.is_empty() {
        return 1.0;
    }
    let agreeing = shared.iter().filter(|n| values[**n].len() == 1).count();
    agreeing as f32 / shared.len() as f32
}

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Jaccard overlap of two word sets.
fn overlap(a: &HashSet<String>, b: &HashSet<String>) -> f32 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f32 / union as f32
}

/// The sections' sentences, each near-duplicate of an earlier one left out.
fn unique_sentences(sections: &[Section], similarity: f32) -> (String, usize) {
    let mut kept: Vec<(String, HashSet<String>)> = Vec::new();
    let mut merged = 0;
    for section in sections {
        for sentence in section
            .content
            .split_inclusive(['.', '!', '?', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let seen = words(sentence);
            if kept.iter().any(|(_, k)| overlap(k, &seen) >= similarity) {
                merged += 1;
            } else {
                kept.push((sentence.to_owned(), seen));
            }
        }
    }
    let text = kept
        .into_iter()
        .map(|(s, _)| s)
        .collect::<Vec<_>>()
        .join(" ");
    (text, merged)
}

/// Every answered task's `data.rows`, each near-duplicate of an earlier row left out.
fn unique_rows(tasks: &[TaskState], similarity: f32) -> (Vec<Value>, usize) {
    let mut kept: Vec<(Value, HashSet<String>)> = Vec::new();
    let mut merged = 0;
    let rows = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Ok)
        .filter_map(|t| t.response.as_ref())
        .filter_map(|r| r.data.get("rows").and_then(Value::as_array))
        .flatten();
    for row in rows {
        let seen = words(&row.to_string());
        if kept.iter().any(|(_, k)| overlap(k, &seen) >= similarity) {
            merged += 1;
        } else {
            kept.push((row.clone(), seen));
        }
    }
    (kept.into_iter().map(|(row, _)| row).collect(), merged)
}
