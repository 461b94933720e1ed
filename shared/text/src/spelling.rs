//! Misspelt words corrected against the catalog's own vocabulary, for routing only: a word
//! that neither the model's tokenizer knows whole nor the catalog uses ("balnce", "chekcing",
//! "acount") becomes the catalog's word one edit away ("balance", "checking", "account").
//! The encoder splits a misspelt word into pieces that mean nothing, and the keyword and
//! opening-word stages see a term no template has; the corrected question routes as its
//! clean form does. Parameters are still read from what the user wrote.
//!
//! Two words run together ("mybalance") that no word is near are split where both halves
//! are words.
//!
//! Never corrected: words of fewer than `min_letters` letters, words with a digit or a
//! symbol (SKU-1234, an email), capitalised words after the first (a name: Okafor), and
//! real words: the tokenizer's whole words and an English word list (`data/README.md`),
//! even when not the one meant, and their plurals. A word becomes the catalog's word one
//! edit away (an insertion, deletion, substitution or swap of neighbours); from five
//! letters, else the tokenizer's, else the catalog's or the tokenizer's two edits away
//! ("wifi" is no misspelt "wife", but "tomorow" is "tomorrow"); among equals the catalog's most
//! used word, or the tokenizer's commonest. Candidates are found by deleting letters on
//! both sides (symmetric delete).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, OnceLock};

use crate::similarity::normalize_text;

/// English words of three letters or more (SCOWL, via Debian's wamerican: `data/README.md`):
/// a real word the tokenizer splits ("vegan", "abort", "taxed") is no misspelling.
static ENGLISH_WORDS: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| include_str!("../data/english-words.txt").lines().collect());

/// Letters from which a word may be two edits from the catalog's.
const FAR_WORD: usize = 5;

/// The corrector: the words known, the catalog's words and, for a word the catalog has
/// nothing near, the tokenizer's.
#[derive(Debug, Clone, Default)]
pub struct Speller {
    /// Lower-cased words the tokenizer knows whole, and the catalog's words.
    known: HashSet<String>,
    /// The tokenizer's whole words shorter than `min_letters` ("my", "to"): what two
    /// words run together may be made of.
    short_words: HashSet<String>,
    /// The catalog's words, the most used first among equals: within one edit, and
    /// within two (indexed at the first word that needs it).
    catalog: Dictionary,
    catalog_far: OnceLock<Dictionary>,
    /// The tokenizer's whole words (in its order, the commoner first), indexed at the first
    /// word the catalog has nothing near: most questions never need them.
    tokenizer_words: Vec<String>,
    tokenizer: OnceLock<Dictionary>,
    min_letters: usize,
}

/// Words with a score (higher preferred), found by the forms left when up to `depth`
/// letters are deleted, theirs and the misspelt word's (symmetric delete): with depth 2
/// every word within two edits is found.
#[derive(Debug, Clone, Default)]
struct Dictionary {
    words: Vec<(String, u32)>,
    depth: usize,
    /// A form to the words it comes from.
    deletes: HashMap<String, Vec<u32>>,
}

impl Dictionary {
    fn new(words: Vec<(String, u32)>, depth: usize) -> Dictionary {
        let mut deletes: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, (word, _)) in words.iter().enumerate() {
            for form in deleted_forms(word, depth) {
                let entry = deletes.entry(form).or_default();
                if entry.last() != Some(&(i as u32)) {
                    entry.push(i as u32);
                }
            }
        }
        Dictionary {
            words,
            depth,
            deletes,
        }
    }

    /// The nearest word within `most` edits of `lower` with its first and last letters,
    /// then the best scored; among equals the first in order. `lower`'s forms are taken to `depth` deletes, which may
    /// be deeper than the dictionary's: a misspelling with letters added or changed is
    /// then found from a shallow index.
    fn nearest(&self, lower: &str, most: usize, depth: usize) -> Option<&str> {
        deleted_forms(lower, depth.max(self.depth))
            .iter()
            .filter_map(|form| self.deletes.get(form))
            .flatten()
            .map(|&i| {
                let (word, score) = &self.words[i as usize];
                (strsim::osa_distance(word, lower), *score, i, word)
            })
            .filter(|&(distance, .., word)| distance <= most && same_ends(word, lower))
            .min_by(|a, b| (a.0, b.1, a.2).cmp(&(b.0, a.1, b.2)))
            .map(|(.., w)| w.as_str())
    }
}

/// Whether both words open and end with the same letters: a slip of the fingers seldom
/// changes either, while a name that is one edit from a word often does ("lordi",
/// "taverna", "iheart").
fn same_ends(a: &str, b: &str) -> bool {
    a.chars().next() == b.chars().next() && a.chars().next_back() == b.chars().next_back()
}

