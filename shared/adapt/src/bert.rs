//! all-MiniLM-L6-v2 (BERT: 6 layers, hidden 384, 12 heads) in candle. candle-nn's fused
//! layer norm and softmax have no gradient, so both are this crate's own ops (`ops.rs`).
//!
//! The word, position and token-type embeddings stay frozen (plain tensors); every encoder
//! layer from `first_trained` on holds its weights in [`Var`]s, which the optimizer updates.
//!
//! A batch's texts run packed: the dense products and norms, nearly all of a layer's work,
//! see only the real tokens' rows, text after text; attention and pooling see them padded
//! to the longest text ([`Packing`]). Padding carried through every product cost 1.9 times
//! the work on catalog-length texts (CLINC150's: 11 tokens on average, 32 at most).

use std::collections::HashMap;

use candle_core::{DType, Device, Module, Tensor, Var};

use crate::matmul::matmul;
use crate::ops::{Gelu, Softmax, Standardize};

use crate::error::{Error, Result};

/// BERT's layer-norm epsilon (config.json's `layer_norm_eps`).
const LAYER_NORM_EPS: f32 = 1e-12;

/// The model's shape, from config.json.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
}

/// A weight that is either trained (a [`Var`]) or frozen.
#[derive(Clone)]
enum Weight {
    Trained(Var),
    Frozen(Tensor),
}

impl Weight {
    fn tensor(&self) -> &Tensor {
        match self {
            Weight::Trained(var) => var.as_tensor(),
            Weight::Frozen(tensor) => tensor,
        }
    }
}

struct Linear {
    weight: Weight,
    bias: Weight,
}

impl Module for Linear {
    /// (rows, in) -> (rows, out).
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        matmul(x, &self.weight.tensor().t()?)?.broadcast_add(self.bias.tensor())
    }
}

struct LayerNorm {
    gamma: Weight,
    beta: Weight,
}

impl Module for LayerNorm {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        x.contiguous()?
            .apply_op1(Standardize {
                eps: LAYER_NORM_EPS,
            })?
            .broadcast_mul(self.gamma.tensor())?
            .broadcast_add(self.beta.tensor())
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The encoder: its weights by their safetensors names, and which of them train.
pub struct Bert {
    shape: Shape,
    /// Layers before this one are frozen: their output for a text never changes.
    first_trained: usize,
    word: Tensor,
    position: Tensor,
    token_type: Tensor,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    /// Every tensor of the weights file, for writing it back with the trained ones replaced.
    names: Vec<(String, Weight)>,
}

impl Bert {
    /// Build from the tensors of `model.safetensors`; layers `first_trained..` train.
    pub fn new(
        mut tensors: HashMap<String, Tensor>,
        shape: Shape,
        first_trained: usize,
        file: &str,
    ) -> Result<Bert> {
        let mut names: Vec<(String, Weight)> = Vec::new();
        let mut take = |name: String, train: bool| -> Result<Weight> {
            let tensor = tensors.remove(&name).ok_or_else(|| Error::Weights {
                file: file.to_owned(),
                problem: format!("no tensor {name}"),
            })?;
            let weight = if train {
                Weight::Trained(Var::from_tensor(&tensor.to_dtype(DType::F32)?)?)
            } else {
                Weight::Frozen(tensor)
            };
            names.push((name, weight.clone()));
            Ok(weight)
        };
        let word = take("embeddings.word_embeddings.weight".into(), false)?;
        let position = take("embeddings.position_embeddings.weight".into(), false)?;
        let token_type = take("embeddings.token_type_embeddings.weight".into(), false)?;
        let embedding_norm = LayerNorm {
            gamma: take("embeddings.LayerNorm.weight".into(), false)?,
            beta: take("embeddings.LayerNorm.bias".into(), false)?,
        };
        let mut layers = Vec::with_capacity(shape.layers);
        for l in 0..shape.layers {
            let train = l >= first_trained;
            let p = format!("encoder.layer.{l}");
            let mut linear = |name: &str| -> Result<Linear> {
                Ok(Linear {
                    weight: take(format!("{p}.{name}.weight"), train)?,
                    bias: take(format!("{p}.{name}.bias"), train)?,
                })
            };
            let query = linear("attention.self.query")?;
            let key = linear("attention.self.key")?;
            let value = linear("attention.self.value")?;
            let attention_out = linear("attention.output.dense")?;
            let intermediate = linear("intermediate.dense")?;
            let output = linear("output.dense")?;
            let mut norm = |name: &str| -> Result<LayerNorm> {
                Ok(LayerNorm {
                    gamma: take(format!("{p}.{name}.weight"), train)?,
                    beta: take(format!("{p}.{name}.bias"), train)?,
                })
            };
            let attention_norm = norm("attention.output.LayerNorm")?;
            let output_norm = norm("output.LayerNorm")?;
            layers.push(Layer {
                query,
                key,
                value,
                attention_out,
                attention_norm,
                intermediate,
                output,
                output_norm,
            });
        }
        // What the encoder does not use (position ids, the pooler) is written back as read;
        // the layers cut off are not.
        let mut rest: Vec<(String, Tensor)> = tensors
            .into_iter()
            .filter(|(name, _)| !name.starts_with("encoder.layer."))
            .collect();
        rest.sort_by(|a, b| a.0.cmp(&b.0));
        names.extend(rest.into_iter().map(|(n, t)| (n, Weight::Frozen(t))));
        Ok(Bert {
            shape,
            first_trained,
            word: word.tensor().clone(),
            position: position.tensor().clone(),
            token_type: token_type.tensor().clone(),
            embedding_norm,
            layers,
            names,
        })
    }

