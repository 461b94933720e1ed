//! The keyword stage: BM25 over each template's texts, for the words embeddings miss
//! (product names, codes, abbreviations), and the deployment's term expansion
//! ("ncd" → "no claim discount"), applied to templates and queries alike.

use std::collections::BTreeMap;

use rayon::prelude::*;
// Terms are the catalog's and documents' own words (queries only look up): a fast hash
// instead of SipHash, for the millions of lookups of a large catalog's cold start.
use rustc_hash::FxHashMap;

use crate::config::Keywords;
use crate::similarity::{normalize_into, normalize_text};
use switchyard_catalog::template::Template;

/// Expands configured terms: wherever a key occurs as whole words, its expansion is added.
#[derive(Debug, Clone, Default)]
pub struct TermExpansion {
    /// (normalised key padded with spaces, normalised expansion).
    terms: Vec<(String, String)>,
}

impl TermExpansion {
    pub fn new(dictionary: &BTreeMap<String, String>) -> TermExpansion {
        TermExpansion {
            terms: dictionary
                .iter()
                .map(|(k, v)| (format!(" {} ", normalize_text(k)), normalize_text(v)))
                .filter(|(k, v)| k.trim() != "" && !v.is_empty())
                .collect(),
        }
    }

    /// The normalised expansions that apply to `text`, space-separated ("" for none).
    pub fn additions(&self, text: &str) -> String {
        if self.terms.is_empty() {
            return String::new();
        }
        let padded = format!(" {} ", normalize_text(text));
        self.terms
            .iter()
            .filter(|(key, _)| padded.contains(key.as_str()))
            .map(|(_, expansion)| expansion.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// `text` followed by its expansions, for the encoder.
    pub fn expand(&self, text: &str) -> String {
        let additions = self.additions(text);
        if additions.is_empty() {
            text.to_owned()
        } else {
            format!("{text} ({additions})")
        }
    }
}

/// A template's id as words: `pto_request-status` → "pto request status".
pub fn id_words(id: &str) -> String {
    id.replace(['_', '-'], " ")
}

fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(' ').filter(|w| !w.is_empty())
}

/// Okapi BM25 over any documents given as token lists: the one implementation behind
/// the templates' keyword stage and the documents datasources' chunk search.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TermIndex {
    /// term → (document, term frequency) for documents containing it.
    postings: FxHashMap<String, Vec<(u32, f32)>>,
    idf: FxHashMap<String, f32>,
    /// `k1 · (1 − b + b · len / avg_len)` per document.
    length_norm: Vec<f32>,
    k1: f32,
}

impl TermIndex {
    pub fn new<T: AsRef<str>>(
        documents: impl Iterator<Item = Vec<T>>,
        k1: f32,
        b: f32,
    ) -> TermIndex {
        // Terms are numbered as first seen and each document's counted by sorting its term
        // numbers: one hash lookup a token, no string comparisons beyond it (a cold start
        // indexes millions of tokens).
        let mut numbers: FxHashMap<String, u32> = FxHashMap::default();
        let mut lists: Vec<Vec<(u32, f32)>> = Vec::new();
        let mut lengths = Vec::new();
        let mut terms: Vec<u32> = Vec::new();
        for (number, tokens) in documents.enumerate() {
            terms.clear();
            terms.extend(tokens.iter().map(|token| {
                let token = token.as_ref();
                match numbers.get(token) {
                    Some(&term) => term,
                    None => {
                        let term = lists.len() as u32;
                        numbers.insert(token.to_owned(), term);
                        lists.push(Vec::new());
                        term
                    }
                }
            }));
            terms.sort_unstable();
            lengths.push(terms.len() as f32);
            for run in terms.chunk_by(|a, b| a == b) {
                lists[run[0] as usize].push((number as u32, run.len() as f32));
            }
        }
        let postings: FxHashMap<String, Vec<(u32, f32)>> = numbers
            .into_iter()
            .map(|(term, number)| (term, std::mem::take(&mut lists[number as usize])))
            .collect();
        let documents = lengths.len() as f32;
        let average = lengths.iter().sum::<f32>() / documents.max(1.0);
        let idf = postings
            .iter()
            .map(|(term, list)| {
                let df = list.len() as f32;
                (
                    term.clone(),
                    (1.0 + (documents - df + 0.5) / (df + 0.5)).ln(),
                )
            })
            .collect();
        let length_norm = lengths
            .iter()
            .map(|len| k1 * (1.0 - b + b * len / average.max(1e-6)))
            .collect();
        TermIndex {
            postings,
            idf,
            length_norm,
            k1,
        }
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.length_norm.len()
    }

