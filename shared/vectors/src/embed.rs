//! Embedding: turning texts into unit vectors. The router embeds each query once with the
//! same embedder that built the index; the index's manifest names the model so a
//! mismatch is refused at start-up.
//!
//! The production embedder (all-MiniLM-L6-v2 int8 on ONNX Runtime) lives in the
//! `switchyard-embed` crate, so this crate stays model-free; [`HashingEmbedder`] is a
//! deterministic stand-in for tests. [`CachedEmbedder`] keeps the vectors of recent
//! questions.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;

use crate::error::{Result, VectorsError};
use switchyard_catalog::metric;

/// Texts in, L2-normalised vectors out (one per text, in order).
pub trait Embedder: Send + Sync {
    /// Stable identifier of the model, recorded in the index manifest.
    fn model_id(&self) -> &str;
    fn dimension(&self) -> usize;
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// The words its tokenizer knows whole (not as pieces of words), the commoner first:
    /// what the router's spelling correction leaves as written, and corrects to when the
    /// catalog has no word near. Empty for a model without a vocabulary, which turns the
    /// correction off.
    fn vocabulary(&self) -> Vec<String> {
        Vec::new()
    }

    fn embed_one(&self, text: &str) -> Result<Vec<f32>> {
        let mut vectors = self.embed(&[text])?;
        vectors
            .pop()
            .ok_or_else(|| VectorsError::embedding("the embedder returned no vector"))
    }
}

/// A deterministic, model-free embedder **for tests only — not for production**: it knows
/// no meaning, only shared spelling. Each text's lower-cased words, and the character
/// trigrams of each word (`#word#` padded), are hashed (FNV-1a) into `dimension` buckets;
/// the counts (words weigh 1, trigrams 0.5) are L2-normalised. Texts sharing words or word
/// pieces get a high cosine, unrelated texts one near 0; a text without letters or digits
/// is the zero vector. The same text gives the same vector on every machine and run.
///
/// Its model id, `hashing-<dimension>` (e.g. `hashing-384`), keeps an index built with it
/// from being served with a real model and the reverse.
#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dimension: usize,
    model_id: String,
}

impl HashingEmbedder {
    /// The dimension of all-MiniLM-L6-v2, so vectors have the production shape.
    pub const DEFAULT_DIMENSION: usize = 384;

    /// An embedder of `dimension` buckets (at least 1).
    pub fn new(dimension: usize) -> HashingEmbedder {
        let dimension = dimension.max(1);
        HashingEmbedder {
            dimension,
            model_id: format!("hashing-{dimension}"),
        }
    }

    fn embed_text(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0f32; self.dimension];
        let lower = text.to_lowercase();
        for word in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            vector[self.bucket(b"w", word.as_bytes())] += 1.0;
            let padded: Vec<char> = std::iter::once('#')
                .chain(word.chars())
                .chain(std::iter::once('#'))
                .collect();
            for trigram in padded.windows(3) {
                let trigram: String = trigram.iter().collect();
                vector[self.bucket(b"c", trigram.as_bytes())] += 0.5;
            }
        }
        normalize(&mut vector);
        vector
    }

    /// FNV-1a over a feature kind tag and the feature's bytes, reduced to a bucket.
    fn bucket(&self, kind: &[u8], feature: &[u8]) -> usize {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in kind.iter().chain(b":").chain(feature) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        (hash % self.dimension as u64) as usize
    }
}

impl Default for HashingEmbedder {
    fn default() -> Self {
        HashingEmbedder::new(HashingEmbedder::DEFAULT_DIMENSION)
    }
}

impl Embedder for HashingEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| self.embed_text(text)).collect())
    }
}

/// An embedder that remembers the vectors of the last `capacity` texts (least recently used
/// first out), keyed by the text lower-cased with its whitespace collapsed: the tokenizer
/// is uncased and splits on whitespace, so equal keys give equal vectors. Hits and misses
/// are counted in the `EmbedCacheHits` and `EmbedCacheMisses` metrics.
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    cache: Mutex<LruCache<String, Vec<f32>>>,
}

impl CachedEmbedder {
    /// `capacity` 0 keeps nothing (every call reaches `inner`).
    pub fn wrap(inner: Arc<dyn Embedder>, capacity: usize) -> Arc<dyn Embedder> {
        match NonZeroUsize::new(capacity) {
            None => inner,
            Some(capacity) => Arc::new(CachedEmbedder {
                inner,
                cache: Mutex::new(LruCache::new(capacity)),
            }),
        }
    }

