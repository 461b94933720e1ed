//! Topics: the words a caller keeps asking about, across its sessions. Each executed turn
//! adds the words of its question (more than 3 characters, stop words aside); weights
//! halve every `half_life_seconds` and a word unused for `ttl_seconds` (7 days) is gone.
//! In a session, a template sharing the caller's topic words gets a weak prior (at most
//! `1 + weight`): it tips a close call, never a clear one. Kept per owner
//! (`auth::owner`), only with `sessions.store_text` (they are the questions' words).

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::config::TopicsConfig;
use switchyard_catalog::bounded::{json_len, MAX_ITEM_BYTES};
use switchyard_catalog::expiring::ExpiringMap;
use switchyard_catalog::template::Template;
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::Result;

/// Words too common to say what a caller is about.
const STOP_WORDS: &[&str] = &[
    "about", "also", "been", "could", "does", "from", "have", "into", "just", "like", "more",
    "much", "need", "please", "show", "tell", "than", "that", "their", "them", "then", "there",
    "these", "they", "this", "want", "what", "when", "where", "which", "will", "with", "would",
    "your",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicWord {
    pub word: String,
    /// The weight at `at`; it halves every `half_life_seconds` after.
    pub weight: f32,
    /// Unix seconds of the last use.
    pub at: i64,
}

/// A caller's topic words, heaviest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Topics {
    pub words: Vec<TopicWord>,
}

impl Topics {
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The weights as of `now`; words past their `ttl_seconds` dropped.
    pub fn at(&self, now: i64, config: &TopicsConfig) -> Topics {
        let words = self
            .words
            .iter()
            .filter(|w| now - w.at < config.ttl_seconds as i64)
            .map(|w| TopicWord {
                weight: decayed(w.weight, now - w.at, config),
                at: now,
                word: w.word.clone(),
            })
            .collect();
        Topics { words }
    }

    /// Count `question`'s words at `now`, keeping the `max_words` heaviest.
    pub fn add(&mut self, question: &str, now: i64, config: &TopicsConfig) {
        let mut by_word: HashMap<String, TopicWord> = self
            .at(now, config)
            .words
            .into_iter()
            .map(|w| (w.word.clone(), w))
            .collect();
        for word in topic_words(question) {
            by_word
                .entry(word.clone())
                .or_insert(TopicWord {
                    word,
                    weight: 0.0,
                    at: now,
                })
                .weight += 1.0;
        }
        let mut words: Vec<TopicWord> = by_word.into_values().collect();
        words.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.word.cmp(&b.word)));
        words.truncate(config.max_words);
        self.words = words;
        self.bound();
    }

    /// Drop words longer than [`MAX_TOPIC_WORD_CHARS`], then the lightest, until the JSON is
    /// at most [`MAX_ITEM_BYTES`] (what every store keeps of an owner's topics).
    pub fn bound(&mut self) {
        self.words
            .retain(|w| w.word.chars().count() <= MAX_TOPIC_WORD_CHARS);
        // `{"words":[` + the words + a comma between each + `]}`.
        let mut total = 12 + self.words.iter().map(|w| json_len(w) + 1).sum::<usize>();
        while total > MAX_ITEM_BYTES {
            let Some(lightest) = self.words.pop() else {
                break;
            };
            total -= json_len(&lightest) + 1;
        }
    }

    /// The share of the topic weight on `words` (0 to 1).
    pub fn share(&self, words: &BTreeSet<String>) -> f32 {
        let total: f32 = self.words.iter().map(|w| w.weight).sum();
        if total <= 0.0 {
            return 0.0;
        }
        let on: f32 = self
            .words
            .iter()
            .filter(|w| words.contains(&w.word))
            .map(|w| w.weight)
            .sum();
        on / total
    }

    /// The prior factor of a template: `1 + weight × share` of its words.
    pub fn factor(&self, template: &Template, config: &TopicsConfig) -> f32 {
        1.0 + config.weight * self.share(&template_words(template))
    }
}

fn decayed(weight: f32, seconds: i64, config: &TopicsConfig) -> f32 {
    weight * 0.5f32.powf(seconds.max(0) as f32 / config.half_life_seconds as f32)
}

/// The longest topic word: a longer run of letters is no word a caller keeps asking about.
pub const MAX_TOPIC_WORD_CHARS: usize = 64;

/// A text's topic words: lowercase, more than 3 characters and at most
/// [`MAX_TOPIC_WORD_CHARS`], not a stop word.
pub fn topic_words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| {
            let chars = w.chars().count();
            chars > 3 && chars <= MAX_TOPIC_WORD_CHARS && !w.chars().all(|c| c.is_ascii_digit())
        })
        .map(str::to_lowercase)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect()
}

/// What a template is about: the topic words of its id, description and examples.
pub fn template_words(template: &Template) -> BTreeSet<String> {
    let mut words = topic_words(&template.id.replace('_', " "));
    words.extend(topic_words(&template.description));
    for example in &template.nl_examples {
        words.extend(topic_words(example));
    }
    words
}

/// Where each owner's topics are kept.
pub trait TopicStore: Send + Sync {
    /// The owner's topics as stored (empty when unknown or expired at `now`).
    fn load<'a>(&'a self, owner: &'a str, now: i64) -> BoxFuture<'a, Result<Topics>>;
    /// Replace the owner's topics; they expire `ttl_seconds` after `now`.
    fn save<'a>(
        &'a self,
        owner: &'a str,
        topics: &'a Topics,
        now: i64,
    ) -> BoxFuture<'a, Result<()>>;
}

