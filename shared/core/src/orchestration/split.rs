//! Where a question may be cut: its conjunctions, sequence words and list punctuation.
//! The pieces between cuts are segments; a sub-question is a run of adjacent segments.

use serde::Serialize;

/// How a part follows the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    /// "and", "also", a comma: independent of the part before.
    Parallel,
    /// "then", "after that", "finally": runs after the part before.
    Sequential,
}

/// A word of the question, with where it sits in the original text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    /// Lowercase, without surrounding punctuation (commas and semicolons are tokens).
    pub word: String,
    pub start: usize,
    pub end: usize,
}

pub(crate) fn tokens(question: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut push = |text: &str, start: usize| {
        let trimmed_start = text.len() - text.trim_start_matches(is_edge_punctuation).len();
        let core = text.trim_matches(is_edge_punctuation);
        if !core.is_empty() {
            tokens.push(Token {
                word: core.to_lowercase(),
                start: start + trimmed_start,
                end: start + trimmed_start + core.len(),
            });
        }
    };
    let mut word_start = None;
    for (i, c) in question.char_indices() {
        let separator = c.is_whitespace() || c == ',' || c == ';';
        if separator {
            if let Some(s) = word_start.take() {
                push(&question[s..i], s);
            }
            if c != ' ' && !c.is_whitespace() {
                push(&question[i..i + c.len_utf8()], i);
            }
        } else if word_start.is_none() {
            word_start = Some(i);
        }
    }
    if let Some(s) = word_start {
        push(&question[s..], s);
    }
    tokens
}

fn is_edge_punctuation(c: char) -> bool {
    matches!(c, '.' | '?' | '!' | '"' | '(' | ')' | ':' | '\'')
}

/// A piece of the question between two cuts.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Byte range in the question.
    pub start: usize,
    pub end: usize,
    /// The cut before this segment (none for the first).
    pub link: Option<Link>,
    /// The words of the cut before it ("and then", ",").
    pub cut: Option<String>,
}

/// The cue phrases, lowercase, split into words.
#[derive(Debug, Clone)]
pub struct Cues {
    parallel: Vec<Vec<String>>,
    sequential: Vec<Vec<String>>,
}

impl Cues {
    pub fn new(parallel: &[String], sequential: &[String]) -> Cues {
        let words = |phrases: &[String]| {
            let mut phrases: Vec<Vec<String>> = phrases
                .iter()
                .map(|p| p.split_whitespace().map(str::to_lowercase).collect())
                .filter(|p: &Vec<String>| !p.is_empty())
                .collect();
            // Longest first: "and then" before "and".
            phrases.sort_by_key(|p| std::cmp::Reverse(p.len()));
            phrases
        };
        Cues {
            parallel: words(parallel),
            sequential: words(sequential),
        }
    }

    /// The cue starting at token `at`: its length in tokens and kind.
    fn at(&self, tokens: &[Token], at: usize) -> Option<(usize, Link)> {
        let matches = |phrase: &Vec<String>| {
            tokens.len() >= at + phrase.len()
                && phrase.iter().zip(&tokens[at..]).all(|(p, t)| *p == t.word)
        };
        let sequential = self.sequential.iter().find(|p| matches(p)).map(Vec::len);
        let parallel = self.parallel.iter().find(|p| matches(p)).map(Vec::len);
        match (sequential, parallel) {
            (Some(s), Some(p)) if p > s => Some((p, Link::Parallel)),
            (Some(s), _) => Some((s, Link::Sequential)),
            (None, Some(p)) => Some((p, Link::Parallel)),
            (None, None) => None,
        }
    }

    /// The cue phrases found in `question`, in order (signals count them).
    pub fn found(&self, question: &str) -> Vec<(String, Link)> {
        let tokens = tokens(question);
        let mut found = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            match self.at(&tokens, i) {
                Some((len, link)) => {
                    let phrase: Vec<&str> =
                        tokens[i..i + len].iter().map(|t| t.word.as_str()).collect();
                    found.push((phrase.join(" "), link));
                    i += len;
                }
                None => i += 1,
            }
        }
        found
    }
}