    pub fn is_empty(&self) -> bool {
        self.length_norm.is_empty()
    }

    /// Whether every posting names an indexed document (a loaded artifact's check).
    pub fn is_well_formed(&self) -> bool {
        let documents = self.length_norm.len();
        self.postings
            .values()
            .flatten()
            .all(|&(d, _)| (d as usize) < documents)
    }

    /// Raw BM25 scores of every document for the query `terms` (each counted once).
    pub fn scores<T: AsRef<str>>(&self, terms: &[T]) -> Vec<f32> {
        let mut distinct: Vec<&str> = terms.iter().map(AsRef::as_ref).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let mut scores = vec![0.0f32; self.length_norm.len()];
        for term in distinct {
            let (Some(list), Some(idf)) = (self.postings.get(term), self.idf.get(term)) else {
                continue;
            };
            for &(d, tf) in list {
                let d = d as usize;
                scores[d] += idf * tf * (self.k1 + 1.0) / (tf + self.length_norm[d]);
            }
        }
        scores
    }
}

/// Which templates' examples open with a question's opening word (its first word past
/// `skip_words`): per word, each template's share of the examples opening with it.
#[derive(Debug, Clone, Default)]
pub struct Openings {
    shares: FxHashMap<String, Vec<(u32, f32)>>,
    skip: std::collections::HashSet<String>,
    templates: usize,
}

impl Openings {
    pub fn new<'a>(
        templates: impl Iterator<Item = &'a Template>,
        settings: &crate::config::Openings,
    ) -> Openings {
        let mut openings = Openings {
            skip: settings
                .skip_words
                .iter()
                .map(|w| normalize_text(w))
                .collect(),
            ..Openings::default()
        };
        // Per word, (template, examples) in template order: templates come in order, so a
        // word's count for this template, if any, is its list's last.
        let mut counts: FxHashMap<String, Vec<(u32, f32)>> = FxHashMap::default();
        for (number, template) in templates.enumerate() {
            openings.templates = number + 1;
            for example in &template.nl_examples {
                let Some(word) = openings.opening(example) else {
                    continue;
                };
                let list = counts.entry(word).or_default();
                match list.last_mut() {
                    Some((t, count)) if *t == number as u32 => *count += 1.0,
                    _ => list.push((number as u32, 1.0)),
                }
            }
        }
        openings.shares = counts
            .into_iter()
            .map(|(word, by_template)| {
                let total: f32 = by_template.iter().map(|(_, c)| c).sum();
                let shares = by_template.into_iter().map(|(t, c)| (t, c / total));
                (word, shares.collect())
            })
            .collect();
        openings
    }

    fn opening(&self, text: &str) -> Option<String> {
        normalize_text(text)
            .split(' ')
            .find(|w| !w.is_empty() && !self.skip.contains(*w))
            .map(str::to_owned)
    }

    /// Every template's share of the examples opening with `query`'s opening word.
    pub fn scores(&self, query: &str) -> Vec<f32> {
        let mut scores = vec![0.0; self.templates];
        let shares = self.opening(query).and_then(|w| self.shares.get(&w));
        for &(t, share) in shares.into_iter().flatten() {
            scores[t as usize] = share;
        }
        scores
    }
}

/// BM25 with one document per template (examples, description, id words), over every
/// template of the catalog, numbered datasource by datasource.
#[derive(Debug, Clone)]
pub struct Bm25 {
    terms: TermIndex,
    expansion: TermExpansion,
}

