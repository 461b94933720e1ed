//! Stage 2: string similarity between the query and a template's texts (strsim).

use crate::config::{Aggregation, CompareField, StringAlgorithm, StringSimilarity};
use switchyard_catalog::template::{Catalog, Template};

/// Lower-case, keep letters, digits and spaces, collapse runs of spaces.
pub fn normalize_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    normalize_into(text, &mut out);
    out
}

/// [`normalize_text`] appended to `out` (a space first when `out` is not empty and the
/// text has words).
pub fn normalize_into(text: &str, out: &mut String) {
    // An ASCII text, nearly every one of a catalog, is read byte by byte, skipping UTF-8
    // decoding: the router normalises every template's texts at cold start.
    if text.is_ascii() {
        append_words(text.bytes().map(char::from), out);
    } else {
        append_words(text.chars(), out);
    }
}

fn append_words(chars: impl Iterator<Item = char>, out: &mut String) {
    // Whether a separator is owed before the next alphanumeric character.
    let mut gap = !out.is_empty();
    for c in chars {
        if !c.is_alphanumeric() {
            gap = !out.is_empty();
            continue;
        }
        if gap {
            out.push(' ');
            gap = false;
        }
        // ASCII skips the Unicode case tables.
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            out.extend(c.to_lowercase());
        }
    }
}

/// A template's texts, normalised once when the router starts.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateTexts {
    pub description: String,
    pub nl_examples: Vec<String>,
}

impl TemplateTexts {
    pub fn of(template: &Template) -> TemplateTexts {
        TemplateTexts {
            description: normalize_text(&template.description),
            nl_examples: template
                .nl_examples
                .iter()
                .map(|e| normalize_text(e))
                .collect(),
        }
    }

    /// Every template's texts, `[datasource][template]`.
    pub fn of_catalog(catalog: &Catalog) -> Vec<Vec<TemplateTexts>> {
        catalog
            .datasources
            .iter()
            .map(|d| d.templates.iter().map(TemplateTexts::of).collect())
            .collect()
    }
}

/// The query, normalised once per request, with its bit-parallel LCS masks.
pub struct PreparedQuery {
    text: String,
    lcs: LcsPattern,
}

impl PreparedQuery {
    pub fn new(query: &str) -> PreparedQuery {
        let text = normalize_text(query);
        let lcs = LcsPattern::new(&text);
        PreparedQuery { text, lcs }
    }

    /// Similarity in [0, 1] between this query and a normalised text.
    pub fn similarity(&self, algorithm: StringAlgorithm, text: &str) -> f32 {
        match algorithm {
            StringAlgorithm::JaroWinkler => strsim::jaro_winkler(&self.text, text) as f32,
            StringAlgorithm::Levenshtein => strsim::normalized_levenshtein(&self.text, text) as f32,
            StringAlgorithm::Ratio => self.lcs.ratio(text),
        }
    }
}

/// Bit-parallel longest common subsequence (Hyyrö 2004) against a fixed pattern: one pass
/// over the other text, `ceil(len / 64)` word operations a character.
struct LcsPattern {
    chars: usize,
    words: usize,
    /// Position masks of ASCII characters, `words` u64s each.
    ascii: Vec<u64>,
    /// Masks of other characters.
    other: std::collections::HashMap<char, Vec<u64>>,
    none: Vec<u64>,
}

impl LcsPattern {
    fn new(pattern: &str) -> LcsPattern {
        let chars: Vec<char> = pattern.chars().collect();
        let words = chars.len().div_ceil(64).max(1);
        let mut ascii = vec![0u64; 128 * words];
        let mut other: std::collections::HashMap<char, Vec<u64>> = Default::default();
        for (i, &c) in chars.iter().enumerate() {
            let (word, bit) = (i / 64, 1u64 << (i % 64));
            if c.is_ascii() {
                ascii[c as usize * words + word] |= bit;
            } else {
                other.entry(c).or_insert_with(|| vec![0; words])[word] |= bit;
            }
        }
        LcsPattern {
            chars: chars.len(),
            words,
            ascii,
            other,
            none: vec![0; words],
        }
    }

    fn masks(&self, c: char) -> &[u64] {
        if c.is_ascii() {
            &self.ascii[c as usize * self.words..(c as usize + 1) * self.words]
        } else {
            self.other.get(&c).map_or(&self.none, Vec::as_slice)
        }
    }

