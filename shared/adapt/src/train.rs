//! The training loop: in-batch-negative ranking loss (the "multiple negatives ranking" loss
//! of sentence-transformers) on (anchor, positive) pairs of one template, AdamW with a
//! linear warm-up and decay.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use candle_core::{Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use tokenizers::{Tokenizer, TruncationParams};

use crate::bert::Bert;
use crate::error::{Error, Result};
use crate::matmul::matmul;
use crate::pairs::{
    batches, incremental_batches, nearest_batches, neighbours, pairs, Pair, SplitMix,
};
use crate::{Batching, Scope, Settings, INCREMENTAL_PAIRS_PER_TEXT};

/// The token ids of a batch of texts, one text after another (no padding), and each
/// text's count.
pub struct TokenBatch {
    pub ids: Vec<u32>,
    pub lengths: Vec<usize>,
}

/// The tokenizer of the model folder, truncating at `max_tokens`, padding nothing.
pub fn tokenizer(path: &Path, max_tokens: usize) -> Result<Tokenizer> {
    let problem = |e: &dyn std::fmt::Display| Error::Tokenizer {
        file: path.display().to_string(),
        problem: e.to_string(),
    };
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| problem(&e))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_tokens,
            ..TruncationParams::default()
        }))
        .map_err(|e| problem(&e))?;
    Ok(tokenizer)
}

pub fn tokenize(tokenizer: &Tokenizer, texts: &[&str]) -> Result<TokenBatch> {
    let encodings = tokenizer
        .encode_batch(texts.to_vec(), true)
        .map_err(|e| Error::Tokenizer {
            file: "tokenizer.json".into(),
            problem: e.to_string(),
        })?;
    Ok(TokenBatch {
        ids: encodings
            .iter()
            .flat_map(|e| e.get_ids().iter().copied())
            .collect(),
        lengths: encodings.iter().map(|e| e.get_ids().len()).collect(),
    })
}

/// The frozen part's output for every text training reads, computed once: a step then
/// runs only the trained layers, forward and back.
struct FrozenCache<'a> {
    hidden: usize,
    /// Each text's token count and rows (tokens × hidden).
    rows: HashMap<&'a str, (usize, Vec<f32>)>,
}

impl<'a> FrozenCache<'a> {
    fn build(model: &Bert, tokenizer: &Tokenizer, texts: &[&'a str]) -> Result<Self> {
        let mut unique: Vec<&str> = texts.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let mut rows = HashMap::with_capacity(unique.len());
        let mut hidden = 0;
        for chunk in unique.chunks(64) {
            let batch = tokenize(tokenizer, chunk)?;
            let frozen = model.frozen(&batch.ids, &batch.lengths)?;
            hidden = frozen.dim(1)?;
            let values = frozen.flatten_all()?.to_vec1::<f32>()?;
            let mut start = 0;
            for (&text, &length) in chunk.iter().zip(&batch.lengths) {
                let end = start + length * hidden;
                rows.insert(text, (length, values[start..end].to_vec()));
                start = end;
            }
        }
        Ok(FrozenCache { hidden, rows })
    }

    /// `texts`' frozen rows, one text after another, and each text's count.
    fn batch(&self, texts: &[&str]) -> Result<(Tensor, Vec<usize>)> {
        let entries: Vec<&(usize, Vec<f32>)> = texts.iter().map(|t| &self.rows[t]).collect();
        let lengths: Vec<usize> = entries.iter().map(|(n, _)| *n).collect();
        let total: usize = lengths.iter().sum();
        let mut values = Vec::with_capacity(total * self.hidden);
        for (_, kept) in &entries {
            values.extend_from_slice(kept);
        }
        Ok((
            Tensor::from_vec(values, (total, self.hidden), &Device::Cpu)?,
            lengths,
        ))
    }

    fn embed(&self, model: &Bert, texts: &[&str]) -> Result<Tensor> {
        let (frozen, lengths) = self.batch(texts)?;
        model.embed_frozen(&frozen, &lengths)
    }
}

/// Every group's texts embedded by the model as it is before training.
fn group_vectors(
    model: &Bert,
    cache: &FrozenCache,
    groups: &[Vec<String>],
) -> Result<Vec<Vec<Vec<f32>>>> {
    let texts: Vec<&str> = groups.iter().flatten().map(String::as_str).collect();
    let mut vectors = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(64) {
        vectors.extend(cache.embed(model, chunk)?.to_vec2::<f32>()?);
    }
    let mut rest = vectors.into_iter();
    Ok(groups
        .iter()
        .map(|group| rest.by_ref().take(group.len()).collect())
        .collect())
}

/// What one training run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub pairs: usize,
    pub pairs_per_text: usize,
    pub steps: usize,
    /// Mean loss over the first and the last tenth of the steps.
    pub first_loss: f32,
    pub last_loss: f32,
    pub seconds: f64,
    /// Of `seconds`, what came before the first step: the frozen layers run over every
    /// text, and the neighbours found.
    pub setup_seconds: f64,
}