    fn key(text: &str) -> String {
        text.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, LruCache<String, Vec<f32>>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Embedder for CachedEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn vocabulary(&self) -> Vec<String> {
        self.inner.vocabulary()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let keys: Vec<String> = texts.iter().map(|t| Self::key(t)).collect();
        let mut vectors: Vec<Option<Vec<f32>>> = {
            let mut cache = self.cache();
            keys.iter().map(|k| cache.get(k).cloned()).collect()
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| vectors[i].is_none()).collect();
        metrics::counter!(metric::EMBED_CACHE_HITS).increment((texts.len() - missing.len()) as u64);
        metrics::counter!(metric::EMBED_CACHE_MISSES).increment(missing.len() as u64);
        if !missing.is_empty() {
            let fresh = self
                .inner
                .embed(&missing.iter().map(|&i| texts[i]).collect::<Vec<_>>())?;
            let mut cache = self.cache();
            for (&i, vector) in missing.iter().zip(fresh) {
                cache.put(keys[i].clone(), vector.clone());
                vectors[i] = Some(vector);
            }
        }
        Ok(vectors.into_iter().map(|v| v.unwrap_or_default()).collect())
    }
}

/// Dot product of two unit vectors: their cosine similarity.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Compiled again with AVX2 where the CPU has it (every x86-64 Lambda's does): the same
    // additions in the same order, so the same result, in a quarter of the instructions
    // (it is the HNSW search's whole cost).
    pulp::Arch::new().dispatch(Dot(a, b))
}

/// The dot product as `pulp` runs it: `with_simd` is inlined into a function compiled
/// for the detected CPU, so the loop inside is vectorised for it (a closure would be
/// compiled apart, for baseline x86-64).
struct Dot<'a>(&'a [f32], &'a [f32]);

impl pulp::WithSimd for Dot<'_> {
    type Output = f32;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) -> f32 {
        dot_portable(self.0, self.1)
    }
}

#[inline(always)]
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent accumulators: the compiler keeps them in two vector registers
    // and overlaps the multiply-adds, without needing reassociation flags.
    let mut acc = [0.0f32; 8];
    let chunks_a = a.chunks_exact(8);
    let chunks_b = b.chunks_exact(8);
    let tail: f32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        // Fixed-size rows: one 8-wide multiply and add per row where the CPU has them.
        let x: &[f32; 8] = x.try_into().expect("chunks of 8");
        let y: &[f32; 8] = y.try_into().expect("chunks of 8");
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    (acc[0] + acc[4]) + (acc[1] + acc[5]) + (acc[2] + acc[6]) + (acc[3] + acc[7]) + tail
}

/// Integer dot product; the compiler widens to i16 pairs and multiply-adds them, with
/// AVX2 where the CPU has it.
pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    pulp::Arch::new().dispatch(DotI8(a, b))
}

/// As [`Dot`]: `with_simd` is inlined where the CPU's instructions are enabled.
struct DotI8<'a>(&'a [i8], &'a [i8]);

impl pulp::WithSimd for DotI8<'_> {
    type Output = i32;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) -> i32 {
        dot_i8_portable(self.0, self.1)
    }
}

#[inline(always)]
fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
    // Wrapping arithmetic: a sum is at most 384·127², far inside an i32, and unchecked
    // it vectorises in builds with overflow checks (tests, `eval`) too.
    let product = |x: i8, y: i8| i32::from(x).wrapping_mul(i32::from(y));
    let mut acc = [0i32; 16];
    let chunks_a = a.chunks_exact(16);
    let chunks_b = b.chunks_exact(16);
    let tail = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .fold(0i32, |sum, (x, y)| sum.wrapping_add(product(*x, *y)));
    for (x, y) in chunks_a.zip(chunks_b) {
        let x: &[i8; 16] = x.try_into().expect("chunks of 16");
        let y: &[i8; 16] = y.try_into().expect("chunks of 16");
        for i in 0..16 {
            acc[i] = acc[i].wrapping_add(product(x[i], y[i]));
        }
    }
    acc.iter().fold(tail, |sum, x| sum.wrapping_add(*x))
}