impl Bm25 {
    pub fn new<'a>(templates: impl Iterator<Item = &'a Template>, settings: &Keywords) -> Bm25 {
        let expansion = TermExpansion::new(&settings.term_expansion);
        let templates: Vec<&Template> = templates.collect();
        // Each template's text on its own, in parallel where the instance has a second
        // vCPU: the router builds this at cold start (100,000 templates, 400,000 texts).
        let documents: Vec<String> = templates
            .par_iter()
            .map(|template| {
                let mut text = String::new();
                for part in template
                    .nl_examples
                    .iter()
                    .map(String::as_str)
                    .chain([template.description.as_str()])
                {
                    normalize_into(part, &mut text);
                    text.push(' ');
                    text.push_str(&expansion.additions(part));
                }
                normalize_into(&id_words(&template.id), &mut text);
                text
            })
            .collect();
        Bm25 {
            terms: TermIndex::new(
                documents
                    .iter()
                    .map(|text| tokens(text).collect::<Vec<_>>()),
                settings.k1,
                settings.b,
            ),
            expansion,
        }
    }

    pub fn expansion(&self) -> &TermExpansion {
        &self.expansion
    }

    /// Raw BM25 scores of every template for `query` (its distinct words and expansions).
    pub fn scores(&self, query: &str) -> Vec<f32> {
        let mut text = normalize_text(query);
        text.push(' ');
        text.push_str(&self.expansion.additions(query));
        let terms: Vec<&str> = tokens(&text).collect();
        self.terms.scores(&terms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(id: &str, description: &str, examples: &[&str]) -> Template {
        serde_json::from_value(
            json!({"id": id, "description": description, "nl_examples": examples}),
        )
        .unwrap()
    }

    fn settings(expansion: &[(&str, &str)]) -> Keywords {
        Keywords {
            term_expansion: expansion
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Keywords::default()
        }
    }

    #[test]
    fn rare_words_weigh_more_and_expansion_reaches_abbreviations() {
        let templates = [
            template(
                "claim_discount",
                "No claim discount on a motor policy",
                &["how much no claim discount do I have"],
            ),
            template(
                "policy_renewal",
                "Renew a motor policy",
                &["renew my policy", "when does my policy end"],
            ),
            template("weather", "Weather forecast", &["will it rain"]),
        ];
        let plain = Bm25::new(templates.iter(), &settings(&[]));
        let scores = plain.scores("ncd status");
        assert!(scores.iter().all(|&s| s == 0.0), "{scores:?}");
        let scores = plain.scores("renew my motor policy");
        assert!(scores[1] > scores[0] && scores[0] > scores[2], "{scores:?}");

        let expanded = Bm25::new(templates.iter(), &settings(&[("NCD", "no claim discount")]));
        let scores = expanded.scores("what is my ncd?");
        assert!(scores[0] > 0.0 && scores[0] > scores[1], "{scores:?}");
        assert_eq!(
            expanded.expansion().expand("my NCD please"),
            "my NCD please (no claim discount)"
        );
        assert_eq!(expanded.expansion().expand("abundance"), "abundance");
    }

    #[test]
    fn openings_score_the_share_of_examples_opening_with_the_word() {
        let templates = [
            template(
                "play",
                "",
                &["play some jazz", "Please play it", "hear a song"],
            ),
            template("rate", "", &["rate this book", "give it 5 stars"]),
            template("add", "", &["add it to my playlist", "play list additions"]),
        ];
        let settings = crate::config::Openings {
            skip_words: vec!["please".into(), "can".into(), "you".into()],
            ..Default::default()
        };
        let openings = Openings::new(templates.iter(), &settings);
        // "play" opens 2 examples of `play` and 1 of `add`.
        let scores = openings.scores("Can you play the album Wolves Within?");
        assert_eq!(scores, vec![2.0 / 3.0, 0.0, 1.0 / 3.0]);
        assert_eq!(openings.scores("rate it"), vec![0.0, 1.0, 0.0]);
        // An opening no example has, or nothing past the skip words, scores nothing.
        assert_eq!(openings.scores("look for the album"), vec![0.0; 3]);
        assert_eq!(openings.scores("please"), vec![0.0; 3]);
    }

    #[test]
    fn id_words_become_searchable() {
        let templates = [
            template("pto_request", "Ask for time off", &["book leave"]),
            template("payslip", "Show a payslip", &["my pay"]),
        ];
        let bm25 = Bm25::new(templates.iter(), &settings(&[]));
        let scores = bm25.scores("pto");
        assert!(scores[0] > 0.0 && scores[1] == 0.0);
    }
}
