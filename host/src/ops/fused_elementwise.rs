//! Family `fused_elementwise` on the host: `y = gelu(x * scale + bias) + residual`, rows x
//! cols, scale and bias per column, f32 or bf16, GELU in its erf or tanh form.
//!
//! Also the host helpers the three fusion families share (softmax and norm use them):
//! [`Dtype`], the dtype-tagged device buffer [`Buf`], [`par_map`] for large references.
//!
//! Numerics: the kernels compute in f32; erf is Abramowitz-Stegun 7.1.26 (abs error
//! <= 1.5e-7 exactly, <= 6.5e-7 evaluated in f32: see the unit test), the tanh form is `u / (1 + e^(-2k))` with `ex2.approx` (a few ulp). The CPU
//! reference is f64 (erf by its all-positive Taylor series, exact to ~1e-15). Tolerances:
//! f32 rel 1e-5 + abs 2e-6 (|y| ~ 1 from the residual; erf's 6.5e-7 times |u|/2 <= 1.75);
//! bf16 rel 8e-3 + abs 1e-3 (one final rounding, 2^-9 relative); v01 in bf16 rounds every
//! intermediate to bf16, so its reference does too, with abs 2e-2 for a one-ulp flip of an
//! intermediate of magnitude <= 3.5 (3.5 * 2^-8 * max gelu' 1.13 = 0.0155).

use half::bf16;
use rooflab_kernels::fused_elementwise::{
    GELU_ERF, GELU_TANH, v01_unfused, v02_fused, v03_fused_vectorized,
};

use crate::bench::{Case, TorchSpec, Workload, rotation_sets};
use crate::check::{compare_f32, random_f32, rng};
use crate::cost::{Bytes, Cost, Flops};
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu, LaunchConfig};
use crate::kernel_args;
use crate::testing::{GpuTest, expect_error};

pub const FAMILY: &str = "fused_elementwise";

// ---------------------------------------------------------------- shared fusion helpers

/// Storage type of a tensor. Arithmetic is f32 either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    F32,
    Bf16,
}

impl Dtype {
    pub const ALL: [Dtype; 2] = [Dtype::F32, Dtype::Bf16];
    /// Suffix of kernel entries and bench rows.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::Bf16 => "bf16",
        }
    }
    pub fn torch(self) -> &'static str {
        match self {
            Dtype::F32 => "float32",
            Dtype::Bf16 => "bfloat16",
        }
    }
    pub fn size(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::Bf16 => 2,
        }
    }
    /// The value as this dtype stores it (bf16: round to nearest even).
    pub fn quantize(self, v: f32) -> f32 {
        match self {
            Dtype::F32 => v,
            Dtype::Bf16 => bf16::from_f32(v).to_f32(),
        }
    }
    /// `n` elements of this dtype.
    pub fn bytes(self, n: u64) -> Bytes {
        Bytes(n * self.size())
    }
}

/// `Box::leak`ed entry or row name: the bench's `Case::variant` is `&'static str` and the
/// names are built from (variant, dtype); a bench run makes a few dozen.
pub fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// A device tensor of either dtype (bf16 as raw u16 bits).
pub enum Buf {
    F32(DeviceArray<f32>),
    Bf16(DeviceArray<u16>),
}

/// bf16 quiet-NaN bits written into bf16 outputs before a launch (f32 outputs get
/// `gpu.poison`).
pub const POISON_BF16_BITS: u16 = 0x7fc1;

