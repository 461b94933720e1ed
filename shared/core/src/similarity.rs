//! Stage 3: string similarity between the query and a template's texts (strsim).

use crate::config::{Aggregation, CompareField, StringAlgorithm, StringSimilarity};
use crate::template::Template;

/// Lower-case, keep letters, digits and spaces, collapse runs of spaces.
pub fn normalize_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// Similarity in [0, 1] of two normalised texts.
pub fn similarity(algorithm: StringAlgorithm, a: &str, b: &str) -> f32 {
    match algorithm {
        StringAlgorithm::JaroWinkler => strsim::jaro_winkler(a, b) as f32,
        StringAlgorithm::Levenshtein => strsim::normalized_levenshtein(a, b) as f32,
        StringAlgorithm::Ratio => indel_ratio(a, b),
    }
}

/// difflib/rapidfuzz-style ratio: 2·LCS / (|a| + |b|) over characters.
fn indel_ratio(a: &str, b: &str) -> f32 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut previous = vec![0u32; b.len() + 1];
    let mut current = vec![0u32; b.len() + 1];
    for x in &a {
        for (j, y) in b.iter().enumerate() {
            current[j + 1] = if x == y {
                previous[j] + 1
            } else {
                current[j].max(previous[j + 1])
            };
        }
        std::mem::swap(&mut previous, &mut current);
    }
    let lcs = previous[b.len()] as f32;
    2.0 * lcs / (a.len() + b.len()) as f32
}

/// The stage-3 score of one template: each compared text's similarity to the query,
/// aggregated; below `min_threshold` it counts as 0.
pub fn template_similarity(
    normalized_query: &str,
    template: &Template,
    config: &StringSimilarity,
) -> f32 {
    let mut texts: Vec<&str> = Vec::new();
    for field in &config.compare_fields {
        match field {
            CompareField::Description => texts.push(&template.description),
            CompareField::NlExamples => {
                texts.extend(template.nl_examples.iter().map(String::as_str))
            }
        }
    }
    if texts.is_empty() {
        return 0.0;
    }
    let scores = texts
        .iter()
        .map(|text| similarity(config.algorithm, normalized_query, &normalize_text(text)));
    let score = match config.aggregation {
        Aggregation::Max => scores.fold(0.0f32, f32::max),
        Aggregation::Mean => scores.sum::<f32>() / texts.len() as f32,
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
    fn algorithms_rank_close_texts_above_far_ones() {
        for algorithm in [
            StringAlgorithm::JaroWinkler,
            StringAlgorithm::Levenshtein,
            StringAlgorithm::Ratio,
        ] {
            let close = similarity(
                algorithm,
                "how many employees",
                "how many employees are there",
            );
            let far = similarity(algorithm, "how many employees", "translate hello to french");
            assert!(close > far, "{algorithm:?}: {close} <= {far}");
            assert!((0.0..=1.0).contains(&close));
            assert_eq!(similarity(algorithm, "same", "same"), 1.0);
        }
    }

    #[test]
    fn ratio_matches_difflib() {
        // difflib.SequenceMatcher(None, "abcd", "bcde").ratio() == 0.75
        assert!((indel_ratio("abcd", "bcde") - 0.75).abs() < 1e-6);
    }
}
