//! fused_elementwise: the GPU correctness tests (every variant, both GELU forms and both
//! dtypes against the CPU reference at awkward shapes, and bad input), and the check the
//! bench reuses.

use super::launch::{Gelu, Inputs, Intermediates, LADDER, Variant, gelu_chain};
use super::reference::chain_ref;
use crate::check::{compare_f32, random_f32, rng};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::tensor::{Buf, Dtype};
use crate::testing::{GpuTest, expect_error};

/// (rel, abs) tolerance; see the module header.
pub fn tolerance(v: Variant, dt: Dtype) -> (f32, f32) {
    match (dt, v) {
        (Dtype::F32, _) => (1e-5, 2e-6),
        (Dtype::Bf16, Variant::V01Unfused) => (1e-2, 2e-2),
        (Dtype::Bf16, _) => (8e-3, 1e-3),
    }
}

/// Host inputs of one chain (already quantized to the dtype).
pub struct HostInputs {
    pub x: Vec<f32>,
    pub scale: Vec<f32>,
    pub bias: Vec<f32>,
    pub res: Vec<f32>,
}

/// x in [-2, 2), scale in [0.5, 1.5), bias and residual in [-0.5, 0.5) / [-1, 1): |u| <= 3.5.
pub fn host_inputs(dt: Dtype, rows: usize, cols: usize, seed: u64) -> HostInputs {
    let mut r = rng(seed);
    let n = rows * cols;
    let q = |v: Vec<f32>| v.into_iter().map(|x| dt.quantize(x)).collect::<Vec<_>>();
    HostInputs {
        x: q(random_f32(&mut r, n, -2.0, 2.0)),
        scale: q(random_f32(&mut r, cols, 0.5, 1.5)),
        bias: q(random_f32(&mut r, cols, -0.5, 0.5)),
        res: q(random_f32(&mut r, n, -1.0, 1.0)),
    }
}

/// One correctness check: fresh inputs, output poisoned, every element compared.
pub fn check(
    gpu: &Gpu,
    v: Variant,
    g: Gelu,
    dt: Dtype,
    rows: usize,
    cols: usize,
    seed: u64,
) -> Result<()> {
    let h = host_inputs(dt, rows, cols, seed);
    let up = |d: &[f32]| Buf::upload(gpu, dt, d);
    let (x, s, b, r) = (up(&h.x)?, up(&h.scale)?, up(&h.bias)?, up(&h.res)?);
    let mut y = Buf::alloc(gpu, dt, rows * cols)?;
    y.poison(gpu)?;
    let mut tmp = if v == Variant::V01Unfused {
        Some(Intermediates::alloc(gpu, dt, rows * cols)?)
    } else {
        None
    };
    let inp = Inputs {
        x: &x,
        scale: &s,
        bias: &b,
        residual: &r,
    };
    gelu_chain(gpu, v, g, rows, cols, &inp, &mut y, tmp.as_mut())?;
    gpu.sync()?;
    let got = y.to_f32()?;
    let round = move |u: f64| {
        if v == Variant::V01Unfused {
            dt.quantize(u as f32) as f64
        } else {
            u
        }
    };
    let want = chain_ref(g, cols, &h.x, &h.scale, &h.bias, &h.res, round);
    let (rel, abs) = tolerance(v, dt);
    let what = format!("{} gelu={} {rows}x{cols} seed={seed}", v.name(dt), g.name());
    compare_f32(&what, &got, &want, rel, abs).map_err(Error::Mismatch)
}

/// Awkward shapes: single element, primes, odd hidden sizes (scalar scale/bias path),
/// tails of every length, and a large one.
pub const TEST_SHAPES: [(usize, usize); 8] = [
    (1, 1),
    (1, 3),
    (3, 7),
    (31, 1000),
    (17, 1001),
    (5, 4099),
    (257, 768),
    (1031, 4096),
];

/// The family's GPU tests: every variant against the CPU reference, and bad input.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for dt in Dtype::ALL {
        for v in LADDER {
            t.push(GpuTest::new(
                format!("{}_matches_cpu", v.name(dt)),
                move |gpu| {
                    for (i, &(rows, cols)) in
                        crate::testing::matrices(&TEST_SHAPES).iter().enumerate()
                    {
                        for g in [Gelu::Tanh, Gelu::Erf] {
                            check(gpu, v, g, dt, rows, cols, seed + i as u64)?;
                        }
                    }
                    Ok(())
                },
            ));
        }
    }
    t.push(GpuTest::new(
        "fused_elementwise_bad_input_is_refused_before_launch",
        |gpu| {
            let x = Buf::upload(gpu, Dtype::F32, &[1.0; 12])?;
            let s = Buf::upload(gpu, Dtype::F32, &[1.0; 4])?;
            let s_bf = Buf::upload(gpu, Dtype::Bf16, &[1.0; 4])?;
            let s5 = Buf::upload(gpu, Dtype::F32, &[1.0; 5])?;
            let mut y = Buf::alloc(gpu, Dtype::F32, 12)?;
            for v in LADDER {
                let mut tmp = Intermediates::alloc(gpu, Dtype::F32, 12)?;
                let bad_len = Inputs {
                    x: &x,
                    scale: &s5,
                    bias: &s,
                    residual: &x,
                };
                expect_error(
                    gelu_chain(gpu, v, Gelu::Tanh, 3, 4, &bad_len, &mut y, Some(&mut tmp)),
                    &["bad input", "scale", "5", "4"],
                )?;
                let bad_dt = Inputs {
                    x: &x,
                    scale: &s,
                    bias: &s_bf,
                    residual: &x,
                };
                expect_error(
                    gelu_chain(gpu, v, Gelu::Tanh, 3, 4, &bad_dt, &mut y, Some(&mut tmp)),
                    &["bias is bf16", "f32"],
                )?;
                let ok = Inputs {
                    x: &x,
                    scale: &s,
                    bias: &s,
                    residual: &x,
                };
                expect_error(
                    gelu_chain(gpu, v, Gelu::Tanh, 4, 4, &ok, &mut y, Some(&mut tmp)),
                    &["x has 12 elements, expected 16"],
                )?;
                expect_error(
                    gelu_chain(
                        gpu,
                        v,
                        Gelu::Tanh,
                        1 << 20,
                        1 << 12,
                        &ok,
                        &mut y,
                        Some(&mut tmp),
                    ),
                    &["elements", "limit"],
                )?;
            }
            let ok = Inputs {
                x: &x,
                scale: &s,
                bias: &s,
                residual: &x,
            };
            expect_error(
                gelu_chain(gpu, Variant::V01Unfused, Gelu::Erf, 3, 4, &ok, &mut y, None),
                &["intermediate"],
            )?;
            // Zero rows: defined (nothing to do), nothing launched.
            let e = Buf::alloc(gpu, Dtype::F32, 0)?;
            let mut ye = Buf::alloc(gpu, Dtype::F32, 0)?;
            let empty = Inputs {
                x: &e,
                scale: &s,
                bias: &s,
                residual: &e,
            };
            for v in LADDER {
                gelu_chain(gpu, v, Gelu::Erf, 0, 4, &empty, &mut ye, None)?;
            }
            Ok(())
        },
    ));
    t
}