/// `word` and every form of it with up to `depth` letters left out.
fn deleted_forms(word: &str, depth: usize) -> Vec<String> {
    let mut forms = vec![word.to_owned()];
    let mut last = vec![word.to_owned()];
    for _ in 0..depth {
        let next: Vec<String> = last.iter().flat_map(|w| one_letter_deletes(w)).collect();
        forms.extend(next.iter().cloned());
        last = next;
    }
    forms.sort();
    forms.dedup();
    forms
}

impl Speller {
    /// From the catalog's texts and the tokenizer's whole words (in its order). Without
    /// the tokenizer's words nothing is corrected: every word the catalog lacks would look
    /// misspelt.
    pub fn new<'a>(
        catalog_texts: impl Iterator<Item = &'a str>,
        tokenizer_words: &[String],
        min_letters: usize,
    ) -> Speller {
        if tokenizer_words.is_empty() {
            return Speller::default();
        }
        let mut counts: HashMap<String, u32> = HashMap::new();
        for text in catalog_texts {
            for word in normalize_text(text).split(' ') {
                if word.len() >= min_letters && word.chars().all(|c| c.is_alphabetic()) {
                    *counts.entry(word.to_owned()).or_default() += 1;
                }
            }
        }
        let mut words: Vec<(String, u32)> = counts.into_iter().collect();
        // Sorted, so ties between candidates resolve the same way on every machine.
        words.sort();
        let (tokenizer_words, short_words): (Vec<String>, Vec<String>) = tokenizer_words
            .iter()
            .map(|w| w.to_lowercase())
            .partition(|w| w.chars().count() >= min_letters);
        let known = tokenizer_words
            .iter()
            .cloned()
            .chain(words.iter().map(|(w, _)| w.clone()))
            .collect();
        Speller {
            known,
            short_words: short_words.into_iter().collect(),
            catalog: Dictionary::new(words, 1),
            catalog_far: OnceLock::new(),
            tokenizer_words,
            tokenizer: OnceLock::new(),
            min_letters,
        }
    }

    /// `query` with each misspelt word replaced by the catalog's word, or the tokenizer's
    /// (lower case); the rest as written. Borrowed when nothing changed.
    pub fn correct<'q>(&self, query: &'q str) -> Cow<'q, str> {
        if self.catalog.words.is_empty() {
            return Cow::Borrowed(query);
        }
        let mut out = String::new();
        let mut last = 0;
        let mut first_word = true;
        for (start, word) in word_spans(query) {
            let first = std::mem::replace(&mut first_word, false);
            let Some(correction) = self.correction(word, first) else {
                continue;
            };
            out.push_str(&query[last..start]);
            out.push_str(&correction);
            last = start + word.len();
        }
        if last == 0 {
            return Cow::Borrowed(query);
        }
        out.push_str(&query[last..]);
        Cow::Owned(out)
    }

    /// The word meant by `word`, when it is misspelt: the catalog's nearest, else the
    /// tokenizer's.
    fn correction(&self, word: &str, first: bool) -> Option<Cow<'_, str>> {
        if word.chars().count() < self.min_letters || !word.chars().all(|c| c.is_alphabetic()) {
            return None;
        }
        let mut letters = word.chars();
        let capital = letters.next().is_some_and(char::is_uppercase);
        // "Okafor" mid-question is a name; "SKU" or "PTO" an abbreviation.
        if (capital && !first) || letters.any(char::is_uppercase) {
            return None;
        }
        let lower = word.to_lowercase();
        let known = |w: &str| self.known.contains(w) || ENGLISH_WORDS.contains(w);
        // A known word's plural ("electrics", "steakhouses") is no misspelling either.
        // (Not "savingss": a doubled "s" is a slip.)
        let plural_of_known = ["s", "es"].iter().any(|end| {
            lower
                .strip_suffix(end)
                .is_some_and(|stem| known(stem) && !(*end == "s" && stem.ends_with('s')))
        });
        if known(&lower) || plural_of_known {
            return None;
        }
        // One edit from the catalog's words, then, for a word of five letters or more, from
        // the tokenizer's, then two edits from either (one in four is fewer letters). The
        // tokenizer's index stays one delete deep (30,000 words): two edits are found
        // where the misspelling's two deletes meet it, letters added or changed. Last, two
        // words run together.
        let letters = lower.chars().count();
        let far = letters >= FAR_WORD;
        self.catalog
            .nearest(&lower, 1, 1)
            // Not a short word: "wifi" is no misspelt "wife".
            .or_else(|| {
                far.then(|| self.tokenizer().nearest(&lower, 1, 1))
                    .flatten()
            })
            .or_else(|| {
                let index = || Dictionary::new(self.catalog.words.clone(), 2);
                far.then(|| self.catalog_far.get_or_init(index).nearest(&lower, 2, 2))
                    .flatten()
            })
            .or_else(|| {
                far.then(|| self.tokenizer().nearest(&lower, 2, 2))
                    .flatten()
            })
            .map(Cow::Borrowed)
            .or_else(|| self.split(&lower, known).map(Cow::Owned))
    }

    /// Two words run together ("mybalance"), when no word is near: split where both halves
    /// are words and one a word of `min_letters` ("wifi" is no "wi fi"), the shorter half
    /// as long as it can be.
    fn split(&self, lower: &str, known: impl Fn(&str) -> bool) -> Option<String> {
        let whole = |w: &str| w.len() >= 2 && (known(w) || self.short_words.contains(w));
        (1..lower.len())
            .filter(|&i| lower.is_char_boundary(i))
            .filter(|&i| whole(&lower[..i]) && whole(&lower[i..]))
            .filter(|&i| i.max(lower.len() - i) >= self.min_letters)
            .max_by_key(|&i| (i.min(lower.len() - i), std::cmp::Reverse(i)))
            .map(|i| format!("{} {}", &lower[..i], &lower[i..]))
    }

    fn tokenizer(&self) -> &Dictionary {
        self.tokenizer.get_or_init(|| {
            let n = self.tokenizer_words.len() as u32;
            let ranked = self.tokenizer_words.iter().enumerate();
            Dictionary::new(ranked.map(|(i, w)| (w.clone(), n - i as u32)).collect(), 1)
        })
    }
}

