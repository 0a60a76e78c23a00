//! Family `norm` on the host: LayerNorm and RMSNorm over the last dimension of rows x cols,
//! f32 or bf16, weight (and bias for LayerNorm) per column, eps a parameter.
//!
//! Variance is two-pass around the mean in every variant (see `kernels-gpu/src/norm/mod.rs`);
//! the tests include inputs of 1000 + U(-1, 1), where `E[x^2] - E[x]^2` in f32 would lose
//! every digit. Tolerances: f32 rel 1e-5 + a term for the row sums (chain of cols/32 terms,
//! 2^-24 each) and abs 1e-5 (outputs are O(1)); for the large-mean inputs the f32 mean itself
//! drifts by a random walk of 2^-24 * 1000 steps, which shifts every output: abs
//! 1.6e-4 * sqrt(cols / 32 + 10) (1.9e-3 at 4096) there; bf16 rel 8e-3 and abs 2e-2 (one rounding of an output of
//! magnitude up to ~4).

use rooflab_kernels::norm::{v01_two_pass, v02_fused_block, v03_fused_vectorized};
use rooflab_kernels::softmax::{ROW_MAX_COLS, row_threads};

use super::fused_elementwise::{Buf, Dtype, check_dims, expect_buf, leak, par_map};
use super::softmax::RowStats;
use crate::bench::{Case, TorchSpec, Workload, rotation_sets};
use crate::check::{compare_f32, random_f32, rng};
use crate::cost::{Bytes, Cost, Flops};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, LaunchConfig};
use crate::kernel_args;
use crate::testing::{GpuTest, expect_error};

pub const FAMILY: &str = "norm";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    LayerNorm,
    RmsNorm,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::LayerNorm => "layernorm",
            Kind::RmsNorm => "rmsnorm",
        }
    }
    fn torch(self) -> &'static str {
        match self {
            Kind::LayerNorm => "layer_norm",
            Kind::RmsNorm => "rms_norm",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01TwoPass,
    V02FusedBlock,
    V03FusedVectorized,
}

pub const LADDER: [Variant; 3] = [
    Variant::V01TwoPass,
    Variant::V02FusedBlock,
    Variant::V03FusedVectorized,
];

impl Variant {
    pub fn stem(self) -> &'static str {
        match self {
            Variant::V01TwoPass => "v01_two_pass",
            Variant::V02FusedBlock => "v02_fused_block",
            Variant::V03FusedVectorized => "v03_fused_vectorized",
        }
    }
    pub fn entry(self, k: Kind, dt: Dtype) -> String {
        format!("{FAMILY}_{}_{}_{}", self.stem(), k.name(), dt.name())
    }
    /// v01 reads x 3 (LayerNorm) or 2 (RMSNorm) times and writes y, plus mean and rstd
    /// (written, read back); the fused variants are modelled at the minimum.
    pub fn modelled(self, k: Kind, dt: Dtype, rows: u64, cols: u64) -> Cost {
        let base = cost(k, dt, rows, cols);
        match self {
            Variant::V01TwoPass => {
                let passes = match k {
                    Kind::LayerNorm => v01_two_pass::PASSES.0,
                    Kind::RmsNorm => v01_two_pass::PASSES.1,
                };
                let params = if k == Kind::LayerNorm { 2 } else { 1 };
                base.with_modelled(
                    dt.bytes(passes * rows * cols + params * cols) + Bytes(16 * rows),
                )
            }
            _ => base,
        }
    }
}

/// x read, y written, weight (and bias) read once. FLOPs per element: LayerNorm 8 (sum,
/// deviation, square-add, normalize, scale, shift), RMSNorm 5.
pub fn cost(k: Kind, dt: Dtype, rows: u64, cols: u64) -> Cost {
    let (f, params) = match k {
        Kind::LayerNorm => (8, 2),
        Kind::RmsNorm => (5, 1),
    };
    Cost::new(
        Flops(f * rows * cols),
        dt.bytes(2 * rows * cols + params * cols),
    )
}

/// The inputs of one normalization.
pub struct NormArgs<'a> {
    pub x: &'a Buf,
    pub weight: &'a Buf,
    /// LayerNorm only (ignored for RMSNorm; pass the weight or anything of the right shape).
    pub bias: &'a Buf,
    pub eps: f32,
}

