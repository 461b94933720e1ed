//! The learned head: what separates templates that share vocabulary, learned from the
//! templates' own texts when the index is built; no training by the user.
//!
//! Each text vector (an `nl_example`, the description, the id words) is a training row
//! labelled with its template. The logits are `s · xᵀ M c_t + b_t`: a shared metric `M`
//! (starting at the identity, so training starts from plain centroid similarity) between
//! the query and each template's centroid, plus a per-template bias. Loss: row-weighted
//! cross-entropy plus `(λ/2)‖M − I‖²`; full-batch Adam. In a catalog of more than
//! `rivals + 1` templates, a row's softmax runs over its own template and the `rivals`
//! templates whose centroids are nearest that template's (the ones it could be confused
//! with), so training grows with templates × rivals rather than templates². Nothing is
//! random, and every sum runs in a fixed order (rayon splits only over output rows), so
//! the same input gives the same bytes. What is stored is `W = s·C·Mᵀ` (templates × dimension) and `b`: at query
//! time the logits are one matrix-vector product.
//!
//! The method and its measurements: `infra/research/README.md`.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::LearnedHeadConfig;
use switchyard_vectors::embed::dot;

/// Logits `weights · q + bias`, one row per template in catalog order (datasource by
/// datasource), and the softmax temperature that calibrates them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub dimension: usize,
    #[serde(with = "crate::bytes::f32s")]
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
        // Both trainings share the centroids, hence the competitors.
        let competing = competitors(set.centroids, set.dimension, config.rivals);
        let temperature = match held_out {
            Some((without, vectors, labels)) if !labels.is_empty() => {
                let probe = fit(without, &competing, config);
                fit_temperature(&probe, vectors, labels)
            }
            _ => 1.0,
        };
        let mut head = fit(set, &competing, config);
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

