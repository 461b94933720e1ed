//! How big a stored item may grow: every item the stores keep (A2A tasks, workflow
//! checkpoints, sessions, topics, feedback records) is cut to [`MAX_ITEM_BYTES`] of JSON
//! where it is built, so DynamoDB (400 KB an item) never refuses it and the memory stores
//! keep the same. Texts are cut on a character's boundary, with [`CUT_MARKER`].

/// The most bytes of JSON one stored item holds: under DynamoDB's 400 KB (409,600 bytes)
/// with room for its key and other attributes.
pub const MAX_ITEM_BYTES: usize = 350_000;

/// What ends a text that was cut.
pub const CUT_MARKER: &str = " [cut]";

/// `text` cut to at most `bytes` (on a character's boundary) followed by [`CUT_MARKER`],
/// when longer: whether it was cut. A text already cut to `bytes` is left as it is (a
/// stored item built again is cut once).
pub fn cut(text: &mut String, bytes: usize) -> bool {
    if text.len() <= bytes {
        return false;
    }
    if let Some(stem) = text.strip_suffix(CUT_MARKER) {
        if stem.len() <= bytes {
            return false;
        }
        let stem = stem.len();
        text.truncate(stem);
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(CUT_MARKER);
    true
}

/// The length of `value`'s JSON (`usize::MAX` if it does not serialise).
pub fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_never_splits_a_character() {
        let mut text = "é漢🚀".repeat(3);
        for bytes in 0..text.len() {
            let mut cut_text = text.clone();
            assert!(cut(&mut cut_text, bytes));
            let kept = cut_text.strip_suffix(CUT_MARKER).unwrap();
            assert!(kept.len() <= bytes && text.starts_with(kept), "{bytes}");
        }
        let mut once = text.clone();
        assert!(cut(&mut once, 10));
        let twice = once.clone();
        assert!(!cut(&mut once, 10), "cut once");
        assert_eq!(once, twice);
        assert!(cut(&mut once, 5), "shorter");
        assert_eq!(once.matches(CUT_MARKER).count(), 1, "{once}");
        assert!(!cut(&mut text, 27), "short enough");
        assert_eq!(text, "é漢🚀".repeat(3));
    }
}
