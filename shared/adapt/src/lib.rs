//! Encoder adaptation: all-MiniLM-L6-v2 fine-tuned on one catalog's own texts at index
//! build, so that questions of one template embed close together and near templates apart.
//!
//! The method is SetFit's first stage, in the form sentence-transformers calls the
//! multiple-negatives ranking loss: pairs of texts of one template, cut into batches in
//! which no template appears twice, the other pairs of a batch serving as negatives.
//! Training runs in Rust on candle (f32, CPU), from the f32 weights the model folder holds
//! (`model.safetensors`); the result is a model folder of the same form (weights,
//! config.json, tokenizer.json) from which the int8 ONNX graph is built as for the base.
//!
//! Deterministic: the same catalog, settings and seed give the same weights on every x86-64
//! CPU with AVX2 and FMA: pairs and batches come from a seeded generator, the products
//! wider than 512 are summed in a fixed order (`matmul`), and candle's other CPU kernels
//! split work without changing the order of a sum.

mod bert;
mod error;
mod matmul;
mod ops;
mod pairs;
mod train;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::Tensor;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use error::{Error, Result};
pub use pairs::{neighbours, SplitMix};
pub use train::Run;

use bert::{Bert, Shape};

pub const WEIGHTS_FILE: &str = "model.safetensors";
pub const CONFIG_FILE: &str = "config.json";
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// Pairs each text of a changed template anchors in an incremental run: fewer than a full
/// run's (`pairs_per_text`), since the encoder already knows the rest of the catalog.
pub const INCREMENTAL_PAIRS_PER_TEXT: usize = 2;

/// An incremental run trains the layers from this one on (the top three of six): one
/// changed CLINC150 template trained in 37 s instead of 86 s with all six, and validation
/// figures as near a full rebuild's (see the README).
pub const INCREMENTAL_FIRST_TRAINED_LAYER: usize = 3;

/// Which templates a training run draws its pairs from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// Every template: a full adaptation.
    Every,
    /// Only these templates (positions in the groups), each against its nearest rivals: an
    /// incremental run from an encoder already adapted to the rest of the catalog.
    Changed {
        templates: &'a [usize],
        /// Each template's others, nearest first ([`neighbours`] of the templates' vectors
        /// by the encoder being trained further: its int8 graph embeds them in seconds).
        neighbours: &'a [Vec<usize>],
    },
}

/// How to adapt: the loss's scale, the pairs, the optimizer, which layers train.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub seed: u64,
    /// Positives drawn for every text (fewer when the catalog would exceed `max_pairs`).
    pub pairs_per_text: usize,
    /// The bound on cost: pairs per epoch, whatever the catalog's size.
    pub max_pairs: usize,
    pub batch_size: usize,
    pub epochs: usize,
    pub learning_rate: f64,
    /// Share of the steps spent warming the learning rate up from zero.
    pub warmup: f64,
    pub weight_decay: f64,
    /// The ranking loss's inverse temperature on cosine similarities.
    pub scale: f64,
    /// Layers before this one stay frozen (0 trains all six).
    pub first_trained_layer: usize,
    /// Texts are cut at this many tokens while training.
    pub max_tokens: usize,
    /// How pairs are cut into batches, which decides the negatives each pair meets.
    pub batching: Batching,
    /// Keep only the first this many layers (a smaller, faster encoder); all when unset.
    pub layers: Option<usize>,
}

/// Which templates share a batch, and so serve as each other's negatives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Batching {
    /// Any templates, in a seeded random order.
    Random,
    /// Templates near each other (by the base model's centroids): harder negatives.
    Nearest,
}

impl Settings {
    /// The settings of an incremental run: these, training no layer below
    /// [`INCREMENTAL_FIRST_TRAINED_LAYER`] (nor the last one alone of a cut model).
    pub fn incremental(&self) -> Settings {
        let layers = self.layers.unwrap_or(6);
        let floor = INCREMENTAL_FIRST_TRAINED_LAYER.min(layers.saturating_sub(1));
        Settings {
            first_trained_layer: self.first_trained_layer.max(floor),
            ..self.clone()
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            seed: 42,
            pairs_per_text: 5,
            max_pairs: 8_000,
            batch_size: 32,
            epochs: 1,
            learning_rate: 5e-5,
            warmup: 0.1,
            weight_decay: 0.01,
            scale: 20.0,
            first_trained_layer: 0,
            max_tokens: 64,
            batching: Batching::Nearest,
            layers: None,
        }
    }
}

/// An encoder loaded for training or for embedding with candle.
pub struct Encoder {
    bert: Bert,
    tokenizer: tokenizers::Tokenizer,
    dir: PathBuf,
}

#[derive(Deserialize)]
struct BertConfig {
    num_hidden_layers: usize,
    hidden_size: usize,
    num_attention_heads: usize,
}