/// Scale `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dispatched_kernels_compute_what_the_portable_ones_do() {
        // Lengths with and without a tail past the kernels' chunks.
        for n in [384usize, 389, 7] {
            let a: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect();
            let b: Vec<f32> = (0..n)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0)
                .collect();
            // The same additions in the same order: equal, not merely close.
            assert_eq!(dot(&a, &b), dot_portable(&a, &b));
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
            assert!((f64::from(dot(&a, &b)) - naive).abs() < 1e-4);
            let qa: Vec<i8> = (0..n).map(|i| (i * 37 % 255) as i32 as i8).collect();
            let qb: Vec<i8> = (0..n).map(|i| (i * 91 % 255) as i32 as i8).collect();
            let exact: i32 = qa
                .iter()
                .zip(&qb)
                .map(|(x, y)| i32::from(*x) * i32::from(*y))
                .sum();
            assert_eq!(dot_i8(&qa, &qb), exact);
        }
    }

    /// Counts the texts that reach the model.
    struct Counting(HashingEmbedder, std::sync::atomic::AtomicUsize);

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            self.0.model_id()
        }
        fn dimension(&self) -> usize {
            self.0.dimension()
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            self.1
                .fetch_add(texts.len(), std::sync::atomic::Ordering::Relaxed);
            self.0.embed(texts)
        }
    }

    #[test]
    fn the_cache_answers_a_repeated_question_and_forgets_the_least_recent() {
        let counting = Arc::new(Counting(
            HashingEmbedder::new(64),
            std::sync::atomic::AtomicUsize::new(0),
        ));
        let cached = CachedEmbedder::wrap(counting.clone(), 2);
        let reached = || counting.1.load(std::sync::atomic::Ordering::Relaxed);

        let first = cached.embed_one("What is my balance?").unwrap();
        // Same words, other case and spacing: the same key, no model call.
        let again = cached.embed_one("  what is   MY balance? ").unwrap();
        assert_eq!(first, again);
        assert_eq!(reached(), 1);

        // A batch mixing a known text and new ones embeds only the new ones, in order.
        let batch = cached
            .embed(&["transfer money", "What is my balance?", "pay a bill"])
            .unwrap();
        assert_eq!(reached(), 3);
        assert_eq!(batch[1], first);
        assert_eq!(batch[0], counting.0.embed_one("transfer money").unwrap());

        // Capacity 2: the two new texts pushed the balance question out; the newest stay.
        cached.embed_one("What is my balance?").unwrap();
        assert_eq!(reached(), 4, "the least recently used text was evicted");
        cached.embed_one("pay a bill").unwrap();
        assert_eq!(reached(), 4, "the most recent texts stay");
        assert_eq!(cached.model_id(), "hashing-64");
    }

    #[test]
    fn capacity_zero_is_no_cache() {
        let counting = Arc::new(Counting(
            HashingEmbedder::new(8),
            std::sync::atomic::AtomicUsize::new(0),
        ));
        let cached = CachedEmbedder::wrap(counting.clone(), 0);
        cached.embed_one("a").unwrap();
        cached.embed_one("a").unwrap();
        assert_eq!(counting.1.load(std::sync::atomic::Ordering::Relaxed), 2);
    }

    #[test]
    fn hashing_vectors_are_unit_deterministic_and_alike_by_spelling() {
        let embedder = HashingEmbedder::default();
        assert_eq!(embedder.model_id(), "hashing-384");
        assert_eq!(embedder.dimension(), 384);
        let vectors = embedder
            .embed(&[
                "How many employees work in Engineering?",
                "how many employees work in engineering",
                "Remind me to buy milk",
                "?!",
            ])
            .unwrap();
        assert!(vectors.iter().all(|v| v.len() == 384));
        assert!((dot(&vectors[0], &vectors[0]) - 1.0).abs() < 1e-5);
        // Case and punctuation do not matter; the same text gives the same vector.
        assert!((dot(&vectors[0], &vectors[1]) - 1.0).abs() < 1e-5);
        assert_eq!(
            embedder.embed_one("Remind me to buy milk").unwrap(),
            vectors[2]
        );
        // Unrelated texts are far apart; a text without words is the zero vector.
        assert!(dot(&vectors[0], &vectors[2]) < 0.5);
        assert!(vectors[3].iter().all(|&x| x == 0.0));
        assert_eq!(HashingEmbedder::new(0).dimension(), 1);
    }

    #[test]
    fn dot_matches_the_naive_sum() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.25).collect();
        let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.1).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-4);
    }
}
