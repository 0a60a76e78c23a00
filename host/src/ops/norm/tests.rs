//! norm: the GPU correctness tests (every variant, kind and dtype against the CPU reference,
//! with ordinary and large-mean inputs, and bad input), and the check the bench reuses.

use rooflab_kernels::norm::v03_fused_vectorized::ROW_MAX_COLS;

use super::launch::{Kind, LADDER, NormArgs, Variant, norm};
use super::reference::norm_ref;
use crate::check::{compare_f32, random_f32, rng};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::tensor::{Buf, Dtype, RowStats};
use crate::testing::{GpuTest, expect_error};

/// (rel, abs); see the module header.
pub fn tolerance(dt: Dtype, cols: usize, large_mean: bool) -> (f32, f32) {
    let rel = 1e-5 + 6e-8 * (cols as f32 / 32.0 + 10.0);
    match dt {
        // The f32 mean of values near 1000 drifts by a random walk of 2^-24 * 1000 steps over
        // the sum's chain; every output shifts by that times rstd * w (<= ~2.7).
        Dtype::F32 => (
            rel,
            if large_mean {
                1.6e-4 * (cols as f32 / 32.0 + 10.0).sqrt()
            } else {
                1e-5
            },
        ),
        Dtype::Bf16 => (8e-3 + rel, 2e-2),
    }
}

pub const EPS: f32 = 1e-5;

/// The spread of the large-mean inputs around 1000, per dtype: f32 takes U(-1, 1); bf16's
/// values near 1000 are 4 apart, so U(-1, 1) would round every element to 1000.0 (constant
/// rows: LayerNorm would just return the bias, and a kernel that ignored x would pass), and
/// bf16 takes U(-32, 32): 16 distinct values a row, still a mean 50 standard deviations away
/// from zero.
pub fn large_mean_spread(dt: Dtype) -> f32 {
    match dt {
        Dtype::F32 => 1.0,
        Dtype::Bf16 => 32.0,
    }
}

/// Fresh inputs of a check, already rounded to `dt`: x (uniform [-2, 2), or 1000 ±
/// [`large_mean_spread`] when `large_mean`), weight in [0.5, 1.5), bias in [-0.5, 0.5).
pub fn inputs(
    dt: Dtype,
    rows: usize,
    cols: usize,
    large_mean: bool,
    seed: u64,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut r = rng(seed);
    let q = |v: Vec<f32>| v.into_iter().map(|x| dt.quantize(x)).collect::<Vec<_>>();
    let x = if large_mean {
        let s = large_mean_spread(dt);
        q(random_f32(&mut r, rows * cols, 1000.0 - s, 1000.0 + s))
    } else {
        q(random_f32(&mut r, rows * cols, -2.0, 2.0))
    };
    let w = q(random_f32(&mut r, cols, 0.5, 1.5));
    let b = q(random_f32(&mut r, cols, -0.5, 0.5));
    (x, w, b)
}

/// One check: fresh inputs ([`inputs`]), poisoned output, every element compared.
#[allow(clippy::too_many_arguments)]
pub fn check(
    gpu: &Gpu,
    v: Variant,
    k: Kind,
    dt: Dtype,
    rows: usize,
    cols: usize,
    large_mean: bool,
    seed: u64,
) -> Result<()> {
    let (x, w, b) = inputs(dt, rows, cols, large_mean, seed);
    let (dx, dw, db) = (
        Buf::upload(gpu, dt, &x)?,
        Buf::upload(gpu, dt, &w)?,
        Buf::upload(gpu, dt, &b)?,
    );
    let mut y = Buf::alloc(gpu, dt, rows * cols)?;
    y.poison(gpu)?;
    let mut st = RowStats::alloc(gpu, rows)?;
    let a = NormArgs {
        x: &dx,
        weight: &dw,
        bias: &db,
        eps: EPS,
    };
    norm(gpu, v, k, rows, cols, &a, &mut y, Some(&mut st))?;
    gpu.sync()?;
    let got = y.to_f32()?;
    let want = norm_ref(k, rows, cols, &x, &w, &b, EPS);
    let (rel, abs) = tolerance(dt, cols, large_mean);
    let what = format!(
        "{} {rows}x{cols} large_mean={large_mean} seed={seed}",
        v.name(k, dt)
    );
    compare_f32(&what, &got, &want, rel, abs).map_err(Error::Mismatch)
}

/// Hidden sizes 1, 7, 768, 1000, 1001 (odd: scalar path), 4096, 8192, 16384, and 20000 (past
/// v03's on-chip limit: v03 is checked to refuse it instead).
pub const TEST_SHAPES: [(usize, usize); 9] = [
    (3, 1),
    (5, 7),
    (33, 768),
    (17, 1000),
    (13, 1001),
    (9, 4096),
    (5, 8192),
    (3, 16384),
    (2, 20000),
];