    pub fn layers(&self) -> usize {
        self.shape.layers
    }

    /// The trained weights, for the optimizer.
    pub fn trained(&self) -> Vec<Var> {
        self.names
            .iter()
            .filter_map(|(_, w)| match w {
                Weight::Trained(var) => Some(var.clone()),
                Weight::Frozen(_) => None,
            })
            .collect()
    }

    /// Every tensor by its safetensors name, trained ones at their current values.
    pub fn tensors(&self) -> HashMap<String, Tensor> {
        self.names
            .iter()
            .map(|(n, w)| (n.clone(), w.tensor().clone()))
            .collect()
    }

    /// Sentence embeddings, L2-normalised: the mean of the last hidden state over real
    /// tokens, as sentence-transformers computes them. `ids` holds the texts' token ids one
    /// text after another, `lengths` each text's count.
    pub fn embed(&self, ids: &[u32], lengths: &[usize]) -> Result<Tensor> {
        let frozen = self.frozen(ids, lengths)?;
        self.embed_frozen(&frozen, lengths)
    }

    /// The frozen part's output, one row per real token (tokens × hidden): the embeddings
    /// and the layers before the first trained one. It depends on nothing training changes,
    /// so training computes it once per text.
    pub fn frozen(&self, ids: &[u32], lengths: &[usize]) -> Result<Tensor> {
        Ok(self.frozen_inner(ids, lengths)?.detach())
    }

    /// Sentence embeddings from the frozen part's rows: the trained layers, then the mean
    /// over each text's tokens and the L2 norm.
    pub fn embed_frozen(&self, frozen: &Tensor, lengths: &[usize]) -> Result<Tensor> {
        Ok(self.embed_frozen_inner(frozen, lengths)?)
    }

    fn frozen_inner(&self, ids: &[u32], lengths: &[usize]) -> candle_core::Result<Tensor> {
        let device = &Device::Cpu;
        let positions: Vec<u32> = lengths.iter().flat_map(|&n| 0..n as u32).collect();
        let words = self.word.index_select(&Tensor::new(ids, device)?, 0)?;
        let position = self
            .position
            .index_select(&Tensor::new(positions.as_slice(), device)?, 0)?;
        let token_type = self.token_type.narrow(0, 0, 1)?;
        let embedded = (words + position)?.broadcast_add(&token_type)?;
        let mut hidden = self.embedding_norm.forward(&embedded)?;
        let packing = Packing::new(lengths)?;
        for layer in &self.layers[..self.first_trained] {
            hidden = self.layer(layer, &hidden, &packing)?;
        }
        Ok(hidden)
    }

    fn embed_frozen_inner(
        &self,
        frozen: &Tensor,
        lengths: &[usize],
    ) -> candle_core::Result<Tensor> {
        let packing = Packing::new(lengths)?;
        let mut hidden = frozen.clone();
        for layer in &self.layers[self.first_trained..] {
            hidden = self.layer(layer, &hidden, &packing)?;
        }
        // Padding rows are zeros: the sum over positions is the sum over real tokens.
        let summed = packing.pad(&hidden)?.sum(1)?;
        let mean = summed.broadcast_div(&packing.counts)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
        mean.broadcast_div(&norm)
    }

