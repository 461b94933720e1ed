//! The learned head: what separates templates that share vocabulary, learned from the
//! templates' own texts when the index is built; no training by the user.
//!
//! Each text vector (an `nl_example`, the description, the id words) is a training row
//! labelled with its template. The logits are `s · xᵀ M c_t + b_t`: a shared metric `M`
//! (starting at the identity, so training starts from plain centroid similarity) between
//! the query and each template's centroid, plus a per-template bias. Loss: row-weighted
//! cross-entropy plus `(λ/2)‖M − I‖²`; full-batch Adam. Nothing is random, and every sum
//! runs in a fixed order (rayon splits only over output rows), so the same input gives the
//! same bytes. What is stored is `W = s·C·Mᵀ` (templates × dimension) and `b`: at query
//! time the logits are one matrix-vector product.
//!
//! The method and its measurements: `infra/research/README.md`.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::LearnedHeadConfig;
use crate::embed::dot;

/// Logits `weights · q + bias`, one row per template in catalog order (datasource by
/// datasource), and the softmax temperature that calibrates them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub dimension: usize,
    pub weights: Vec<f32>,
    pub bias: Vec<f32>,
    /// Probabilities are `softmax(logits / temperature)`; fitted on held-out examples.
    pub temperature: f32,
}

/// Training data: unit row vectors, each with its template and weight, and the unit
/// template centroids.
pub struct TrainingSet<'a> {
    pub dimension: usize,
    pub rows: &'a [f32],
    pub labels: &'a [u32],
    pub row_weights: &'a [f32],
    pub centroids: &'a [f32],
}

impl Head {
    pub fn templates(&self) -> usize {
        self.bias.len()
    }

    /// Logits of templates `range` (global template numbers) for a unit query vector.
    pub fn logits(&self, query: &[f32], range: std::ops::Range<usize>) -> Vec<f32> {
        range
            .map(|t| {
                dot(
                    &self.weights[t * self.dimension..(t + 1) * self.dimension],
                    query,
                ) + self.bias[t]
            })
            .collect()
    }

    /// Train on `set`, then fit the temperature on the held-out rows `held_out` (their
    /// vectors and true templates) with a head trained without them.
    pub fn train(
        set: &TrainingSet<'_>,
        held_out: Option<(&TrainingSet<'_>, &[f32], &[u32])>,
        config: &LearnedHeadConfig,
    ) -> Head {
        let temperature = match held_out {
            Some((without, vectors, labels)) if !labels.is_empty() => {
                let probe = fit(without, config);
                fit_temperature(&probe, vectors, labels)
            }
            _ => 1.0,
        };
        let mut head = fit(set, config);
        head.temperature = temperature;
        head
    }
}

/// Softmax in place.
pub fn softmax(logits: &mut [f32]) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for l in logits.iter_mut() {
        *l = (*l - max).exp();
        sum += *l;
    }
    for l in logits.iter_mut() {
        *l /= sum;
    }
}

fn fit(set: &TrainingSet<'_>, config: &LearnedHeadConfig) -> Head {
    let d = set.dimension;
    let n = set.labels.len();
    let templates = set.centroids.len() / d;
    let scale = config.scale;
    let total_weight: f32 = set.row_weights.iter().sum();
    let weights: Vec<f32> = set.row_weights.iter().map(|w| w / total_weight).collect();
    // Xᵀ, so each entry of the gradient is one contiguous dot product.
    let rows_t = transpose(set.rows, n, d);

    let mut metric = identity(d);
    let mut bias = vec![0.0f32; templates];
    let mut adam_metric = Adam::new(d * d);
    let mut adam_bias = Adam::new(templates);
    for epoch in 1..=config.epochs {
        // K = C·Mᵀ: row t is M·c_t.
        let k = transform(&metric, set.centroids, d);
        // G = (softmax(s·X·Kᵀ + b) − Y) · w: the loss gradient over the logits.
        let mut g = vec![0.0f32; n * templates];
        g.par_chunks_mut(templates)
            .enumerate()
            .for_each(|(row, out)| {
                let x = &set.rows[row * d..(row + 1) * d];
                for (t, o) in out.iter_mut().enumerate() {
                    *o = scale * dot(x, &k[t * d..(t + 1) * d]) + bias[t];
                }
                softmax(out);
                out[set.labels[row] as usize] -= 1.0;
                out.iter_mut().for_each(|o| *o *= weights[row]);
            });
        // H = G·C (row by row, contiguous), then transposed (d × n).
        let mut h = vec![0.0f32; n * d];
        h.par_chunks_mut(d).enumerate().for_each(|(row, out)| {
            let g_row = &g[row * templates..(row + 1) * templates];
            for (t, gv) in g_row.iter().enumerate() {
                let c = &set.centroids[t * d..(t + 1) * d];
                out.iter_mut().zip(c).for_each(|(o, c)| *o += gv * c);
            }
        });
        let h_t = transpose(&h, n, d);
        // ∂L/∂M = s·Xᵀ·H + λ(M − I); ∂L/∂b = Σ_rows G.
        let mut grad_metric = vec![0.0f32; d * d];
        grad_metric
            .par_chunks_mut(d)
            .enumerate()
            .for_each(|(i, out)| {
                let x_col = &rows_t[i * n..(i + 1) * n];
                for (j, o) in out.iter_mut().enumerate() {
                    let off_identity = metric[i * d + j] - if i == j { 1.0 } else { 0.0 };
                    *o = scale * dot(x_col, &h_t[j * n..(j + 1) * n]) + config.l2 * off_identity;
                }
            });
        let mut grad_bias = vec![0.0f32; templates];
        for row in g.chunks_exact(templates) {
            grad_bias.iter_mut().zip(row).for_each(|(b, g)| *b += g);
        }
        adam_metric.step(&mut metric, &grad_metric, config.learning_rate, epoch);
        adam_bias.step(&mut bias, &grad_bias, config.learning_rate, epoch);
    }
    let mut weights = transform(&metric, set.centroids, d);
    weights.iter_mut().for_each(|w| *w *= scale);
    Head {
        dimension: d,
        weights,
        bias,
        temperature: 1.0,
    }
}