/// Each form of `word` with one letter left out.
fn one_letter_deletes(word: &str) -> impl Iterator<Item = String> + '_ {
    word.char_indices().map(move |(i, c)| {
        let mut form = String::with_capacity(word.len());
        form.push_str(&word[..i]);
        form.push_str(&word[i + c.len_utf8()..]);
        form
    })
}

/// The runs of letters, digits and the symbols that hold a token together (`-`, `@`,
/// `.`, `_`, `'` inside it), with their byte offsets: "SKU-1234" and "o'brien" stay whole.
fn word_spans(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let joins = |c: char| matches!(c, '-' | '@' | '.' | '_' | '\'');
    let mut spans = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        let inner = c.is_alphanumeric() || (joins(c) && start.is_some());
        match (inner, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                spans.push((s, trim_joins(&text[s..i])));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, trim_joins(&text[s..])));
    }
    spans.into_iter().filter(|(_, w)| !w.is_empty())
}

/// A span without the joining symbols it ended on ("balnce." is "balnce").
fn trim_joins(span: &str) -> &str {
    span.trim_end_matches(['-', '@', '.', '_', '\''])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn speller() -> Speller {
        let catalog = [
            "What is my checking account balance",
            "Show the balance of my savings account",
            "Transfer money between accounts",
            "Who is Grace Stewart's manager?",
            "Restaurants in Las Vegas",
            "Find a tavern nearby",
        ];
        let tokenizer: Vec<String> = [
            "what", "is", "my", "the", "of", "show", "money", "from", "form", "tomorrow",
        ]
        .map(String::from)
        .to_vec();
        Speller::new(catalog.into_iter(), &tokenizer, 4)
    }

    #[test]
    fn a_word_one_edit_from_the_catalogs_is_corrected() {
        let s = speller();
        assert_eq!(
            s.correct("balnce on my chekcing acount?"),
            "balance on my checking account?"
        );
        // Substitution and a doubled letter, the first word capitalised.
        assert_eq!(s.correct("Balamce of savingss"), "balance of savings");
    }

    #[test]
    fn a_word_the_catalog_has_nothing_near_is_corrected_to_the_tokenizers() {
        let s = speller();
        assert_eq!(s.correct("balance tommorow"), "balance tomorrow");
        assert_eq!(s.correct("balance tomorow"), "balance tomorrow");
        // Short words only against the catalog's.
        assert_eq!(s.correct("balance frmo"), "balance frmo");
    }

    #[test]
    fn two_words_run_together_are_split() {
        let s = speller();
        assert_eq!(s.correct("show mybalance"), "show my balance");
        assert_eq!(
            s.correct("checkingaccount balance"),
            "checking account balance"
        );
    }

    #[test]
    fn names_codes_known_words_and_short_words_stay_as_written() {
        let s = speller();
        for query in [
            "what is Okafor's balance",
            "balance of SKU-1234 and sku-1234",
            "money form the account",
            "acct balance",
            "what is BALNCE",
            "reset the wifi",
            // Plurals of known words.
            "show the moneys",
            // A name one edit from a word, its last letter another: no slip.
            "find taverna nearby",
            // Real words the tokenizer splits: "vegan" is no misspelt "vegas".
            "vegan balance",
            "mail grace.stewrt@example.com",
        ] {
            assert_eq!(s.correct(query), query, "{query}");
        }
    }

    #[test]
    fn nothing_is_corrected_without_the_tokenizers_words() {
        let s = Speller::new(["checking account balance"].into_iter(), &[], 4);
        assert_eq!(s.correct("balnce"), "balnce");
    }
}