    fn lcs(&self, text: &str) -> usize {
        let mut v = vec![u64::MAX; self.words];
        for c in text.chars() {
            let masks = self.masks(c);
            let mut carry = 0u64;
            for (v, &m) in v.iter_mut().zip(masks) {
                let u = *v & m;
                let (sum, c1) = v.overflowing_add(u);
                let (sum, c2) = sum.overflowing_add(carry);
                carry = u64::from(c1 || c2);
                *v = sum | (*v - u);
            }
        }
        // Zero bits among the pattern's positions count the LCS.
        let mut zeros = 0;
        for (w, word) in v.iter().enumerate() {
            let bits = (self.chars - w * 64).min(64);
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            zeros += (!word & mask).count_ones() as usize;
        }
        zeros
    }

    /// rapidfuzz-style ratio: 2·LCS / (|pattern| + |text|).
    fn ratio(&self, text: &str) -> f32 {
        let text_chars = text.chars().count();
        if self.chars + text_chars == 0 {
            return 1.0;
        }
        2.0 * self.lcs(text) as f32 / (self.chars + text_chars) as f32
    }
}

/// The stage-3 score of one template: each compared text's similarity to the query,
/// aggregated; below `min_threshold` it counts as 0.
pub fn template_similarity(
    query: &PreparedQuery,
    texts: &TemplateTexts,
    config: &StringSimilarity,
) -> f32 {
    let mut count = 0usize;
    let mut best = 0.0f32;
    let mut sum = 0.0f32;
    for field in &config.compare_fields {
        let field_texts: &[String] = match field {
            CompareField::Description => std::slice::from_ref(&texts.description),
            CompareField::NlExamples => &texts.nl_examples,
        };
        for text in field_texts {
            let score = query.similarity(config.algorithm, text);
            best = best.max(score);
            sum += score;
            count += 1;
        }
    }
    if count == 0 {
        return 0.0;
    }
    let score = match config.aggregation {
        Aggregation::Max => best,
        Aggregation::Mean => sum / count as f32,
    };
    if score < config.min_threshold {
        0.0
    } else {
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_drops_punctuation_and_case() {
        assert_eq!(
            normalize_text("  What's 15%   of 200? "),
            "what s 15 of 200"
        );
    }

    #[test]
    fn normalization_of_ascii_and_unicode_is_the_unicode_rules() {
        // The Unicode rules the ASCII path must agree with.
        let by_words = |text: &str| -> String {
            text.split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(|w| w.chars().flat_map(char::to_lowercase).collect::<String>())
                .collect::<Vec<_>>()
                .join(" ")
        };
        for text in [
            "",
            "  ...  ",
            "Café DÉJÀ-vu, naïve İstanbul ΣΟΦΙΑ",
            "MiXeD_case—em dash\ttab\nnewline ½ ² x²",
            "order #A-1234/B: ¿qué? 東京 ok",
            "  What's 15%   of 200? ",
            "PTO_request-status (v2) ",
        ] {
            assert_eq!(normalize_text(text), by_words(text), "{text:?}");
        }
    }

    #[test]
    fn algorithms_rank_close_texts_above_far_ones() {
        for algorithm in [
            StringAlgorithm::JaroWinkler,
            StringAlgorithm::Levenshtein,
            StringAlgorithm::Ratio,
        ] {
            let query = PreparedQuery::new("how many employees");
            let close = query.similarity(algorithm, "how many employees are there");
            let far = query.similarity(algorithm, "translate hello to french");
            assert!(close > far, "{algorithm:?}: {close} <= {far}");
            assert!((0.0..=1.0).contains(&close));
            assert_eq!(query.similarity(algorithm, "how many employees"), 1.0);
        }
    }

    /// The textbook dynamic programme, to check the bit-parallel one against.
    fn lcs_by_table(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        let mut table = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in 0..a.len() {
            for j in 0..b.len() {
                table[i + 1][j + 1] = if a[i] == b[j] {
                    table[i][j] + 1
                } else {
                    table[i][j + 1].max(table[i + 1][j])
                };
            }
        }
        table[a.len()][b.len()]
    }

    #[test]
    fn bit_parallel_lcs_matches_the_table_across_word_boundaries() {
        let texts = [
            "",
            "abcd",
            "bcde",
            "how many employees work in engineering",
            "café déjà vu naïve",
            &"the quick brown fox jumps over the lazy dog ".repeat(4),
        ];
        for a in texts {
            let pattern = LcsPattern::new(a);
            for b in texts {
                assert_eq!(pattern.lcs(b), lcs_by_table(a, b), "{a:?} / {b:?}");
            }
        }
        // rapidfuzz ratio("abcd", "bcde") == 0.75
        assert!((LcsPattern::new("abcd").ratio("bcde") - 0.75).abs() < 1e-6);
    }
}