/// The temperature in [0.3, 3] minimising the held-out negative log-likelihood.
fn fit_temperature(head: &Head, vectors: &[f32], labels: &[u32]) -> f32 {
    let d = head.dimension;
    let logits: Vec<Vec<f32>> = vectors
        .par_chunks_exact(d)
        .map(|q| head.logits(q, 0..head.templates()))
        .collect();
    let nll = |temperature: f32| -> f64 {
        logits
            .iter()
            .zip(labels)
            .map(|(l, &y)| {
                let mut p: Vec<f32> = l.iter().map(|x| x / temperature).collect();
                softmax(&mut p);
                -f64::from(p[y as usize].max(1e-12)).ln()
            })
            .sum()
    };
    (30..=300)
        .map(|step| step as f32 / 100.0)
        .map(|t| (t, nll(t)))
        .fold((1.0, f64::INFINITY), |best, (t, loss)| {
            if loss < best.1 {
                (t, loss)
            } else {
                best
            }
        })
        .0
}

/// `A·Bᵀ` for square `a` (d × d) and row-major `b` (rows × d): row r is `a·b_r`.
fn transform(a: &[f32], b: &[f32], d: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; b.len()];
    out.par_chunks_mut(d).enumerate().for_each(|(r, out)| {
        let b_row = &b[r * d..(r + 1) * d];
        for (i, o) in out.iter_mut().enumerate() {
            *o = dot(&a[i * d..(i + 1) * d], b_row);
        }
    });
    out
}

fn transpose(m: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; m.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = m[r * cols + c];
        }
    }
    out
}

fn identity(d: usize) -> Vec<f32> {
    let mut m = vec![0.0f32; d * d];
    for i in 0..d {
        m[i * d + i] = 1.0;
    }
    m
}

/// Adam with β = (0.9, 0.999), ε = 1e-8.
struct Adam {
    m: Vec<f32>,
    v: Vec<f32>,
}

impl Adam {
    fn new(len: usize) -> Adam {
        Adam {
            m: vec![0.0; len],
            v: vec![0.0; len],
        }
    }

    fn step(&mut self, params: &mut [f32], grad: &[f32], learning_rate: f32, epoch: usize) {
        let correction_m = 1.0 - 0.9f32.powi(epoch as i32);
        let correction_v = 1.0 - 0.999f32.powi(epoch as i32);
        for ((p, g), (m, v)) in params
            .iter_mut()
            .zip(grad)
            .zip(self.m.iter_mut().zip(self.v.iter_mut()))
        {
            *m = 0.9 * *m + 0.1 * g;
            *v = 0.999 * *v + 0.001 * g * g;
            *p -= learning_rate * (*m / correction_m) / ((*v / correction_v).sqrt() + 1e-8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(epochs: usize) -> LearnedHeadConfig {
        LearnedHeadConfig {
            enabled: true,
            max_templates: 100,
            epochs,
            learning_rate: 0.02,
            l2: 3e-4,
            scale: 10.0,
            description_weight: 3.0,
        }
    }

    fn unit(v: [f32; 4]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// Two templates whose centroids nearly coincide but whose examples differ along one
    /// axis: training must learn to weigh that axis.
    #[test]
    fn training_separates_templates_with_close_centroids_and_is_deterministic() {
        let rows: Vec<f32> = [
            unit([1.0, 0.0, 0.3, 0.0]),
            unit([1.0, 0.1, 0.35, 0.0]),
            unit([1.0, 0.0, -0.3, 0.0]),
            unit([1.0, 0.1, -0.35, 0.0]),
        ]
        .concat();
        let centroids = [unit([1.0, 0.05, 0.01, 0.0]), unit([1.0, 0.05, -0.01, 0.0])].concat();
        let set = TrainingSet {
            dimension: 4,
            rows: &rows,
            labels: &[0, 0, 1, 1],
            row_weights: &[1.0; 4],
            centroids: &centroids,
        };
        let query = unit([1.0, 0.0, 0.2, 0.0]);
        let untrained = fit(&set, &config(0));
        let trained = fit(&set, &config(50));
        let margin = |head: &Head| {
            let l = head.logits(&query, 0..2);
            l[0] - l[1]
        };
        assert!(
            margin(&trained) > 2.0 * margin(&untrained),
            "{} vs {}",
            margin(&trained),
            margin(&untrained)
        );
        assert_eq!(trained, fit(&set, &config(50)));
    }

    #[test]
    fn temperature_grows_when_the_head_is_overconfident() {
        let head = Head {
            dimension: 2,
            weights: vec![20.0, 0.0, 0.0, 20.0],
            bias: vec![0.0, 0.0],
            temperature: 1.0,
        };
        // Half of the held-out rows sit on the wrong side: sharp logits are overconfident.
        let vectors = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0];
        let fitted = fit_temperature(&head, &vectors, &[0, 1, 1, 0]);
        assert!(fitted > 2.0, "{fitted}");
        let confident = fit_temperature(&head, &vectors, &[0, 1, 0, 1]);
        assert!(confident < fitted);
    }
}