/// Per template, the templates its rows are trained against (itself included), ascending:
/// every template when there are at most `rivals + 1`, else itself and its `rivals`
/// nearest by centroid cosine (ties to the lower number).
fn competitors(centroids: &[f32], d: usize, rivals: usize) -> Vec<Vec<u32>> {
    let templates = centroids.len() / d;
    if templates <= rivals + 1 {
        return vec![(0..templates as u32).collect(); templates];
    }
    (0..templates)
        .into_par_iter()
        .map(|t| {
            let own = &centroids[t * d..(t + 1) * d];
            let mut others: Vec<(f32, u32)> = (0..templates)
                .filter(|&u| u != t)
                .map(|u| (dot(own, &centroids[u * d..(u + 1) * d]), u as u32))
                .collect();
            others
                .select_nth_unstable_by(rivals - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut chosen: Vec<u32> = others[..rivals].iter().map(|&(_, u)| u).collect();
            chosen.push(t as u32);
            chosen.sort_unstable();
            chosen
        })
        .collect()
}

/// Train on `set`, each row against its template's `competing` list.
fn fit(set: &TrainingSet<'_>, competing: &[Vec<u32>], config: &LearnedHeadConfig) -> Head {
    let d = set.dimension;
    let n = set.labels.len();
    let templates = set.centroids.len() / d;
    // Every row is scored against the same number of templates.
    let width = competing.first().map_or(0, Vec::len);
    let scale = config.scale;
    let total_weight: f32 = set.row_weights.iter().sum();
    let weights: Vec<f32> = set.row_weights.iter().map(|w| w / total_weight).collect();
    // Xᵀ and Cᵀ, so each entry of the gradient is one contiguous dot product.
    let rows_t = transpose(set.rows, n, d);
    let centroids_t = transpose(set.centroids, templates, d);

    let mut metric = identity(d);
    let mut bias = vec![0.0f32; templates];
    let mut adam_metric = Adam::new(d * d);
    let mut adam_bias = Adam::new(templates);
    for epoch in 1..=config.epochs {
        // K = C·Mᵀ: row t is M·c_t.
        let k = transform(&metric, set.centroids, d);
        // G = (softmax(s·X·Kᵀ + b) − Y) · w over each row's competing templates: the loss
        // gradient over the logits (zero elsewhere).
        let mut g = vec![0.0f32; n * width];
        g.par_chunks_mut(width).enumerate().for_each(|(row, out)| {
            let x = &set.rows[row * d..(row + 1) * d];
            let label = set.labels[row];
            let against = &competing[label as usize];
            for (o, &t) in out.iter_mut().zip(against) {
                let t = t as usize;
                *o = scale * dot(x, &k[t * d..(t + 1) * d]) + bias[t];
            }
            softmax(out);
            let own = against.binary_search(&label).expect("a template competes");
            out[own] -= 1.0;
            out.iter_mut().for_each(|o| *o *= weights[row]);
        });
        // ∂L/∂M = s·Xᵀ·G·C + λ(M − I), as (Xᵀ·G)·C: G is sparse (each row's competitors
        // only) and has a column per template, so this costs d²·templates, not d²·rows.
        // A = Xᵀ·G (d × templates), each entry summed over the rows in order.
        let mut a = vec![0.0f32; d * templates];
        a.par_chunks_mut(templates)
            .enumerate()
            .for_each(|(i, out)| {
                let x_col = &rows_t[i * n..(i + 1) * n];
                for (row, &x) in x_col.iter().enumerate() {
                    let g_row = &g[row * width..(row + 1) * width];
                    for (gv, &t) in g_row.iter().zip(&competing[set.labels[row] as usize]) {
                        out[t as usize] += x * gv;
                    }
                }
            });
        let mut grad_metric = vec![0.0f32; d * d];
        grad_metric
            .par_chunks_mut(d)
            .enumerate()
            .for_each(|(i, out)| {
                let a_row = &a[i * templates..(i + 1) * templates];
                for (j, o) in out.iter_mut().enumerate() {
                    let off_identity = metric[i * d + j] - if i == j { 1.0 } else { 0.0 };
                    *o = scale * dot(a_row, &centroids_t[j * templates..(j + 1) * templates])
                        + config.l2 * off_identity;
                }
            });
        // ∂L/∂b = Σ_rows G.
        let mut grad_bias = vec![0.0f32; templates];
        for (row, label) in g.chunks_exact(width).zip(set.labels) {
            for (gv, &t) in row.iter().zip(&competing[*label as usize]) {
                grad_bias[t as usize] += gv;
            }
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
            rivals: 99,
            epochs,
            learning_rate: 0.02,
            l2: 3e-4,
            scale: 10.0,
            description_weight: 3.0,
            balance_templates: false,
        }
    }

    fn fit_all(set: &TrainingSet<'_>, config: &LearnedHeadConfig) -> Head {
        fit(
            set,
            &competitors(set.centroids, set.dimension, config.rivals),
            config,
        )
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
        let untrained = fit_all(&set, &config(0));
        let trained = fit_all(&set, &config(50));
        let margin = |head: &Head| {
            let l = head.logits(&query, 0..2);
            l[0] - l[1]
        };
        // About twice the margin; Adam's per-coordinate steps make the exact gain in this
        // four-dimensional toy depend on rounding in near-zero gradient coordinates.
        assert!(
            margin(&trained) > 1.5 * margin(&untrained),
            "{} vs {}",
            margin(&trained),
            margin(&untrained)
        );
        assert_eq!(trained, fit_all(&set, &config(50)));
        // Two templates with one rival each is still the full softmax: the same bytes.
        let one_rival = LearnedHeadConfig {
            rivals: 1,
            ..config(50)
        };
        assert_eq!(trained, fit_all(&set, &one_rival));
    }

    #[test]
    fn big_catalogs_train_each_template_against_its_nearest_rivals() {
        let centroids = [
            unit([1.0, 0.0, 0.0, 0.0]),
            unit([0.9, 0.1, 0.0, 0.0]),
            unit([0.0, 1.0, 0.0, 0.0]),
            unit([0.0, 0.0, 1.0, 0.0]),
        ]
        .concat();
        assert_eq!(competitors(&centroids, 4, 3), vec![vec![0, 1, 2, 3]; 4]);
        // Template 3 is orthogonal to all: the tie goes to the lowest number.
        assert_eq!(
            competitors(&centroids, 4, 1),
            vec![vec![0, 1], vec![0, 1], vec![1, 2], vec![0, 3]]
        );
        let rows = [
            unit([1.0, 0.0, 0.1, 0.0]),
            unit([0.9, 0.1, -0.1, 0.0]),
            unit([0.0, 1.0, 0.0, 0.1]),
            unit([0.0, 0.0, 1.0, 0.1]),
        ]
        .concat();
        let set = TrainingSet {
            dimension: 4,
            rows: &rows,
            labels: &[0, 1, 2, 3],
            row_weights: &[1.0; 4],
            centroids: &centroids,
        };
        let sampled = LearnedHeadConfig {
            rivals: 1,
            ..config(50)
        };
        let head = fit_all(&set, &sampled);
        assert_eq!(head, fit_all(&set, &sampled));
        assert_ne!(head, fit_all(&set, &config(50)));
        // Each row's own template still wins.
        for (t, row) in rows.chunks_exact(4).enumerate() {
            let logits = head.logits(row, 0..4);
            let best = (0..4)
                .max_by(|&a, &b| logits[a].total_cmp(&logits[b]))
                .unwrap();
            assert_eq!(best, t, "{logits:?}");
        }
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
