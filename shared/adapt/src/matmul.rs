//! A matrix product whose sums run in one order on every x86-64 CPU, and its gradient.
//!
//! candle's CPU matmul calls `gemm`, which cuts the inner dimension k into blocks sized
//! from the CPU's cache geometry (read from /sys, else cpuid) once k passes 512: a
//! 1536-wide product is summed as 3 × 512 on one CPU and 2 × 768 on another, so the same
//! training gave different weights on three machines of one kind (CLINC150 validation
//! after adaptation 92.90, 93.00, 92.97). Here k is cut into blocks of at most
//! [`K_BLOCK`] before `gemm` sees it (at or below 512 it never cuts), the blocks' products
//! are added in order, and the gradient's two products are made the same way. What
//! remains CPU-dependent in `gemm` is the choice of kernel, and every x86-64 CPU with AVX2
//! and FMA (x86-64-v3) takes the same one: each output is one fused multiply-add chain
//! along k per block (a CPU without FMA takes the scalar kernel and sums otherwise). Cost:
//! a copy of each operand and one pass over the output per block after the first, about 5%
//! of a training's time.

use candle_core::{CpuStorage, CustomOp2, Device, Layout, Result, Shape, Tensor};

/// The widest block of k that `gemm` sums in one pass on every CPU (its `kernel_params`
/// never cuts k at or below 512, whatever the caches).
pub const K_BLOCK: usize = 512;

/// `a · b` for 2-D f32 tensors, summed in a fixed order (see the module), with gradient.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.apply_op2(b, FixedOrderMatmul)
}

struct FixedOrderMatmul;

/// k cut into the fewest blocks of at most [`K_BLOCK`], of equal widths (the first ones one
/// wider): no block is so narrow that gemm would take its k ≤ 2 path for it.
fn blocks(k: usize) -> impl Iterator<Item = (usize, usize)> {
    let count = k.div_ceil(K_BLOCK).max(1);
    let (base, wider) = (k / count, k % count);
    (0..count).scan(0, move |start, i| {
        let width = base + usize::from(i < wider);
        let block = (*start, width);
        *start += width;
        Some(block)
    })
}

/// One 2-D operand gathered into a row-major tensor (a copy of m·k values beside a product
/// of m·n·k: noise), so the blocks below are plain narrowed views.
fn gather(storage: &CpuStorage, layout: &Layout) -> Result<Tensor> {
    let (rows, columns) = layout.shape().dims2()?;
    let data = storage.as_slice::<f32>()?;
    let (start, stride) = (layout.start_offset(), layout.stride());
    let values: Vec<f32> = match layout.contiguous_offsets() {
        Some((start, end)) => data[start..end].to_vec(),
        // A transposed row-major matrix (a weight, or activations in the gradient): copied
        // tile by tile, so that reads and writes both stay within a few cache lines.
        None if stride == [1, rows] => transpose(&data[start..], columns, rows),
        None => (0..rows)
            .flat_map(|r| (0..columns).map(move |c| start + r * stride[0] + c * stride[1]))
            .map(|i| data[i])
            .collect(),
    };
    Tensor::from_vec(values, (rows, columns), &Device::Cpu)
}

/// The transpose of the row-major `rows × columns` matrix at the start of `data`.
fn transpose(data: &[f32], rows: usize, columns: usize) -> Vec<f32> {
    const TILE: usize = 32;
    let mut out = vec![0f32; rows * columns];
    for r0 in (0..rows).step_by(TILE) {
        for c0 in (0..columns).step_by(TILE) {
            for r in r0..(r0 + TILE).min(rows) {
                for c in c0..(c0 + TILE).min(columns) {
                    out[c * rows + r] = data[r * columns + c];
                }
            }
        }
    }
    out
}

