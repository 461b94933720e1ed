//! Cutting a question into segments at its cues.

use crate::helpers::cues;
use switchyard_core::orchestration::*;

fn texts<'a>(question: &'a str, segments: &[Segment]) -> Vec<&'a str> {
    segments.iter().map(|s| &question[s.start..s.end]).collect()
}

#[test]
fn questions_are_cut_at_cues_and_adjacent_cues_make_one_cut() {
    let q = "Find the top 5 in Sales, and then count the Teslas in King County.";
    let cut = segments(q, &cues(), 8);
    assert_eq!(
        texts(q, &cut),
        ["Find the top 5 in Sales", "count the Teslas in King County"]
    );
    assert_eq!(cut[1].link, Some(Link::Sequential));
    assert_eq!(cut[1].cut.as_deref(), Some(", and then"));
    // A cue at the start or the end cuts nothing; "also" alone is parallel.
    let q = "And also what is 2 plus";
    assert_eq!(texts(q, &segments(q, &cues(), 8)), [q]);
    let q = "weather in Paris also play jazz";
    assert_eq!(segments(q, &cues(), 8)[1].link, Some(Link::Parallel));
}

#[test]
fn pieces_without_words_stay_with_their_list() {
    let q = "what's the mean of 4, 8, 15 and 16";
    assert_eq!(texts(q, &segments(q, &cues(), 8)), [q]);
    let q = "What is 2 plus 2 and who works in HR?";
    assert_eq!(
        texts(q, &segments(q, &cues(), 8)),
        ["What is 2 plus 2", "who works in HR"]
    );
    let q = "4, 8 and then list the people in HR";
    let cut = segments(q, &cues(), 8);
    assert_eq!(texts(q, &cut), [q]);
    assert_eq!(cut[0].link, None);
}

#[test]
fn the_and_of_between_x_and_y_is_no_cut() {
    let q =
        "how much is a limousine between dallas airport and dallas and then list flights to boston";
    assert_eq!(
        texts(q, &segments(q, &cues(), 8)),
        [
            "how much is a limousine between dallas airport and dallas",
            "list flights to boston"
        ]
    );
    // Past a few words, or in a piece of its own, "between" no longer holds the "and".
    let q = "flights between boston and denver and fares between 2 and 3 pm";
    assert_eq!(texts(q, &segments(q, &cues(), 8)).len(), 2);
    let q = "who sits between the desks of our oldest two engineers and what is 2 plus 2";
    assert_eq!(texts(q, &segments(q, &cues(), 8)).len(), 2);
}

#[test]
fn segments_are_capped() {
    let q = "aa and bb and cc and dd and ee";
    assert_eq!(
        texts(q, &segments(q, &cues(), 3)),
        ["aa", "bb", "cc and dd and ee"]
    );
}
