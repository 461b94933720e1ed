//! Noisy copies of a data set's questions, as people type them: `eval --noise typos`
//! measures routing on them beside the clean figures. Seeded: the same seed gives the same
//! copy on every machine.
//!
//! - `typos`: about one word in four of four letters or more gets one keyboard slip (a
//!   neighbouring key, a dropped, doubled or swapped letter), a second one time in two;
//!   the first and last letters are kept. About 1.5 slips a CLINC150 question.
//! - `spaces`: about one space in six is left out ("check mybalance"), a kind of noise the
//!   spelling correction was not built for: it measures how far the gain carries.

use serde::Serialize;

use crate::LabeledQuery;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Noise {
    Typos,
    Spaces,
}

/// What the noise changed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NoiseStats {
    pub questions: usize,
    /// Questions with at least one change.
    pub changed: usize,
    /// Edits in all (a slip, a space left out).
    pub edits: usize,
}

/// A space is left out one time in six.
const SPACE_ONE_IN: u64 = 6;

/// The questions with `noise` added (labels kept), and what changed.
pub fn add_noise(
    queries: &[LabeledQuery],
    noise: Noise,
    seed: u64,
) -> (Vec<LabeledQuery>, NoiseStats) {
    let mut stats = NoiseStats {
        questions: queries.len(),
        ..NoiseStats::default()
    };
    let noisy = queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let mut rng = Rng::new(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let (text, edits) = match noise {
                Noise::Typos => typos(&q.text, &mut rng),
                Noise::Spaces => spaces(&q.text, &mut rng),
            };
            stats.edits += edits;
            stats.changed += usize::from(edits > 0);
            LabeledQuery { text, ..q.clone() }
        })
        .collect();
    (noisy, stats)
}

fn typos(text: &str, rng: &mut Rng) -> (String, usize) {
    let mut edits = 0;
    let words: Vec<String> = text
        .split(' ')
        .map(|word| {
            let letters: Vec<char> = word.chars().collect();
            if letters.len() < 4 || !letters.iter().all(|c| c.is_ascii_alphabetic()) {
                return word.to_owned();
            }
            if rng.below(4) != 0 {
                return word.to_owned();
            }
            let slips = if rng.below(2) == 0 { 2 } else { 1 };
            let mut letters = letters;
            for _ in 0..slips {
                slip(&mut letters, rng);
                edits += 1;
            }
            letters.into_iter().collect()
        })
        .collect();
    (words.join(" "), edits)
}

/// One keyboard slip inside the word (never its first or last letter).
fn slip(letters: &mut Vec<char>, rng: &mut Rng) {
    let last = letters.len() - 1;
    let at = 1 + rng.below(last as u64 - 1) as usize;
    match rng.below(4) {
        1 if letters.len() > 4 => {
            letters.remove(at);
        }
        2 => letters.insert(at, letters[at]),
        3 if at + 1 < last => letters.swap(at, at + 1),
        3 if at > 1 => letters.swap(at - 1, at),
        _ => {
            let near = neighbours(letters[at].to_ascii_lowercase());
            letters[at] = near[rng.below(near.len() as u64) as usize];
        }
    }
}

/// The keys beside `key` on a QWERTY keyboard.
fn neighbours(key: char) -> &'static [char] {
    const NEAR: [(char, &[char]); 26] = [
        ('q', &['w', 'a']),
        ('w', &['q', 'e', 's']),
        ('e', &['w', 'r', 'd']),
        ('r', &['e', 't', 'f']),
        ('t', &['r', 'y', 'g']),
        ('y', &['t', 'u', 'h']),
        ('u', &['y', 'i', 'j']),
        ('i', &['u', 'o', 'k']),
        ('o', &['i', 'p', 'l']),
        ('p', &['o', 'l']),
        ('a', &['q', 's', 'z']),
        ('s', &['a', 'd', 'w', 'x']),
        ('d', &['s', 'f', 'e', 'c']),
        ('f', &['d', 'g', 'r', 'v']),
        ('g', &['f', 'h', 't', 'b']),
        ('h', &['g', 'j', 'y', 'n']),
        ('j', &['h', 'k', 'u', 'm']),
        ('k', &['j', 'l', 'i']),
        ('l', &['k', 'o', 'p']),
        ('z', &['a', 'x']),
        ('x', &['z', 'c', 's']),
        ('c', &['x', 'v', 'd']),
        ('v', &['c', 'b', 'f']),
        ('b', &['v', 'n', 'g']),
        ('n', &['b', 'm', 'h']),
        ('m', &['n', 'j']),
    ];
    NEAR.iter()
        .find(|(k, _)| *k == key)
        .map_or(&['e'][..], |(_, near)| near)
}

fn spaces(text: &str, rng: &mut Rng) -> (String, usize) {
    let mut edits = 0;
    let mut out = String::with_capacity(text.len());
    let words: Vec<&str> = text.split(' ').collect();
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            let joins = word.chars().next().is_some_and(char::is_alphabetic)
                && words[i - 1].chars().last().is_some_and(char::is_alphabetic);
            if joins && rng.below(SPACE_ONE_IN) == 0 {
                edits += 1;
            } else {
                out.push(' ');
            }
        }
        out.push_str(word);
    }
    (out, edits)
}

/// splitmix64: small, seeded, the same on every machine.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queries(texts: &[&str]) -> Vec<LabeledQuery> {
        texts
            .iter()
            .map(|t| LabeledQuery {
                text: (*t).to_owned(),
                intent: "x".into(),
                intents: vec!["x".into()],
                domain: None,
                session_id: None,
                turn: None,
                assistant: None,
            })
            .collect()
    }

    #[test]
    fn typos_keep_first_and_last_letters_and_the_labels() {
        let clean = queries(&["what is the balance on my checking account"; 200]);
        let (noisy, stats) = add_noise(&clean, Noise::Typos, 7);
        assert!(stats.changed > 80 && stats.changed < 190, "{stats:?}");
        for (q, c) in noisy.iter().zip(&clean) {
            assert_eq!(q.intent, c.intent);
            for (a, b) in q.text.split(' ').zip(c.text.split(' ')) {
                assert_eq!(a.chars().next(), b.chars().next(), "{a} {b}");
                assert_eq!(a.chars().last(), b.chars().last(), "{a} {b}");
            }
        }
        // Seeded: the same copy again, another with another seed.
        let texts = |qs: &[LabeledQuery]| qs.iter().map(|q| q.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&add_noise(&clean, Noise::Typos, 7).0), texts(&noisy));
        assert_ne!(texts(&add_noise(&clean, Noise::Typos, 8).0), texts(&noisy));
    }

    #[test]
    fn spaces_join_words_and_nothing_else() {
        let clean = queries(&["what is the balance on my checking account"; 200]);
        let (noisy, stats) = add_noise(&clean, Noise::Spaces, 1);
        assert!(stats.edits > 100, "{stats:?}");
        for q in &noisy {
            assert_eq!(q.text.replace(' ', ""), clean[0].text.replace(' ', ""));
        }
    }
}