/// Topics in this process (local `serve`, tests): the `capacity` most recent owners.
pub struct MemoryTopicStore {
    ttl_seconds: i64,
    /// Owner → topics, at most `capacity` owners (the least recently used go).
    owners: ExpiringMap<Topics>,
}

impl MemoryTopicStore {
    pub fn new(config: &TopicsConfig, capacity: usize) -> Self {
        MemoryTopicStore {
            ttl_seconds: config.ttl_seconds as i64,
            owners: ExpiringMap::new(capacity),
        }
    }

    /// Owners held.
    pub fn len(&self) -> usize {
        self.owners.len()
    }

    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }
}

impl TopicStore for MemoryTopicStore {
    fn load<'a>(&'a self, owner: &'a str, now: i64) -> BoxFuture<'a, Result<Topics>> {
        let topics = self.owners.get(owner, now).unwrap_or_default();
        Box::pin(std::future::ready(Ok(topics)))
    }

    fn save<'a>(
        &'a self,
        owner: &'a str,
        topics: &'a Topics,
        now: i64,
    ) -> BoxFuture<'a, Result<()>> {
        self.owners
            .put(owner, topics.clone(), now + self.ttl_seconds);
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TopicsConfig {
        TopicsConfig::default()
    }

    #[test]
    fn words_are_long_lowercase_and_not_stop_words() {
        let words = topic_words("How many Teslas are registered in King County? What about 2024?");
        let expected: BTreeSet<String> = ["county", "king", "many", "registered", "teslas"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(words, expected);
    }

    #[test]
    fn weights_add_up_decay_and_expire() {
        let config = config();
        let mut topics = Topics::default();
        topics.add("teslas in king county", 0, &config);
        topics.add("teslas in pierce county", 0, &config);
        assert_eq!(topics.words[0].weight, 2.0, "{topics:?}");
        let half = config.half_life_seconds as i64;
        let later = topics.at(half, &config);
        let teslas = later.words.iter().find(|w| w.word == "teslas").unwrap();
        assert!((teslas.weight - 1.0).abs() < 1e-5, "{later:?}");
        assert!(topics.at(config.ttl_seconds as i64, &config).is_empty());
        // A word used again is as fresh as it is heavy.
        topics.add("salaries in sales", half, &config);
        let words = &topics.words;
        assert_eq!(words[0].word, "county", "{words:?}");
        assert!(words
            .iter()
            .any(|w| w.word == "salaries" && w.weight == 1.0));
    }

    #[test]
    fn the_heaviest_words_are_kept_and_shares_sum_to_one() {
        let mut config = config();
        config.max_words = 2;
        let mut topics = Topics::default();
        topics.add("teslas teslas county", 0, &config);
        topics.add("teslas county salaries", 0, &config);
        assert_eq!(topics.words.len(), 2);
        let all: BTreeSet<String> = topics.words.iter().map(|w| w.word.clone()).collect();
        assert!((topics.share(&all) - 1.0).abs() < 1e-6);
        assert_eq!(topics.share(&BTreeSet::from(["salaries".to_owned()])), 0.0);
    }

    /// Topics past twice the item budget in multibyte words (each of the question's
    /// words up to 2,000 characters, as many as `max_words` allows): long words are no
    /// topic words, the lightest give way, and the JSON stays under the budget and parses.
    #[test]
    fn topics_twice_the_budget_in_multibyte_words_are_kept_under_it() {
        let mut config = config();
        config.max_words = 10_000;
        let word = |n: usize, chars: usize| format!("{n}{}", "é漢🚀".repeat(chars / 3));
        let mut topics = Topics {
            words: (0..100)
                .map(|n| TopicWord {
                    word: word(n, 2_000),
                    weight: 1.0,
                    at: 0,
                })
                .chain((0..4_000).map(|n| TopicWord {
                    word: word(n, MAX_TOPIC_WORD_CHARS - 6),
                    weight: 1.0 + n as f32,
                    at: 0,
                }))
                .collect(),
        };
        assert!(json_len(&topics) > 2 * MAX_ITEM_BYTES);
        let question = format!("{} salaries", "é漢🚀".repeat(600));
        assert!(topic_words(&question).contains("salaries"));
        assert_eq!(
            topic_words(&question).len(),
            1,
            "a 1,800-character word is none"
        );
        topics.add(&question, 0, &config);
        let json = serde_json::to_string(&topics).unwrap();
        assert!(json.len() <= MAX_ITEM_BYTES, "{} bytes", json.len());
        let back: Topics = serde_json::from_str(&json).unwrap();
        assert!(back
            .words
            .iter()
            .all(|w| w.word.chars().count() <= MAX_TOPIC_WORD_CHARS));
        assert_eq!(
            back.words[0].word,
            word(3_999, MAX_TOPIC_WORD_CHARS - 6),
            "heaviest"
        );
        assert!(back.words.len() > 1_000, "{}", back.words.len());
    }

    #[test]
    fn the_memory_store_keeps_owners_apart_and_forgets_expired_ones() {
        let config = config();
        let store = MemoryTopicStore::new(&config, 10);
        let mut topics = Topics::default();
        topics.add("teslas in king county", 0, &config);
        let run = |f: BoxFuture<'_, Result<Topics>>| {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(f)
                .unwrap()
        };
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(store.save("ann", &topics, 0))
            .unwrap();
        assert_eq!(run(store.load("ann", 10)), topics);
        assert!(run(store.load("bob", 10)).is_empty());
        assert!(run(store.load("ann", config.ttl_seconds as i64)).is_empty());
    }
}