/// Train `model` on pairs of `groups` (each one template's texts).
pub fn train(
    model: &Bert,
    tokenizer: &Tokenizer,
    groups: &[Vec<String>],
    negatives: &[String],
    settings: &Settings,
    scope: Scope,
    progress: &dyn Fn(usize, usize, f32),
) -> Result<Run> {
    let began = Instant::now();
    let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
    let texts: usize = sizes.iter().filter(|&&s| s >= 2).sum();
    // The bound on cost: at most max_pairs pairs, by fewer pairs per text.
    let per_text = settings
        .pairs_per_text
        .min(settings.max_pairs / texts.max(1))
        .max(1);
    let texts_of = |used: &[usize]| -> Vec<&str> {
        used.iter()
            .flat_map(|&g| &groups[g])
            .chain(negatives)
            .map(String::as_str)
            .collect()
    };
    let mut rng = SplitMix::new(settings.seed);
    let (plan, cache): (Vec<Vec<Pair>>, FrozenCache) = match scope {
        Scope::Every => {
            let every: Vec<usize> = (0..groups.len()).collect();
            let cache = FrozenCache::build(model, tokenizer, &texts_of(&every))?;
            let near = match settings.batching {
                Batching::Random => None,
                Batching::Nearest => Some(neighbours(&group_vectors(model, &cache, groups)?)),
            };
            let mut plan = Vec::new();
            for _ in 0..settings.epochs {
                let mut epoch = pairs(&sizes, per_text, &mut rng);
                epoch.truncate(settings.max_pairs);
                plan.extend(match &near {
                    None => batches(epoch, settings.batch_size),
                    Some(near) => nearest_batches(epoch, settings.batch_size, near, &mut rng),
                });
            }
            (plan, cache)
        }
        Scope::Changed {
            templates,
            neighbours,
        } => {
            let plan = incremental_batches(
                &sizes,
                templates,
                INCREMENTAL_PAIRS_PER_TEXT,
                settings.batch_size,
                neighbours,
                &mut rng,
            );
            // Only the templates the steps meet run through the frozen layers.
            let mut used: Vec<usize> = plan.iter().flatten().map(|p| p.group).collect();
            used.sort_unstable();
            used.dedup();
            let cache = FrozenCache::build(model, tokenizer, &texts_of(&used))?;
            (plan, cache)
        }
    };
    let setup_seconds = began.elapsed().as_secs_f64();
    let steps = plan.len();
    if steps == 0 {
        return Err(Error::Setting {
            setting: "catalog",
            problem: "no template has two texts to pair".into(),
        });
    }
    let warmup = ((steps as f64) * settings.warmup).ceil().max(1.0);
    let mut optimizer = AdamW::new(
        model.trained(),
        ParamsAdamW {
            lr: settings.learning_rate,
            weight_decay: settings.weight_decay,
            ..ParamsAdamW::default()
        },
    )?;
    let mut losses = Vec::with_capacity(steps);
    for (step, batch) in plan.iter().enumerate() {
        let s = step as f64 + 1.0;
        let rate = if s <= warmup {
            s / warmup
        } else {
            ((steps as f64 - s) / (steps as f64 - warmup).max(1.0)).max(0.0)
        };
        optimizer.set_learning_rate(settings.learning_rate * rate);
        let anchors: Vec<&str> = batch
            .iter()
            .map(|p| groups[p.group][p.anchor].as_str())
            .collect();
        let mut positives: Vec<&str> = batch
            .iter()
            .map(|p| groups[p.group][p.positive].as_str())
            .collect();
        // Texts of no template join the candidates every anchor must rank below its
        // positive (a batch's worth at a time, in turn).
        if !negatives.is_empty() {
            let take = batch.len().min(negatives.len());
            positives
                .extend((0..take).map(|i| negatives[(step * take + i) % negatives.len()].as_str()));
        }
        // Anchors and candidates run as one batch: one pass of wider products.
        let both: Vec<&str> = anchors.iter().chain(&positives).copied().collect();
        let embedded = cache.embed(model, &both)?;
        let ea = embedded.narrow(0, 0, anchors.len())?;
        let ep = embedded.narrow(0, anchors.len(), positives.len())?;
        let logits = (matmul(&ea, &ep.t()?)? * settings.scale)?;
        let labels = Tensor::arange(0u32, batch.len() as u32, &Device::Cpu)?;
        let loss = candle_nn::loss::cross_entropy(&logits, &labels)?;
        optimizer.backward_step(&loss)?;
        let value = loss.to_scalar::<f32>()?;
        losses.push(value);
        progress(step + 1, steps, value);
    }
    let tenth = (steps / 10).max(1);
    let mean = |xs: &[f32]| xs.iter().sum::<f32>() / xs.len() as f32;
    Ok(Run {
        pairs: plan.iter().map(Vec::len).sum(),
        pairs_per_text: match scope {
            Scope::Every => per_text,
            Scope::Changed { .. } => INCREMENTAL_PAIRS_PER_TEXT,
        },
        steps,
        first_loss: mean(&losses[..tenth]),
        last_loss: mean(&losses[steps - tenth..]),
        seconds: began.elapsed().as_secs_f64(),
        setup_seconds,
    })
}