impl Buf {
    /// Upload `data` as `dt` (bf16: rounded).
    pub fn upload(gpu: &Gpu, dt: Dtype, data: &[f32]) -> Result<Buf> {
        Ok(match dt {
            Dtype::F32 => Buf::F32(gpu.upload(data)?),
            Dtype::Bf16 => Buf::Bf16(
                gpu.upload(
                    &data
                        .iter()
                        .map(|&v| bf16::from_f32(v).to_bits())
                        .collect::<Vec<_>>(),
                )?,
            ),
        })
    }
    pub fn alloc(gpu: &Gpu, dt: Dtype, len: usize) -> Result<Buf> {
        Ok(match dt {
            Dtype::F32 => Buf::F32(gpu.alloc(len)?),
            Dtype::Bf16 => Buf::Bf16(gpu.alloc(len)?),
        })
    }
    pub fn dtype(&self) -> Dtype {
        match self {
            Buf::F32(_) => Dtype::F32,
            Buf::Bf16(_) => Dtype::Bf16,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Buf::F32(a) => a.len(),
            Buf::Bf16(a) => a.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Device address of element 0 (0 for an empty buffer).
    pub fn addr(&self) -> u64 {
        match self {
            Buf::F32(a) => a.view().addr,
            Buf::Bf16(a) => a.view().addr,
        }
    }
    /// Fill with NaN so that an unwritten element can never pass a comparison.
    pub fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        match self {
            Buf::F32(a) => gpu.poison(a.view_mut()),
            Buf::Bf16(a) => {
                gpu.sync()?;
                a.copy_from_host(&vec![POISON_BF16_BITS; a.len()])
            }
        }
    }
    /// Download, widened to f32.
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        Ok(match self {
            Buf::F32(a) => a.to_host()?,
            Buf::Bf16(a) => a
                .to_host()?
                .into_iter()
                .map(|b| bf16::from_bits(b).to_f32())
                .collect(),
        })
    }
}

/// Refuse a buffer whose dtype or length is not what the op expects.
pub fn expect_buf(op: &str, what: &str, b: &Buf, dt: Dtype, len: usize) -> Result<()> {
    if b.dtype() != dt {
        return Err(Error::Shape {
            op: op.into(),
            what: format!(
                "{what} is {}, the op runs in {}",
                b.dtype().name(),
                dt.name()
            ),
        });
    }
    if b.len() != len {
        return Err(Error::Shape {
            op: op.into(),
            what: format!("{what} has {} elements, expected {len}", b.len()),
        });
    }
    Ok(())
}

/// Rows x cols checked for the kernels' 32-bit indexing (`cols` and, where `whole`, the
/// element count below 2^32).
pub fn check_dims(op: &str, rows: usize, cols: usize, whole: bool) -> Result<()> {
    let n = rows as u64 * cols as u64;
    let limit = u32::MAX as u64;
    if cols as u64 > limit || rows as u64 > i32::MAX as u64 {
        return Err(Error::TooLarge {
            op: op.into(),
            what: "rows or cols".into(),
            value: (rows.max(cols)) as u64,
            limit,
        });
    }
    if whole && n > limit {
        return Err(Error::TooLarge {
            op: op.into(),
            what: "elements (rows x cols)".into(),
            value: n,
            limit,
        });
    }
    Ok(())
}

/// `f(0..n)` on all cores: the shared helper, re-exported for this family's users.
pub use crate::check::par_map;

// ---------------------------------------------------------------- the op

/// GELU form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gelu {
    Erf,
    Tanh,
}

