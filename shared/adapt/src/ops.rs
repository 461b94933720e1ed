//! Three operations with their gradients, one parallel pass each (the two row-wise ones over
//! rows of the last dimension): written out of primitive tensor operations they cost a
//! dozen single-threaded passes and as many temporary tensors, which made a training step
//! twice as slow. f32 only.

use candle_core::cpu::erf::erf_f32;
use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

/// The rows of a contiguous f32 tensor, and their width.
fn rows<'a>(storage: &'a CpuStorage, layout: &Layout) -> Result<(&'a [f32], usize)> {
    let data = storage.as_slice::<f32>()?;
    let (start, end) = layout
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::Msg("row op: input is not contiguous".into()))?;
    let width = *layout.shape().dims().last().unwrap_or(&1);
    Ok((&data[start..end], width))
}

/// `f(row of x, row of out)` over every row, in parallel.
fn map_rows(x: &[f32], width: usize, f: impl Fn(&[f32], &mut [f32]) + Sync) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    out.par_chunks_mut(width)
        .zip(x.par_chunks(width))
        .for_each(|(o, row)| f(row, o));
    out
}

/// `f(row of a, row of b, row of out)` over every row, in parallel.
fn map_row_pairs(
    a: &[f32],
    b: &[f32],
    width: usize,
    f: impl Fn(&[f32], &[f32], &mut [f32]) + Sync,
) -> Vec<f32> {
    let mut out = vec![0f32; a.len()];
    out.par_chunks_mut(width)
        .zip(a.par_chunks(width).zip(b.par_chunks(width)))
        .for_each(|(o, (a, b))| f(a, b, o));
    out
}

fn mean_and_inverse_deviation(row: &[f32], eps: f32) -> (f32, f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    (mean, 1.0 / (variance + eps).sqrt())
}

/// (x − mean) / sqrt(variance + eps) over the last dimension: layer norm without its
/// scale and shift, which are applied as ordinary (differentiable) products and sums.
pub struct Standardize {
    pub eps: f32,
}

impl CustomOp1 for Standardize {
    fn name(&self) -> &'static str {
        "standardize"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (x, width) = rows(storage, layout)?;
        let out = map_rows(x, width, |row, o| {
            let (mean, inverse) = mean_and_inverse_deviation(row, self.eps);
            for (o, v) in o.iter_mut().zip(row) {
                *o = (v - mean) * inverse;
            }
        });
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        let x = arg.contiguous()?;
        let grad = grad.contiguous()?;
        Ok(Some(x.apply_op2_no_bwd(
            &grad,
            &StandardizeGrad { eps: self.eps },
        )?))
    }
}

/// dx = (g − mean(g) − y · mean(g · y)) / deviation, with y and the deviation recomputed
/// from x.
struct StandardizeGrad {
    eps: f32,
}

impl CustomOp2 for StandardizeGrad {
    fn name(&self) -> &'static str {
        "standardize-grad"
    }

    fn cpu_fwd(
        &self,
        x_storage: &CpuStorage,
        x_layout: &Layout,
        g_storage: &CpuStorage,
        g_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (x, width) = rows(x_storage, x_layout)?;
        let (g, _) = rows(g_storage, g_layout)?;
        let out = map_row_pairs(x, g, width, |row, grad, o| {
            let n = width as f32;
            let (mean, inverse) = mean_and_inverse_deviation(row, self.eps);
            let mean_grad = grad.iter().sum::<f32>() / n;
            let mean_grad_y = row
                .iter()
                .zip(grad)
                .map(|(v, g)| g * (v - mean) * inverse)
                .sum::<f32>()
                / n;
            for ((o, v), g) in o.iter_mut().zip(row).zip(grad) {
                let y = (v - mean) * inverse;
                *o = (g - mean_grad - y * mean_grad_y) * inverse;
            }
        });
        Ok((CpuStorage::F32(out), x_layout.shape().clone()))
    }
}

/// Softmax over the last dimension.
pub struct Softmax;

impl CustomOp1 for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (x, width) = rows(storage, layout)?;
        let out = map_rows(x, width, |row, o| {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0f32;
            for (o, v) in o.iter_mut().zip(row) {
                *o = (v - max).exp();
                sum += *o;
            }
            for o in o.iter_mut() {
                *o /= sum;
            }
        });
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }

    fn bwd(&self, _arg: &Tensor, res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        let y = res.contiguous()?;
        let grad = grad.contiguous()?;
        Ok(Some(y.apply_op2_no_bwd(&grad, &SoftmaxGrad)?))
    }
}

/// dx = y · (g − Σ g · y).
struct SoftmaxGrad;

