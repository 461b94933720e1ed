//! Documents into chunks (headings first, then windows of words with overlap), extractive
//! summaries, and the words BM25 counts (stemmed, without stop words).

use serde::{Deserialize, Serialize};

use super::corpus::Document;
use switchyard_text::similarity::normalize_text;

/// One searchable piece of a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Position of its document in the chunk artifact.
    pub document: u32,
    /// The Markdown heading the chunk sits under, if any.
    pub heading: Option<String>,
    pub text: String,
}

impl Chunk {
    /// What the content vector is made from: the title and heading give the chunk its
    /// subject, which a window in the middle of a section may not name.
    pub fn embedding_text(&self, title: &str) -> String {
        match &self.heading {
            Some(heading) if heading != title => format!("{title}. {heading}. {}", self.text),
            _ => format!("{title}. {}", self.text),
        }
    }
}

/// Cut `document` (number `position`) into chunks of at most `words` words, neighbours
/// sharing `overlap` words; Markdown headings start a new chunk.
pub fn chunk_document(
    document: &Document,
    position: u32,
    words: usize,
    overlap: usize,
) -> Vec<Chunk> {
    let step = words.saturating_sub(overlap).max(1);
    let mut chunks = Vec::new();
    for (heading, body) in sections(&document.text) {
        let tokens: Vec<&str> = body.split_whitespace().collect();
        let mut start = 0;
        while start < tokens.len() {
            let end = (start + words).min(tokens.len());
            chunks.push(Chunk {
                document: position,
                heading: heading.clone(),
                text: tokens[start..end].join(" "),
            });
            if end == tokens.len() {
                break;
            }
            start += step;
        }
    }
    if chunks.is_empty() {
        // A document with a title only is still findable by it.
        chunks.push(Chunk {
            document: position,
            heading: None,
            text: document.title.clone(),
        });
    }
    chunks
}

/// (heading, body text) per Markdown section; text before the first heading has none.
fn sections(text: &str) -> Vec<(Option<String>, String)> {
    let mut out: Vec<(Option<String>, String)> = vec![(None, String::new())];
    for line in text.lines() {
        let trimmed = line.trim_start();
        let level = trimmed.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&level) && trimmed[level..].starts_with(' ') {
            out.push((Some(trimmed[level..].trim().to_owned()), String::new()));
        } else {
            let body = &mut out.last_mut().expect("never empty").1;
            body.push_str(line);
            body.push('\n');
        }
    }
    out.retain(|(_, body)| !body.trim().is_empty());
    out
}

/// The summary a document is matched by: its own, else its title and first `sentences`
/// sentences.
pub fn summary_of(document: &Document, sentences: usize) -> String {
    if let Some(summary) = document.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        return summary.to_owned();
    }
    let body: String = document
        .text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    let mut taken = String::new();
    let mut count = 0;
    for piece in body.split_inclusive(['.', '?', '!']) {
        if count == sentences {
            break;
        }
        taken.push_str(piece);
        if piece.ends_with(['.', '?', '!']) {
            count += 1;
        }
    }
    format!("{}. {}", document.title, taken.trim())
}

/// Words too common to tell documents apart.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between",
    "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during",
    "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her",
    "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into",
    "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor",
    "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours",
    "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such",
    "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up",
    "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom",
    "why", "will", "with", "would", "you", "your", "yours", "yourself",
];

/// The words BM25 counts: normalised, stop words dropped, Snowball-stemmed.
pub fn terms(text: &str) -> Vec<String> {
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    normalize_text(text)
        .split(' ')
        .filter(|w| !w.is_empty() && STOP_WORDS.binary_search(w).is_err())
        .map(|w| stemmer.stem(w).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document {
        Document {
            id: "d".into(),
            title: "Title".into(),
            text: text.into(),
            summary: None,
            questions: vec![],
            metadata: Default::default(),
        }
    }

    #[test]
    fn stop_words_are_sorted_for_the_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn headings_start_chunks_and_long_sections_overlap() {
        let words: Vec<String> = (0..25).map(|i| format!("w{i}")).collect();
        let text = format!("intro text\n# First\n{}\n## Second\nshort", words.join(" "));
        let chunks = chunk_document(&doc(&text), 3, 10, 4);
        let headings: Vec<Option<&str>> = chunks.iter().map(|c| c.heading.as_deref()).collect();
        assert_eq!(
            headings,
            [
                None,
                Some("First"),
                Some("First"),
                Some("First"),
                Some("First"),
                Some("Second")
            ]
        );
        assert_eq!(chunks[1].text.split(' ').next(), Some("w0"));
        assert_eq!(
            chunks[2].text.split(' ').next(),
            Some("w6"),
            "10 words, 4 shared"
        );
        assert_eq!(chunks[4].text.split(' ').next_back(), Some("w24"));
        assert!(chunks.iter().all(|c| c.document == 3));
        assert_eq!(chunk_document(&doc(""), 0, 10, 2)[0].text, "Title");
    }

    #[test]
    fn summaries_are_the_front_matter_or_title_and_first_sentences() {
        let d = doc("# H\nOne sentence. Two sentences! Three.");
        assert_eq!(summary_of(&d, 2), "Title. One sentence. Two sentences!");
        let d = Document {
            summary: Some("Given.".into()),
            ..d
        };
        assert_eq!(summary_of(&d, 2), "Given.");
    }

    #[test]
    fn terms_are_stemmed_without_stop_words() {
        assert_eq!(terms("The Excesses of travelling"), ["excess", "travel"]);
    }
}