impl Gelu {
    fn mode(self) -> u32 {
        match self {
            Gelu::Erf => GELU_ERF,
            Gelu::Tanh => GELU_TANH,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Gelu::Erf => "erf",
            Gelu::Tanh => "tanh",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01Unfused,
    V02Fused,
    V03FusedVectorized,
}

pub const LADDER: [Variant; 3] = [
    Variant::V01Unfused,
    Variant::V02Fused,
    Variant::V03FusedVectorized,
];

impl Variant {
    pub fn stem(self) -> &'static str {
        match self {
            Variant::V01Unfused => "v01_unfused",
            Variant::V02Fused => "v02_fused",
            Variant::V03FusedVectorized => "v03_fused_vectorized",
        }
    }
    /// Kernel entry (v01: the first of its four kernels' common prefix).
    pub fn entry(self, dt: Dtype) -> String {
        format!("{FAMILY}_{}_{}", self.stem(), dt.name())
    }
    /// Modelled traffic: v01 moves 9 elements per element (see its header) plus the two
    /// per-column vectors; the fused variants the minimum.
    pub fn modelled_bytes(self, dt: Dtype, rows: u64, cols: u64) -> Bytes {
        match self {
            Variant::V01Unfused => dt.bytes(v01_unfused::PASSES * rows * cols + 2 * cols),
            _ => cost(dt, rows, cols).min_bytes,
        }
    }
}

/// FLOPs per element counted: fma 2, GELU 8 (the polynomial, the scaling and the final
/// product; the exp counted as one), the residual add 1.
pub const FLOPS_PER_ELEMENT: u64 = 11;

/// x and residual read, y written, scale and bias read once.
pub fn cost(dt: Dtype, rows: u64, cols: u64) -> Cost {
    let n = rows * cols;
    Cost::new(Flops(FLOPS_PER_ELEMENT * n), dt.bytes(3 * n + 2 * cols))
}

/// The three full-size intermediates v01 writes.
pub struct Intermediates(pub [Buf; 3]);

impl Intermediates {
    pub fn alloc(gpu: &Gpu, dt: Dtype, n: usize) -> Result<Intermediates> {
        Ok(Intermediates([
            Buf::alloc(gpu, dt, n)?,
            Buf::alloc(gpu, dt, n)?,
            Buf::alloc(gpu, dt, n)?,
        ]))
    }
}

/// The inputs of one chain.
pub struct Inputs<'a> {
    pub x: &'a Buf,
    pub scale: &'a Buf,
    pub bias: &'a Buf,
    pub residual: &'a Buf,
}

/// `y = gelu(x * scale + bias) + residual` over rows x cols. v01 needs `tmp`; the others
/// ignore it. Empty tensors: nothing launched.
#[allow(clippy::too_many_arguments)]
pub fn gelu_chain(
    gpu: &Gpu,
    v: Variant,
    gelu: Gelu,
    rows: usize,
    cols: usize,
    inp: &Inputs<'_>,
    y: &mut Buf,
    tmp: Option<&mut Intermediates>,
) -> Result<()> {
    let dt = inp.x.dtype();
    let op = v.entry(dt);
    check_dims(&op, rows, cols, true)?;
    let n = rows * cols;
    expect_buf(&op, "x", inp.x, dt, n)?;
    expect_buf(&op, "residual", inp.residual, dt, n)?;
    expect_buf(&op, "y", y, dt, n)?;
    expect_buf(&op, "scale", inp.scale, dt, cols)?;
    expect_buf(&op, "bias", inp.bias, dt, cols)?;
    if n == 0 {
        return Ok(());
    }
    let (x, s, b, r, ya) = (
        inp.x.addr(),
        inp.scale.addr(),
        inp.bias.addr(),
        inp.residual.addr(),
        y.addr(),
    );
    let (n32, c32, mode) = (n as u32, cols as u32, gelu.mode());
    match v {
        Variant::V01Unfused => {
            let tmp = tmp.ok_or_else(|| Error::Shape {
                op: op.clone(),
                what: "v01_unfused needs its three intermediate tensors (Intermediates)".into(),
            })?;
            for (k, t) in tmp.0.iter().enumerate() {
                expect_buf(&op, &format!("intermediate {k}"), t, dt, n)?;
            }
            let [t1, t2, t3] = [tmp.0[0].addr(), tmp.0[1].addr(), tmp.0[2].addr()];
            let cfg = LaunchConfig::for_threads(&op, n as u64, v01_unfused::BLOCK_THREADS)?;
            let name = |k: &str| format!("{FAMILY}_v01_unfused_{k}_{}", dt.name());
            // SAFETY: every buffer was checked above to hold n (or cols) elements of dt;
            // argument lists match the entries in v01_unfused.rs.
            unsafe {
                gpu.launch(&name("mul"), cfg, &kernel_args![x, s, t1, n32, c32])?;
                gpu.launch(&name("add_bias"), cfg, &kernel_args![t1, b, t2, n32, c32])?;
                gpu.launch(&name("gelu"), cfg, &kernel_args![t2, t3, n32, mode])?;
                gpu.launch(&name("add"), cfg, &kernel_args![t3, r, ya, n32])
            }
        }
        Variant::V02Fused | Variant::V03FusedVectorized => {
            let cfg = if v == Variant::V02Fused {
                LaunchConfig::for_threads(&op, n as u64, v02_fused::BLOCK_THREADS)?
            } else {
                let per16 = 16 / dt.size();
                LaunchConfig::for_threads(
                    &op,
                    v03_fused_vectorized::threads(n as u64, per16),
                    v03_fused_vectorized::BLOCK_THREADS,
                )?
            };
            // SAFETY: as above; the argument list matches the entry.
            unsafe { gpu.launch(&op, cfg, &kernel_args![x, s, b, r, ya, n32, c32, mode]) }
        }
    }
}