/// Normalize each row of `x` (rows x cols) into `y`. v01 needs `stats` (mean, rstd per row:
/// `RowStats.max` holds the mean, `.sum` the rstd). v03 refuses rows longer than 16384.
#[allow(clippy::too_many_arguments)]
pub fn norm(
    gpu: &Gpu,
    v: Variant,
    k: Kind,
    rows: usize,
    cols: usize,
    a: &NormArgs<'_>,
    y: &mut Buf,
    stats: Option<&mut RowStats>,
) -> Result<()> {
    let dt = a.x.dtype();
    let op = v.entry(k, dt);
    check_dims(&op, rows, cols, false)?;
    expect_buf(&op, "x", a.x, dt, rows * cols)?;
    expect_buf(&op, "y", y, dt, rows * cols)?;
    expect_buf(&op, "weight", a.weight, dt, cols)?;
    if k == Kind::LayerNorm {
        expect_buf(&op, "bias", a.bias, dt, cols)?;
    }
    if !(a.eps >= 0.0 && a.eps.is_finite()) {
        return Err(Error::Shape {
            op,
            what: format!("eps = {} must be finite and >= 0", a.eps),
        });
    }
    if v == Variant::V03FusedVectorized && cols > ROW_MAX_COLS as usize {
        return Err(Error::Shape {
            op,
            what: format!(
                "rows of {cols} elements do not fit on chip (this variant holds at most \
                 {ROW_MAX_COLS}); use v02_fused_block"
            ),
        });
    }
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let (xa, wa, ba, ya, c, eps) = (
        a.x.addr(),
        a.weight.addr(),
        a.bias.addr(),
        y.addr(),
        cols as u32,
        a.eps,
    );
    let per_row = |b: u32, shared: u32| LaunchConfig::one_block_per_row(rows, b, shared);
    // SAFETY (every launch): buffers checked above to hold rows x cols / cols elements of
    // dt, statistics `rows` f32; argument lists match the entries; one block per row.
    unsafe {
        match v {
            Variant::V01TwoPass => {
                let (m, r) = RowStats::require(stats, rows, &op, "v01_two_pass")?;
                let cfg = per_row(v01_two_pass::BLOCK_THREADS, v01_two_pass::SHARED_BYTES);
                let name =
                    |s: &str| format!("{FAMILY}_v01_two_pass_{s}_{}_{}", k.name(), dt.name());
                gpu.launch(&name("stats"), cfg, &kernel_args![xa, m, r, c, eps])?;
                gpu.launch(&name("apply"), cfg, &kernel_args![xa, m, r, wa, ba, ya, c])
            }
            Variant::V02FusedBlock => gpu.launch(
                &op,
                per_row(
                    v02_fused_block::BLOCK_THREADS,
                    v02_fused_block::SHARED_BYTES,
                ),
                &kernel_args![xa, wa, ba, ya, c, eps],
            ),
            Variant::V03FusedVectorized => gpu.launch(
                &op,
                per_row(row_threads(c), v03_fused_vectorized::SHARED_BYTES),
                &kernel_args![xa, wa, ba, ya, c, eps],
            ),
        }
    }
}

// ---------------------------------------------------------------- reference and checks

/// f64 reference, two-pass variance.
pub fn norm_ref(
    k: Kind,
    rows: usize,
    cols: usize,
    x: &[f32],
    w: &[f32],
    b: &[f32],
    eps: f32,
) -> Vec<f32> {
    par_map(rows, |r| {
        let row = &x[r * cols..(r + 1) * cols];
        let n = cols as f64;
        let mean = if k == Kind::LayerNorm {
            row.iter().map(|&v| v as f64).sum::<f64>() / n
        } else {
            0.0
        };
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
        let rstd = 1.0 / (var + eps as f64).sqrt();
        row.iter()
            .enumerate()
            .map(|(j, &v)| {
                let mut o = (v as f64 - mean) * rstd * w[j] as f64;
                if k == Kind::LayerNorm {
                    o += b[j] as f64;
                }
                o as f32
            })
            .collect::<Vec<_>>()
    })
    .concat()
}

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