impl CustomOp2 for FixedOrderMatmul {
    fn name(&self) -> &'static str {
        "fixed-order-matmul"
    }

    fn cpu_fwd(
        &self,
        a_storage: &CpuStorage,
        a_layout: &Layout,
        b_storage: &CpuStorage,
        b_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let a = gather(a_storage, a_layout)?;
        let b = gather(b_storage, b_layout)?;
        let k = a.dim(1)?;
        // Each block is a product gemm sums in one pass; the blocks add in order.
        let mut total: Option<Tensor> = None;
        for (start, width) in blocks(k) {
            let block = a
                .narrow(1, start, width)?
                .matmul(&b.narrow(0, start, width)?)?;
            total = Some(match total {
                None => block,
                Some(sum) => (sum + block)?,
            });
        }
        let total = match total {
            Some(total) => total,
            None => a.matmul(&b)?, // unreachable: blocks(k) has one block even for k = 0
        };
        let shape = total.shape().clone();
        let values = total.flatten_all()?.to_vec1::<f32>()?;
        Ok((CpuStorage::F32(values), shape))
    }

    /// d(a·b) = g · bᵀ for a and aᵀ · g for b, both in the same fixed order.
    fn bwd(
        &self,
        a: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let grad_a = grad.apply_op2_no_bwd(&b.t()?, &FixedOrderMatmul)?;
        let grad_b = a.t()?.apply_op2_no_bwd(grad, &FixedOrderMatmul)?;
        Ok((Some(grad_a), Some(grad_b)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Var;

    fn values(count: usize, seed: usize) -> Vec<f32> {
        (0..count)
            .map(|i| (((i * 7919 + seed * 104_729) % 1009) as f32 / 1009.0 - 0.5) * 2.0)
            .collect()
    }

    /// The order the module promises, written out one scalar at a time: per output, a
    /// fused multiply-add chain along each block of k, the blocks' sums added in order.
    fn reference(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut out = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut total = 0f32;
                for (block, (start, width)) in blocks(k).enumerate() {
                    let mut sum = 0f32;
                    for p in start..start + width {
                        sum = a[i * k + p].mul_add(b[p * n + j], sum);
                    }
                    total = if block == 0 { sum } else { total + sum };
                }
                out[i * n + j] = total;
            }
        }
        out
    }

    /// Bit for bit the promised order, for the shapes training multiplies (k of 384,
    /// 1536 and a batch's 2,000-odd token rows), so no CPU's cache sizes enter the sum.
    /// candle's own matmul passes this only on CPUs whose caches make gemm cut k into
    /// blocks of 512.
    #[test]
    fn sums_in_the_same_order_on_every_cpu() {
        for (m, k, n) in [(96, 384, 80), (72, 1536, 96), (80, 2050, 72), (70, 513, 66)] {
            let a = values(m * k, 1);
            let b = values(k * n, 2);
            let device = Device::Cpu;
            let ta = Tensor::from_vec(a.clone(), (m, k), &device).unwrap();
            let tb = Tensor::from_vec(b.clone(), (k, n), &device).unwrap();
            // The right operand as it is stored, and as a Linear layer's weight (n, k) seen
            // through a transpose.
            let transposed = tb.t().unwrap().contiguous().unwrap().t().unwrap();
            let want = reference(&a, &b, m, k, n);
            for (form, right) in [("stored", &tb), ("transposed", &transposed)] {
                let got = matmul(&ta, right).unwrap().flatten_all().unwrap();
                let got = got.to_vec1::<f32>().unwrap();
                let differing = got
                    .iter()
                    .zip(&want)
                    .filter(|(g, w)| g.to_bits() != w.to_bits())
                    .count();
                assert_eq!(
                    differing, 0,
                    "({m}, {k}) · ({k}, {n}) {form}: {differing} sums differ"
                );
            }
        }
    }

    /// Value and gradients agree with candle's matmul within rounding, transposed
    /// operands included (a Linear layer multiplies by its weight's transpose).
    #[test]
    fn gradients_match_candles_matmul() {
        let device = Device::Cpu;
        let (m, k, n) = (40, 1100, 24);
        let a = Var::from_vec(values(m * k, 3), (m, k), &device).unwrap();
        let w = Var::from_vec(values(n * k, 4), (n, k), &device).unwrap();
        let weights = Tensor::from_vec(values(m * n, 5), (m, n), &device).unwrap();
        let loss = |product: Tensor| (product * &weights).unwrap().sum_all().unwrap();
        let fast = matmul(a.as_tensor(), &w.as_tensor().t().unwrap()).unwrap();
        let slow = a.as_tensor().matmul(&w.as_tensor().t().unwrap()).unwrap();
        let largest = |x: Tensor, y: Tensor| {
            (x - y)
                .unwrap()
                .abs()
                .unwrap()
                .flatten_all()
                .unwrap()
                .max(0)
                .unwrap()
                .to_scalar::<f32>()
                .unwrap()
        };
        assert!(largest(fast.clone(), slow.clone()) < 1e-3);
        let fast_grads = loss(fast).backward().unwrap();
        let slow_grads = loss(slow).backward().unwrap();
        for var in [&a, &w] {
            let difference = largest(
                fast_grads.get(var).unwrap().clone(),
                slow_grads.get(var).unwrap().clone(),
            );
            assert!(difference < 1e-3, "gradients differ by {difference}");
        }
    }
}