impl Encoder {
    /// Load the model folder `dir` (model.safetensors, config.json, tokenizer.json).
    pub fn load(dir: &Path, settings: &Settings) -> Result<Encoder> {
        let config_path = dir.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
        let config: BertConfig = serde_json::from_str(&text).map_err(|e| Error::Weights {
            file: config_path.display().to_string(),
            problem: e.to_string(),
        })?;
        let layers = match settings.layers {
            None => config.num_hidden_layers,
            Some(n) if (1..=config.num_hidden_layers).contains(&n) => n,
            Some(n) => {
                return Err(Error::Setting {
                    setting: "layers",
                    problem: format!(
                        "{n} is not between 1 and the model's {} layers",
                        config.num_hidden_layers
                    ),
                })
            }
        };
        let shape = Shape {
            layers,
            hidden: config.hidden_size,
            heads: config.num_attention_heads,
        };
        if settings.first_trained_layer > shape.layers {
            return Err(Error::Setting {
                setting: "first_trained_layer",
                problem: format!(
                    "{} is past the model's {} layers",
                    settings.first_trained_layer, shape.layers
                ),
            });
        }
        let weights = dir.join(WEIGHTS_FILE);
        let tensors = bert::load_tensors(&weights)?;
        let bert = Bert::new(
            tensors,
            shape,
            settings.first_trained_layer,
            &weights.display().to_string(),
        )?;
        let tokenizer = train::tokenizer(&dir.join(TOKENIZER_FILE), settings.max_tokens)?;
        Ok(Encoder {
            bert,
            tokenizer,
            dir: dir.to_path_buf(),
        })
    }

    /// Fine-tune on `groups` (each one template's texts), with `negatives` (texts of no
    /// template: the datasources' negative examples) as extra negatives in every batch;
    /// pairs from the templates `scope` names; `progress` hears (step, steps, loss).
    pub fn adapt(
        &self,
        groups: &[Vec<String>],
        negatives: &[String],
        settings: &Settings,
        scope: Scope,
        progress: &dyn Fn(usize, usize, f32),
    ) -> Result<Run> {
        check(settings)?;
        train::train(
            &self.bert,
            &self.tokenizer,
            groups,
            negatives,
            settings,
            scope,
            progress,
        )
    }

    /// Sentence embeddings of `texts` (L2-normalised), in batches of 64.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(64) {
            let batch = train::tokenize(&self.tokenizer, chunk)?;
            let vectors = self.bert.embed(&batch.ids, &batch.lengths)?;
            out.extend(vectors.to_vec2::<f32>()?);
        }
        Ok(out)
    }

    /// Layers the encoder runs.
    pub fn layers(&self) -> usize {
        self.bert.layers()
    }

    /// Write the weights, config.json (with the number of layers kept) and tokenizer.json
    /// to `dir` as a model folder; the weights' sha256 is returned.
    pub fn save(&self, dir: &Path) -> Result<String> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let weights = dir.join(WEIGHTS_FILE);
        let tensors: HashMap<String, Tensor> = self.bert.tensors();
        candle_core::safetensors::save(&tensors, &weights)?;
        let from = self.dir.join(TOKENIZER_FILE);
        std::fs::copy(&from, dir.join(TOKENIZER_FILE)).map_err(|e| Error::io(&from, e))?;
        let from = self.dir.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&from).map_err(|e| Error::io(&from, e))?;
        let mut config: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| Error::Weights {
                file: from.display().to_string(),
                problem: e.to_string(),
            })?;
        config["num_hidden_layers"] = self.bert.layers().into();
        let to = dir.join(CONFIG_FILE);
        let text = serde_json::to_string_pretty(&config).expect("a JSON value serialises");
        std::fs::write(&to, text).map_err(|e| Error::io(&to, e))?;
        file_sha256(&weights)
    }
}

/// A file's sha256, in hex.
pub fn file_sha256(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(sha256_hex(&bytes))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn check(settings: &Settings) -> Result<()> {
    let positive = |setting: &'static str, value: f64| {
        if value > 0.0 && value.is_finite() {
            Ok(())
        } else {
            Err(Error::Setting {
                setting,
                problem: format!("must be a positive number, not {value}"),
            })
        }
    };
    positive("learning_rate", settings.learning_rate)?;
    positive("scale", settings.scale)?;
    positive("pairs_per_text", settings.pairs_per_text as f64)?;
    positive("max_pairs", settings.max_pairs as f64)?;
    positive("epochs", settings.epochs as f64)?;
    positive("max_tokens", settings.max_tokens as f64)?;
    // The model has 512 positions; at or below them the attention's products (k of the
    // tokens or a head's 32 columns) are summed in one order on every CPU (`matmul`).
    if settings.max_tokens > matmul::K_BLOCK {
        return Err(Error::Setting {
            setting: "max_tokens",
            problem: format!(
                "must be at most {} (the model's positions), not {}",
                matmul::K_BLOCK,
                settings.max_tokens
            ),
        });
    }
    if settings.batch_size < 2 {
        return Err(Error::Setting {
            setting: "batch_size",
            problem: format!(
                "must be at least 2 (a pair needs a negative), not {}",
                settings.batch_size
            ),
        });
    }
    if !(0.0..1.0).contains(&settings.warmup) {
        return Err(Error::Setting {
            setting: "warmup",
            problem: format!("must be in [0, 1), not {}", settings.warmup),
        });
    }
    Ok(())
}
