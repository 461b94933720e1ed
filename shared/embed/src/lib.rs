//! Switchyard's production embedder: all-MiniLM-L6-v2 run in-process on candle +
//! tokenizers (padding to the longest input, truncation at 256 tokens, mean pooling, L2
//! normalisation), as sentence-transformers does.
//!
//! The [`Embedder`] trait lives in `switchyard-core`, which no longer depends on candle:
//! its own tests use `switchyard_core::embed::HashingEmbedder`. Errors are the domain's:
//! a missing file is [`Error::ModelMissing`] naming the folder and the files; a file that
//! does not load is [`Error::Embedding`] naming the file.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use switchyard_core::embed::Embedder;
use switchyard_core::{Error, Result};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

pub const MINILM_MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];
/// sentence-transformers' max_seq_length for this model.
const MAX_TOKENS: usize = 256;

/// all-MiniLM-L6-v2 run in-process with candle: mean pooling over real tokens, then L2
/// normalisation, as sentence-transformers does.
pub struct MiniLmEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    dimension: usize,
    batch_size: usize,
    device: Device,
}

impl MiniLmEmbedder {
    /// Load the model files from `dir`. A missing file is [`Error::ModelMissing`], whose
    /// message gives the command that fetches the model.
    pub fn load(dir: &Path, batch_size: usize) -> Result<Self> {
        let missing: Vec<&str> = MODEL_FILES
            .iter()
            .copied()
            .filter(|name| !dir.join(name).is_file())
            .collect();
        if !missing.is_empty() {
            return Err(Error::ModelMissing {
                dir: dir.to_path_buf(),
                missing: format!("missing {}", missing.join(", ")),
            });
        }
        let read = |name: &str| -> Result<(PathBuf, Vec<u8>)> {
            let path = dir.join(name);
            let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
            Ok((path, bytes))
        };
        let model_error = |path: &Path, e: &dyn std::fmt::Display| {
            Error::Embedding(format!("{}: {e}", path.display()))
        };

        let (config_path, config_bytes) = read("config.json")?;
        let config: BertConfig =
            serde_json::from_slice(&config_bytes).map_err(|e| model_error(&config_path, &e))?;

        let device = Device::Cpu;
        let (weights_path, weights) = read("model.safetensors")?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| model_error(&weights_path, &e))?;
        let model = BertModel::load(vb, &config).map_err(|e| model_error(&weights_path, &e))?;

        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| model_error(&tokenizer_path, &e))?;
        // The shipped tokenizer.json pads every input to 128 tokens; pad to the longest
        // input of a batch instead, and truncate where sentence-transformers does.
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| model_error(&tokenizer_path, &e))?;

        Ok(MiniLmEmbedder {
            model,
            tokenizer,
            dimension: config.hidden_size,
            batch_size: batch_size.max(1),
            device,
        })
    }

    fn embed_batch(&self, texts: &[&str]) -> candle_core::Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(candle_core::Error::msg)?;
        let rows = |f: &dyn Fn(&tokenizers::Encoding) -> Vec<u32>| -> candle_core::Result<Tensor> {
            let data: Vec<Tensor> = encodings
                .iter()
                .map(|e| Tensor::new(f(e).as_slice(), &self.device))
                .collect::<candle_core::Result<_>>()?;
            Tensor::stack(&data, 0)
        };
        let ids = rows(&|e| e.get_ids().to_vec())?;
        let type_ids = rows(&|e| e.get_type_ids().to_vec())?;
        let mask = rows(&|e| e.get_attention_mask().to_vec())?;

        let hidden = self.model.forward(&ids, &type_ids, Some(&mask))?; // (batch, tokens, dim)
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (batch, tokens, 1)
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?; // (batch, dim)
        let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?; // (batch, 1)
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norms)?.to_vec2::<f32>()
    }
}

impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        MINILM_MODEL_ID
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch_size) {
            let batch = self
                .embed_batch(chunk)
                .map_err(|e| Error::Embedding(e.to_string()))?;
            vectors.extend(batch);
        }
        Ok(vectors)
    }
}