    /// One encoder layer over packed rows (tokens × hidden).
    fn layer(&self, layer: &Layer, x: &Tensor, packing: &Packing) -> candle_core::Result<Tensor> {
        let (batch, tokens) = (packing.batch, packing.longest);
        let hidden = x.dim(1)?;
        let heads = self.shape.heads;
        let head_width = hidden / heads;
        let split = |t: Tensor| -> candle_core::Result<Tensor> {
            packing
                .pad(&t)?
                .reshape((batch, tokens, heads, head_width))?
                .transpose(1, 2)?
                .contiguous()
        };
        let q = split(layer.query.forward(x)?)?;
        let k = split(layer.key.forward(x)?)?;
        let v = split(layer.value.forward(x)?)?;
        // candle's matmul here: k is a head's 32 columns or the tokens (at most 512, see
        // `check`), which gemm sums in one pass on every CPU.
        let scores =
            (q.matmul(&k.t()?)? / (head_width as f64).sqrt())?.broadcast_add(&packing.bias)?;
        let probabilities = softmax_last(&scores)?;
        let context = probabilities
            .matmul(&v)?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((batch * tokens, hidden))?
            .index_select(&packing.packed, 0)?;
        let attended = layer
            .attention_norm
            .forward(&(layer.attention_out.forward(&context)? + x)?)?;
        let inner = layer.intermediate.forward(&attended)?.apply_op1(Gelu)?;
        layer
            .output_norm
            .forward(&(layer.output.forward(&inner)? + attended)?)
    }
}

/// Where a batch's real tokens sit among its padded positions (batch × longest): the map
/// from packed rows to padded positions and back, the attention's bias and each text's
/// token count.
struct Packing {
    batch: usize,
    longest: usize,
    /// Each padded position's packed row; padding points past the last row, at a zero row.
    padded: Tensor,
    /// Each packed row's padded position.
    packed: Tensor,
    /// 0 for real tokens, a large negative number for padding, on every head and query:
    /// (batch, 1, 1, longest).
    bias: Tensor,
    /// Each text's token count, (batch, 1) f32.
    counts: Tensor,
}

impl Packing {
    fn new(lengths: &[usize]) -> candle_core::Result<Packing> {
        let batch = lengths.len();
        let longest = lengths.iter().copied().max().unwrap_or(1).max(1);
        let rows: usize = lengths.iter().sum();
        let mut padded = vec![rows as u32; batch * longest];
        let mut packed = Vec::with_capacity(rows);
        let mut bias = vec![-10_000f32; batch * longest];
        let mut row = 0u32;
        for (text, &length) in lengths.iter().enumerate() {
            for position in text * longest..text * longest + length {
                padded[position] = row;
                packed.push(position as u32);
                bias[position] = 0.0;
                row += 1;
            }
        }
        let device = &Device::Cpu;
        let counts: Vec<f32> = lengths.iter().map(|&n| n as f32).collect();
        Ok(Packing {
            batch,
            longest,
            padded: Tensor::from_vec(padded, batch * longest, device)?,
            packed: Tensor::from_vec(packed, rows, device)?,
            bias: Tensor::from_vec(bias, (batch, 1, 1, longest), device)?,
            counts: Tensor::from_vec(counts, (batch, 1), device)?,
        })
    }

    /// Packed rows (rows × width) laid out padded, (batch, longest, width), zeros at the
    /// padding.
    fn pad(&self, rows: &Tensor) -> candle_core::Result<Tensor> {
        let width = rows.dim(1)?;
        let zero = Tensor::zeros((1, width), rows.dtype(), rows.device())?;
        Tensor::cat(&[rows, &zero], 0)?
            .index_select(&self.padded, 0)?
            .reshape((self.batch, self.longest, width))
    }
}

fn softmax_last(x: &Tensor) -> candle_core::Result<Tensor> {
    x.contiguous()?.apply_op1(Softmax)
}

/// Load every tensor of a safetensors file on the CPU.
pub fn load_tensors(path: &std::path::Path) -> Result<HashMap<String, Tensor>> {
    candle_core::safetensors::load(path, &Device::Cpu).map_err(|e| Error::Weights {
        file: path.display().to_string(),
        problem: e.to_string(),
    })
}