// ---------------------------------------------------------------- CPU reference

/// erf in f64: `2/sqrt(pi) e^(-x^2) sum_k 2^k x^(2k+1) / (1*3*..*(2k+1))`, all terms positive
/// (no cancellation), to ~1e-15; +-1 past |x| = 6 (erfc(6) = 2e-17).
pub fn erf64(x: f64) -> f64 {
    let a = x.abs();
    if a >= 6.0 {
        return x.signum();
    }
    let (mut term, mut sum, mut k) = (a, a, 0.0f64);
    while term > sum * 1e-17 {
        k += 1.0;
        term *= 2.0 * a * a / (2.0 * k + 1.0);
        sum += term;
    }
    let r = 2.0 / std::f64::consts::PI.sqrt() * (-a * a).exp() * sum;
    r.copysign(x)
}

pub fn gelu64(u: f64, g: Gelu) -> f64 {
    match g {
        Gelu::Erf => 0.5 * u * (1.0 + erf64(u / std::f64::consts::SQRT_2)),
        Gelu::Tanh => {
            let k = (2.0 / std::f64::consts::PI).sqrt() * (u + 0.044715 * u * u * u);
            0.5 * u * (1.0 + k.tanh())
        }
    }
}

/// The chain in f64. `round` is applied to every intermediate (identity for the fused
/// variants; the storage rounding for v01, which stores them).
pub fn chain_ref(
    g: Gelu,
    cols: usize,
    x: &[f32],
    scale: &[f32],
    bias: &[f32],
    res: &[f32],
    round: impl Fn(f64) -> f64 + Sync,
) -> Vec<f32> {
    par_map(x.len(), |i| {
        let c = i % cols;
        let t1 = round(x[i] as f64 * scale[c] as f64);
        let t2 = round(t1 + bias[c] as f64);
        let t3 = round(gelu64(t2, g));
        (t3 + res[i] as f64) as f32
    })
}

/// (rel, abs) tolerance; see the module header.
pub fn tolerance(v: Variant, dt: Dtype) -> (f32, f32) {
    match (dt, v) {
        (Dtype::F32, _) => (1e-5, 2e-6),
        (Dtype::Bf16, Variant::V01Unfused) => (1e-2, 2e-2),
        (Dtype::Bf16, _) => (8e-3, 1e-3),
    }
}

// ---------------------------------------------------------------- checks

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
#[allow(clippy::too_many_arguments)]
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
    let what = format!(
        "{} gelu={} {rows}x{cols} seed={seed}",
        v.entry(dt),
        g.name()
    );
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

pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for dt in Dtype::ALL {
        for v in LADDER {
            t.push(GpuTest::new(
                format!("{}_matches_cpu", v.entry(dt)),
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

// ---------------------------------------------------------------- bench

struct ChainWork {
    v: Variant,
    g: Gelu,
    dt: Dtype,
    rows: usize,
    cols: usize,
    sets: Vec<[Buf; 4]>,
    y: Buf,
    tmp: Option<Intermediates>,
    seed: u64,
}

impl Workload for ChainWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check(
            gpu, self.v, self.g, self.dt, self.rows, self.cols, self.seed,
        )
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let [x, s, b, r] = &self.sets[i % self.sets.len()];
        let inp = Inputs {
            x,
            scale: s,
            bias: b,
            residual: r,
        };
        gelu_chain(
            gpu,
            self.v,
            self.g,
            self.rows,
            self.cols,
            &inp,
            &mut self.y,
            self.tmp.as_mut(),
        )
    }
}

/// Bench shape: 16384 x 4096 (quick: 2048 x 4096, rotated); `size` overrides the rows.
pub fn bench_shape(quick: bool, size: Option<u64>) -> (usize, usize) {
    let cols = 4096;
    let rows = match size {
        Some(s) => (s as usize / cols).max(1),
        None if quick => 2048,
        None => 16384,
    };
    (rows, cols)
}

pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let (rows, cols) = bench_shape(quick, size);
    let mut out = Vec::new();
    for dt in Dtype::ALL {
        for g in [Gelu::Tanh, Gelu::Erf] {
            for v in LADDER {
                let base = cost(dt, rows as u64, cols as u64);
                let c = base.with_modelled(v.modelled_bytes(dt, rows as u64, cols as u64));
                out.push(Case {
                    family: FAMILY,
                    variant: leak(format!("{}_{}", v.stem(), dt.name())),
                    ladder: leak(format!("gelu_{}_{}", g.name(), dt.name())),
                    shape: format!("{rows}x{cols}"),
                    note: format!("gelu {}", g.name()),
                    cost: c,
                    torch: Some(TorchSpec {
                        op: format!("gelu_chain_{}", g.name()),
                        shape: vec![rows as u64, cols as u64],
                        dtype: dt.torch().into(),
                    }),
                    prepare: Box::new(move |gpu: &Gpu| {
                        let sets = (0..rotation_sets(c.min_bytes.0, gpu.info.l2_bytes))
                            .map(|k| {
                                let h = host_inputs(dt, rows, cols, seed + 1000 + k as u64);
                                let up = |d: &[f32]| Buf::upload(gpu, dt, d);
                                Ok([up(&h.x)?, up(&h.scale)?, up(&h.bias)?, up(&h.res)?])
                            })
                            .collect::<Result<Vec<_>>>()?;
                        let tmp = if v == Variant::V01Unfused {
                            Some(Intermediates::alloc(gpu, dt, rows * cols)?)
                        } else {
                            None
                        };
                        Ok(Box::new(ChainWork {
                            v,
                            g,
                            dt,
                            rows,
                            cols,
                            sets,
                            y: Buf::alloc(gpu, dt, rows * cols)?,
                            tmp,
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
    use rooflab_kernels::fused_elementwise::{erf_as, gelu};

    #[test]
    fn erf64_matches_known_values() {
        // erf(0.5), erf(1), erf(2), erf(3) from tables.
        for (x, want) in [
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.0, 0.999_977_909_503_001_4),
        ] {
            assert!((erf64(x) - want).abs() < 1e-14, "erf({x})");
            assert!((erf64(-x) + want).abs() < 1e-14);
        }
        assert_eq!(erf64(0.0), 0.0);
        assert_eq!(erf64(7.0), 1.0);
    }

    #[test]
    fn device_gelu_formulas_are_accurate() {
        // The kernels' formulas with an exact exp2, evaluated in f32 as on the device: the
        // approximation's 1.5e-7 plus the polynomial's f32 rounding (measured 6.4e-7, worst
        // near 0 where 1 - poly * e^(-x^2) cancels); GELU within the f32 tolerance of the GPU
        // tests (abs 2e-6 over |u| <= 3.5).
        let exp2 = |v: f32| (v as f64).exp2() as f32;
        let mut worst = (0.0f64, 0.0f64);
        for i in -40_000..=40_000 {
            let u = i as f32 * 2e-4;
            let e = (erf_as(u, exp2) as f64 - erf64(u as f64)).abs();
            worst.0 = worst.0.max(e);
            for (g, mode) in [(Gelu::Erf, GELU_ERF), (Gelu::Tanh, GELU_TANH)] {
                let d = (gelu(u, mode, exp2) as f64 - gelu64(u as f64, g)).abs();
                worst.1 = worst.1.max(d);
            }
        }
        assert!(worst.0 < 8e-7, "erf error {}", worst.0);
        assert!(worst.1 < 1e-6, "gelu error {}", worst.1);
        // Extremes: no NaN, the right limits.
        for mode in [GELU_ERF, GELU_TANH] {
            assert_eq!(gelu(-100.0, mode, exp2), 0.0);
            assert_eq!(gelu(100.0, mode, exp2), 100.0);
        }
    }

    #[test]
    fn cost_model_counts_bytes_exactly() {
        // 2 x 3 f32: x, residual, y = 18 elements, scale + bias = 6 -> 24 * 4 bytes.
        assert_eq!(cost(Dtype::F32, 2, 3).min_bytes, Bytes(96));
        assert_eq!(cost(Dtype::Bf16, 2, 3).min_bytes, Bytes(48));
        // v01: 9 passes of 6 elements + 6 = 60 elements.
        assert_eq!(
            Variant::V01Unfused.modelled_bytes(Dtype::F32, 2, 3),
            Bytes(240)
        );
        let (m1, m3) = (
            Variant::V01Unfused
                .modelled_bytes(Dtype::F32, 16384, 4096)
                .0 as f64,
            Variant::V03FusedVectorized
                .modelled_bytes(Dtype::F32, 16384, 4096)
                .0 as f64,
        );
        assert!((m1 / m3 - 3.0).abs() < 1e-3, "predicted ratio {}", m1 / m3);
    }

    #[test]
    fn reference_applies_intermediate_rounding() {
        let (x, s, b, r) = ([1.0f32], [1.0f32], [0.0f32], [0.5f32]);
        let plain = chain_ref(Gelu::Tanh, 1, &x, &s, &b, &r, |u| u)[0] as f64;
        assert!((plain - (gelu64(1.0, Gelu::Tanh) + 0.5)).abs() < 1e-7);
        let rounded = chain_ref(Gelu::Tanh, 1, &x, &s, &b, &r, |u| {
            Dtype::Bf16.quantize(u as f32) as f64
        })[0];
        assert_eq!(
            rounded,
            (Dtype::Bf16.quantize(gelu64(1.0, Gelu::Tanh) as f32) as f64 + 0.5) as f32
        );
    }

    #[test]
    fn entries_exist_in_the_ptx() {
        let ptx = crate::ptx::BUILT[0].1;
        for dt in Dtype::ALL {
            for v in [Variant::V02Fused, Variant::V03FusedVectorized] {
                assert!(
                    ptx.contains(&format!(".entry {}(", v.entry(dt))),
                    "{}",
                    v.entry(dt)
                );
            }
            for k in ["mul", "add_bias", "gelu", "add"] {
                let e = format!("{FAMILY}_v01_unfused_{k}_{}", dt.name());
                assert!(ptx.contains(&format!(".entry {e}(")), "{e}");
            }
        }
    }

    #[test]
    fn v03_thread_mapping_covers_every_element_once() {
        for n in [1u64, 3, 4, 7, 8, 9, 1001] {
            for p in [4u64, 8] {
                let mut seen = vec![0u8; n as usize];
                for t in 0..v03_fused_vectorized::threads(n, p) {
                    let nvec = n / p;
                    let start = t * p;
                    let count = if t < nvec { p } else { n - start };
                    for k in 0..count {
                        seen[(start + k) as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|&s| s == 1), "n={n} p={p}");
            }
        }
    }

    #[test]
    fn cases_cover_the_ladder() {
        let c = cases(true, None, 1);
        assert_eq!(c.len(), 12);
        assert!(c.iter().all(|c| c.torch.is_some()));
    }
}