/// The family's GPU tests: every variant against the CPU reference, and bad input.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for k in Kind::ALL {
        for dt in Dtype::ALL {
            for v in LADDER {
                t.push(GpuTest::new(
                    format!("{}_matches_cpu", v.name(k, dt)),
                    move |gpu| {
                        for (i, &(rows, cols)) in
                            crate::testing::matrices(&TEST_SHAPES).iter().enumerate()
                        {
                            if v.holds_row() && cols > ROW_MAX_COLS as usize {
                                continue;
                            }
                            for large_mean in [false, true] {
                                check(gpu, v, k, dt, rows, cols, large_mean, seed + i as u64)?;
                            }
                        }
                        Ok(())
                    },
                ));
            }
        }
    }
    t.push(GpuTest::new(
        "norm_bad_input_is_refused_before_launch",
        |gpu| {
            let x = Buf::upload(gpu, Dtype::F32, &[1.0; 12])?;
            let w = Buf::upload(gpu, Dtype::F32, &[1.0; 4])?;
            let w5 = Buf::upload(gpu, Dtype::F32, &[1.0; 5])?;
            let mut y = Buf::alloc(gpu, Dtype::F32, 12)?;
            for v in LADDER {
                let mut st = RowStats::alloc(gpu, 3)?;
                let bad_w = NormArgs {
                    x: &x,
                    weight: &w5,
                    bias: &w,
                    eps: EPS,
                };
                expect_error(
                    norm(gpu, v, Kind::RmsNorm, 3, 4, &bad_w, &mut y, Some(&mut st)),
                    &["weight has 5", "4"],
                )?;
                let bad_b = NormArgs {
                    x: &x,
                    weight: &w,
                    bias: &w5,
                    eps: EPS,
                };
                expect_error(
                    norm(gpu, v, Kind::LayerNorm, 3, 4, &bad_b, &mut y, Some(&mut st)),
                    &["bias has 5"],
                )?;
                let bad_eps = NormArgs {
                    x: &x,
                    weight: &w,
                    bias: &w,
                    eps: -1.0,
                };
                expect_error(
                    norm(
                        gpu,
                        v,
                        Kind::LayerNorm,
                        3,
                        4,
                        &bad_eps,
                        &mut y,
                        Some(&mut st),
                    ),
                    &["eps"],
                )?;
                let e = Buf::alloc(gpu, Dtype::F32, 0)?;
                let mut ye = Buf::alloc(gpu, Dtype::F32, 0)?;
                let empty = NormArgs {
                    x: &e,
                    weight: &w,
                    bias: &w,
                    eps: EPS,
                };
                norm(
                    gpu,
                    v,
                    Kind::LayerNorm,
                    0,
                    4,
                    &empty,
                    &mut ye,
                    Some(&mut st),
                )?;
            }
            let long = Buf::alloc(gpu, Dtype::F32, 20000)?;
            let wl = Buf::alloc(gpu, Dtype::F32, 20000)?;
            let mut yl = Buf::alloc(gpu, Dtype::F32, 20000)?;
            let a = NormArgs {
                x: &long,
                weight: &wl,
                bias: &wl,
                eps: EPS,
            };
            expect_error(
                norm(
                    gpu,
                    Variant::V03FusedVectorized,
                    Kind::LayerNorm,
                    1,
                    20000,
                    &a,
                    &mut yl,
                    None,
                ),
                &["20000", "16384"],
            )
        },
    ));
    t
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    /// The planted bug the old bf16 large-mean inputs let through: rows that rounded to a
    /// constant, where "return the bias" is the right LayerNorm answer. Now the rows vary,
    /// and a kernel that returns the bias (ignores x) fails the check.
    #[test]
    fn bf16_large_mean_rows_are_not_constant() {
        let (rows, cols) = (4, 768);
        let (x, w, b) = inputs(Dtype::Bf16, rows, cols, true, 11);
        for r in 0..rows {
            let mut vals: Vec<u32> = x[r * cols..(r + 1) * cols].iter().map(|v| v.to_bits()).collect();
            vals.sort_unstable();
            vals.dedup();
            assert!(vals.len() >= 8, "row {r}: {} distinct values", vals.len());
        }
        let old: Vec<f32> = random_f32(&mut rng(11), rows * cols, 999.0, 1001.0)
            .into_iter()
            .map(|v| Dtype::Bf16.quantize(v))
            .collect();
        assert!(old.iter().all(|&v| v == 1000.0), "the old inputs were constant");
        let want = norm_ref(Kind::LayerNorm, rows, cols, &x, &w, &b, EPS);
        let bias_only: Vec<f32> = (0..rows * cols).map(|i| b[i % cols]).collect();
        let (rel, abs) = tolerance(Dtype::Bf16, cols, true);
        assert!(compare_f32("planted", &bias_only, &want, rel, abs).is_err());
    }
}