impl CustomOp2 for SoftmaxGrad {
    fn name(&self) -> &'static str {
        "softmax-grad"
    }

    fn cpu_fwd(
        &self,
        y_storage: &CpuStorage,
        y_layout: &Layout,
        g_storage: &CpuStorage,
        g_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (y, width) = rows(y_storage, y_layout)?;
        let (g, _) = rows(g_storage, g_layout)?;
        let out = map_row_pairs(y, g, width, |y, g, o| {
            let dot = y.iter().zip(g).map(|(y, g)| y * g).sum::<f32>();
            for ((o, y), g) in o.iter_mut().zip(y).zip(g) {
                *o = y * (g - dot);
            }
        });
        Ok((CpuStorage::F32(out), y_layout.shape().clone()))
    }
}

/// GELU in its exact (erf) form, `x · (1 + erf(x / √2)) / 2`: the values candle's
/// `gelu_erf` gives (the same `erf`), computed in parallel.
pub struct Gelu;

/// Elements per parallel piece of [`Gelu`] and its gradient.
const GELU_PIECE: usize = 4096;

/// Φ(x), the standard normal distribution's CDF, with candle's `erf`.
fn normal_cdf(x: f32) -> f32 {
    (erf_f32(x * std::f32::consts::FRAC_1_SQRT_2) + 1.) * 0.5
}

impl CustomOp1 for Gelu {
    fn name(&self) -> &'static str {
        "gelu"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (x, _) = rows(storage, layout)?;
        let out = map_rows(x, GELU_PIECE.min(x.len()).max(1), |piece, o| {
            for (o, &v) in o.iter_mut().zip(piece) {
                *o = normal_cdf(v) * v;
            }
        });
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        let x = arg.contiguous()?;
        let grad = grad.contiguous()?;
        Ok(Some(x.apply_op2_no_bwd(&grad, &GeluGrad)?))
    }
}

/// dx = g · (Φ(x) + x · φ(x)): the normal distribution's CDF and density.
struct GeluGrad;

impl CustomOp2 for GeluGrad {
    fn name(&self) -> &'static str {
        "gelu-grad"
    }

    fn cpu_fwd(
        &self,
        x_storage: &CpuStorage,
        x_layout: &Layout,
        g_storage: &CpuStorage,
        g_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (x, _) = rows(x_storage, x_layout)?;
        let (g, _) = rows(g_storage, g_layout)?;
        // 1 / √(2π)
        const DENSITY: f32 = 0.398_942_3;
        let out = map_row_pairs(x, g, GELU_PIECE.min(x.len()).max(1), |x, g, o| {
            for ((o, &v), &g) in o.iter_mut().zip(x).zip(g) {
                *o = g * (normal_cdf(v) + v * DENSITY * (-0.5 * v * v).exp());
            }
        });
        Ok((CpuStorage::F32(out), x_layout.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var, D};

    /// Each op's value and gradient against the same function written in primitive ops.
    #[test]
    fn gradients_match_the_primitive_forms() {
        let data: Vec<f32> = (0..24)
            .map(|i| ((i * 7919) % 23) as f32 / 5.0 - 2.0)
            .collect();
        let x = Var::from_vec(data, (2, 3, 4), &Device::Cpu).unwrap();
        let weights = Tensor::arange(0f32, 24.0, &Device::Cpu)
            .unwrap()
            .reshape((2, 3, 4))
            .unwrap();
        let check = |fast: Tensor, slow: Tensor| {
            let a = (fast.clone() * &weights).unwrap().sum_all().unwrap();
            let b = (slow.clone() * &weights).unwrap().sum_all().unwrap();
            let ga = a
                .backward()
                .unwrap()
                .get(&x)
                .unwrap()
                .flatten_all()
                .unwrap();
            let gb = b
                .backward()
                .unwrap()
                .get(&x)
                .unwrap()
                .flatten_all()
                .unwrap();
            let diff = |p: &Tensor, q: &Tensor| {
                (p - q)
                    .unwrap()
                    .abs()
                    .unwrap()
                    .max(0)
                    .unwrap()
                    .to_scalar::<f32>()
                    .unwrap()
            };
            assert!(diff(&fast.flatten_all().unwrap(), &slow.flatten_all().unwrap()) < 1e-5);
            assert!(
                diff(&ga, &gb) < 1e-4,
                "gradients differ by {}",
                diff(&ga, &gb)
            );
        };
        let t = x.as_tensor();
        let max = t.max_keepdim(D::Minus1).unwrap().detach();
        let e = t.broadcast_sub(&max).unwrap().exp().unwrap();
        let softmax = e.broadcast_div(&e.sum_keepdim(D::Minus1).unwrap()).unwrap();
        check(t.apply_op1(Softmax).unwrap(), softmax);
        let mean = t.mean_keepdim(D::Minus1).unwrap();
        let centred = t.broadcast_sub(&mean).unwrap();
        let variance = centred.sqr().unwrap().mean_keepdim(D::Minus1).unwrap();
        let standard = centred
            .broadcast_div(&(variance + 1e-5).unwrap().sqrt().unwrap())
            .unwrap();
        check(t.apply_op1(Standardize { eps: 1e-5 }).unwrap(), standard);
        check(t.apply_op1(Gelu).unwrap(), t.gelu_erf().unwrap());
    }
}