/// Cut `question` at its cues. Adjacent cues make one cut (", and then", sequential
/// when any of its cues is); a cue at the very start or end cuts nothing. At most
/// `max_segments` segments: later cues stay inside the last one.
pub fn segments(question: &str, cues: &Cues, max_segments: usize) -> Vec<Segment> {
    let tokens = tokens(question);
    if tokens.is_empty() {
        return Vec::new();
    }
    // Cuts as (first token, end token, link, words).
    let mut cuts: Vec<(usize, usize, Link, Vec<String>)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let Some((len, link)) = cues.at(&tokens, i).filter(|&(len, _)| {
            len > 1 || !closes_between(&tokens, cuts.last().map_or(0, |c| c.1), i)
        }) else {
            i += 1;
            continue;
        };
        let words = tokens[i..i + len].iter().map(|t| t.word.clone());
        match cuts.last_mut() {
            Some(last) if last.1 == i => {
                last.1 = i + len;
                last.3.extend(words);
                if link == Link::Sequential {
                    last.2 = Link::Sequential;
                }
            }
            _ => cuts.push((i, i + len, link, words.collect())),
        }
        i += len;
    }
    cuts.retain(|(first, end, _, _)| *first > 0 && *end < tokens.len());
    cuts.truncate(max_segments.max(1) - 1);
    let mut segments = Vec::with_capacity(cuts.len() + 1);
    let mut first = 0;
    let mut before: Option<(Link, String)> = None;
    for (cut_first, cut_end, link, words) in cuts {
        segments.push(Segment {
            start: tokens[first].start,
            end: tokens[cut_first - 1].end,
            link: before.as_ref().map(|b| b.0),
            cut: before.take().map(|b| b.1),
        });
        before = Some((link, words.join(" ")));
        first = cut_end;
    }
    segments.push(Segment {
        start: tokens[first].start,
        end: tokens[tokens.len() - 1].end,
        link: before.as_ref().map(|b| b.0),
        cut: before.map(|b| b.1),
    });
    merge_wordless(segments, &tokens)
}

/// Whether the token at `at` (a cue of one word) is the "and" of "between X and Y" ("between dallas fort worth
/// airport and dallas"): one request naming two ends, not two requests. `from` is where
/// the current piece starts.
fn closes_between(tokens: &[Token], from: usize, at: usize) -> bool {
    const WITHIN: usize = 6;
    tokens[at].word == "and"
        && tokens[from.max(at.saturating_sub(WITHIN))..at]
            .iter()
            .rev()
            .map(|t| t.word.as_str())
            .find(|w| *w == "between" || *w == "and")
            == Some("between")
}

/// A piece without a word ("8", "15 and 16" in "the mean of 4, 8, 15 and 16") is part of a
/// list, not a request: it joins the piece before it (or after it, when first).
fn merge_wordless(segments: Vec<Segment>, tokens: &[Token]) -> Vec<Segment> {
    let wordy = |segment: &Segment| {
        tokens
            .iter()
            .filter(|t| t.start >= segment.start && t.end <= segment.end)
            .any(|t| t.word.chars().filter(|c| c.is_alphabetic()).count() >= 2)
    };
    let mut merged: Vec<Segment> = Vec::with_capacity(segments.len());
    let mut pending_start: Option<usize> = None;
    for mut segment in segments {
        if !wordy(&segment) {
            match merged.last_mut() {
                Some(previous) => previous.end = segment.end,
                None => pending_start = pending_start.or(Some(segment.start)),
            }
            continue;
        }
        if let Some(start) = pending_start.take() {
            segment.start = start;
            segment.link = None;
            segment.cut = None;
        }
        merged.push(segment);
    }
    merged
}