/// One check: fresh inputs (uniform [-2, 2), or 1000 + U(-1, 1) when `large_mean`), poisoned
/// output, every element compared.
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
    let mut r = rng(seed);
    let q = |v: Vec<f32>| v.into_iter().map(|x| dt.quantize(x)).collect::<Vec<_>>();
    let x = if large_mean {
        q(random_f32(&mut r, rows * cols, 999.0, 1001.0))
    } else {
        q(random_f32(&mut r, rows * cols, -2.0, 2.0))
    };
    let w = q(random_f32(&mut r, cols, 0.5, 1.5));
    let b = q(random_f32(&mut r, cols, -0.5, 0.5));
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
    // A bf16 input of 1000 + U(-1, 1) is quantized to steps of 4: the deviations are whole
    // multiples of 4 around the mean, fine for both sides (the reference sees the same values).
    let (rel, abs) = tolerance(dt, cols, large_mean);
    let what = format!(
        "{} {rows}x{cols} large_mean={large_mean} seed={seed}",
        v.entry(k, dt)
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

pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for k in [Kind::LayerNorm, Kind::RmsNorm] {
        for dt in Dtype::ALL {
            for v in LADDER {
                t.push(GpuTest::new(
                    format!("{}_matches_cpu", v.entry(k, dt)),
                    move |gpu| {
                        for (i, &(rows, cols)) in
                            crate::testing::matrices(&TEST_SHAPES).iter().enumerate()
                        {
                            if v == Variant::V03FusedVectorized && cols > ROW_MAX_COLS as usize {
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

// ---------------------------------------------------------------- bench

struct NormWork {
    v: Variant,
    k: Kind,
    dt: Dtype,
    rows: usize,
    cols: usize,
    xs: Vec<Buf>,
    w: Buf,
    b: Buf,
    y: Buf,
    stats: RowStats,
    seed: u64,
}

impl Workload for NormWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check(
            gpu, self.v, self.k, self.dt, self.rows, self.cols, false, self.seed,
        )
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let a = NormArgs {
            x: &self.xs[i % self.xs.len()],
            weight: &self.w,
            bias: &self.b,
            eps: EPS,
        };
        norm(
            gpu,
            self.v,
            self.k,
            self.rows,
            self.cols,
            &a,
            &mut self.y,
            Some(&mut self.stats),
        )
    }
}

pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let cols = 4096;
    let rows = match size {
        Some(s) => (s as usize / cols).max(1),
        None if quick => 2048,
        None => 16384,
    };
    let mut out = Vec::new();
    for k in [Kind::LayerNorm, Kind::RmsNorm] {
        for dt in Dtype::ALL {
            for v in LADDER {
                let c = v.modelled(k, dt, rows as u64, cols as u64);
                out.push(Case {
                    family: FAMILY,
                    variant: leak(format!("{}_{}_{}", v.stem(), k.name(), dt.name())),
                    ladder: leak(format!("{}_{}", k.name(), dt.name())),
                    shape: format!("{rows}x{cols}"),
                    note: String::new(),
                    cost: c,
                    torch: Some(TorchSpec {
                        op: k.torch().into(),
                        shape: vec![rows as u64, cols as u64],
                        dtype: dt.torch().into(),
                    }),
                    prepare: Box::new(move |gpu: &Gpu| {
                        let mut r = rng(seed + 11);
                        let xs = (0..rotation_sets(c.min_bytes.0, gpu.info.l2_bytes))
                            .map(|_| {
                                Buf::upload(gpu, dt, &random_f32(&mut r, rows * cols, -2.0, 2.0))
                            })
                            .collect::<Result<Vec<_>>>()?;
                        Ok(Box::new(NormWork {
                            v,
                            k,
                            dt,
                            rows,
                            cols,
                            xs,
                            w: Buf::upload(gpu, dt, &random_f32(&mut r, cols, 0.5, 1.5))?,
                            b: Buf::upload(gpu, dt, &random_f32(&mut r, cols, -0.5, 0.5))?,
                            y: Buf::alloc(gpu, dt, rows * cols)?,
                            stats: RowStats::alloc(gpu, rows)?,
                            seed,
                        }) as Box<dyn Workload>)
                    }),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_is_exact_on_a_hand_case() {
        // Row [1, 3]: mean 2, var 1, rstd = 1/sqrt(1 + 0) -> [-1, 1] * w + b.
        let y = norm_ref(
            Kind::LayerNorm,
            1,
            2,
            &[1.0, 3.0],
            &[2.0, 1.0],
            &[0.5, 0.0],
            0.0,
        );
        assert_eq!(y, vec![-1.5, 1.0]);
        // RMS of [3, 4] over 2: sqrt(12.5).
        let y = norm_ref(
            Kind::RmsNorm,
            1,
            2,
            &[3.0, 4.0],
            &[1.0, 1.0],
            &[0.0, 0.0],
            0.0,
        );
        assert!((y[0] - 3.0 / 12.5f32.sqrt()).abs() < 1e-6);
    }

    #[test]
    fn large_mean_reference_is_stable() {
        // 1000 + small deviations: the f64 two-pass reference keeps unit variance output.
        let x: Vec<f32> = (0..1000)
            .map(|i| 1000.0 + if i % 2 == 0 { 0.5 } else { -0.5 })
            .collect();
        let y = norm_ref(
            Kind::LayerNorm,
            1,
            1000,
            &x,
            &[1.0; 1000],
            &[0.0; 1000],
            0.0,
        );
        assert!(y.iter().all(|v| (v.abs() - 1.0).abs() < 1e-5));
    }

    #[test]
    fn cost_model() {
        assert_eq!(
            cost(Kind::LayerNorm, Dtype::F32, 2, 3).min_bytes,
            Bytes(4 * (12 + 6))
        );
        assert_eq!(
            cost(Kind::RmsNorm, Dtype::Bf16, 2, 3).min_bytes,
            Bytes(2 * (12 + 3))
        );
        let m = Variant::V01TwoPass.modelled(Kind::LayerNorm, Dtype::F32, 16384, 4096);
        assert!((m.modelled_bytes.0 as f64 / m.min_bytes.0 as f64 - 2.0).abs() < 1e-2);
    }

    #[test]
    fn entries_exist_in_the_ptx() {
        let ptx = crate::ptx::BUILT[0].1;
        for k in [Kind::LayerNorm, Kind::RmsNorm] {
            for dt in Dtype::ALL {
                for v in &LADDER[1..] {
                    assert!(ptx.contains(&format!(".entry {}(", v.entry(k, dt))));
                }
                for s in ["stats", "apply"] {
                    assert!(ptx.contains(&format!(
                        ".entry norm_v01_two_pass_{s}_{}_{}(",
                        k.name(),
                        dt.name()
                    )));
                }
            }
        }
    }
}
