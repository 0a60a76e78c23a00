//! Family `gemm` on the host: `C = alpha·A·B + beta·C` in f32, row-major.
//!
//! Safe launch wrapper (shapes checked before any launch), the CPU reference (f64) with an
//! error bound per element derived from the arithmetic, the cost model, the bench cases
//! (with cuBLAS SGEMM as the in-process peer) and the GPU tests for every variant in
//! `kernels-gpu/src/gemm/`. Launch geometry comes from the variant files' constants.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use rand::Rng;
use rooflab_kernels::gemm::{
    MAX_DIM, v01_naive, v02_coalesced, v03_smem_tiled, v04_blocktile_1d, v05_blocktile_2d,
    v06_vectorized, v07_warptile, v08_double_buffered, v09_interleaved_lanes, v10_warptile_64x64,
    v11_block_256x128,
};

use crate::bench::{Case, Peer, Workload, rotation_sets};
use crate::check::{random_f32, rng};
use crate::cost::{Bytes, Cost, Flops};
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu, LaunchConfig, View, ViewMut};
use crate::kernel_args;
use crate::peer::cublas::Cublas;
use crate::testing::{GpuTest, expect_error};

pub const FAMILY: &str = "gemm";

/// The SGEMM ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01Naive,
    V02Coalesced,
    V03SmemTiled,
    V04Blocktile1d,
    V05Blocktile2d,
    V06Vectorized,
    V07Warptile,
    V08DoubleBuffered,
    V09InterleavedLanes,
    V10Warptile64x64,
    V11Block256x128,
}

pub const LADDER: [Variant; 11] = [
    Variant::V01Naive,
    Variant::V02Coalesced,
    Variant::V03SmemTiled,
    Variant::V04Blocktile1d,
    Variant::V05Blocktile2d,
    Variant::V06Vectorized,
    Variant::V07Warptile,
    Variant::V08DoubleBuffered,
    Variant::V09InterleavedLanes,
    Variant::V10Warptile64x64,
    Variant::V11Block256x128,
];

/// Matrix sizes: A is M×K, B is K×N, C is M×N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl Dims {
    pub const fn new(m: usize, n: usize, k: usize) -> Dims {
        Dims { m, n, k }
    }
}

impl std::fmt::Display for Dims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "M={} N={} K={}", self.m, self.n, self.k)
    }
}

impl Variant {
    pub fn stem(self) -> &'static str {
        &self.entry()[FAMILY.len() + 1..]
    }

    /// The kernel entry point, e.g. `gemm_v03_smem_tiled`.
    pub fn entry(self) -> &'static str {
        match self {
            Variant::V01Naive => "gemm_v01_naive",
            Variant::V02Coalesced => "gemm_v02_coalesced",
            Variant::V03SmemTiled => "gemm_v03_smem_tiled",
            Variant::V04Blocktile1d => "gemm_v04_blocktile_1d",
            Variant::V05Blocktile2d => "gemm_v05_blocktile_2d",
            Variant::V06Vectorized => "gemm_v06_vectorized",
            Variant::V07Warptile => "gemm_v07_warptile",
            Variant::V08DoubleBuffered => "gemm_v08_double_buffered",
            Variant::V09InterleavedLanes => "gemm_v09_interleaved_lanes",
            Variant::V10Warptile64x64 => "gemm_v10_warptile_64x64",
            Variant::V11Block256x128 => "gemm_v11_block_256x128",
        }
    }

    /// (threads in x, threads in y, C rows per block, C columns per block, shared f32).
    /// v01 maps x to rows of C, everything else maps x to columns.
    fn geometry(self) -> (u32, u32, u32, u32, u32) {
        use Variant::*;
        // v04 on: THREADS threads in x, a BM×BN tile of C, SHARED_F32 of shared memory.
        macro_rules! block_tiled {
            ($v:ident) => {
                ($v::THREADS, 1, $v::BM, $v::BN, $v::SHARED_F32)
            };
        }
        match self {
            V01Naive => (
                v01_naive::BLOCK_X,
                v01_naive::BLOCK_Y,
                v01_naive::BLOCK_X,
                v01_naive::BLOCK_Y,
                0,
            ),
            V02Coalesced => (
                v02_coalesced::BLOCK_X,
                v02_coalesced::BLOCK_Y,
                v02_coalesced::BLOCK_Y,
                v02_coalesced::BLOCK_X,
                0,
            ),
            V03SmemTiled => (
                v03_smem_tiled::TILE,
                v03_smem_tiled::TILE,
                v03_smem_tiled::TILE,
                v03_smem_tiled::TILE,
                v03_smem_tiled::SHARED_F32,
            ),
            V04Blocktile1d => block_tiled!(v04_blocktile_1d),
            V05Blocktile2d => block_tiled!(v05_blocktile_2d),
            V06Vectorized => block_tiled!(v06_vectorized),
            V07Warptile => block_tiled!(v07_warptile),
            V08DoubleBuffered => block_tiled!(v08_double_buffered),
            V09InterleavedLanes => block_tiled!(v09_interleaved_lanes),
            V10Warptile64x64 => block_tiled!(v10_warptile_64x64),
            V11Block256x128 => block_tiled!(v11_block_256x128),
        }
    }

    /// Grid, block and shared memory for an M×N output. Refused when the grid would pass
    /// CUDA's limits (2^31-1 blocks in x, 65535 in y).
    pub fn launch_config(self, d: Dims) -> Result<LaunchConfig> {
        let (bx, by, rows, cols, shared) = self.geometry();
        let (m_blocks, n_blocks) = (d.m.div_ceil(rows as usize), d.n.div_ceil(cols as usize));
        // v01 puts rows of C on x; the others put columns on x and rows on y.
        let (gx, gy) = if self == Variant::V01Naive {
            (m_blocks, n_blocks)
        } else {
            (n_blocks, m_blocks)
        };
        let too_large = |what: &str, value: usize, limit: u64| Error::TooLarge {
            op: self.entry().into(),
            what: what.into(),
            value: value as u64,
            limit,
        };
        if gx as u64 > i32::MAX as u64 {
            return Err(too_large("blocks in x", gx, i32::MAX as u64));
        }
        if gy > 65535 {
            return Err(too_large("blocks in y", gy, 65535));
        }
        Ok(LaunchConfig::grid_2d(
            (gx.max(1) as u32, gy.max(1) as u32),
            (bx, by),
            shared * 4,
        ))
    }
}

/// Shape checks shared by every variant and the peer: lengths match the sizes, sizes fit
/// the kernels' 32-bit indexing.
pub fn validate(op: &str, d: Dims, a_len: usize, b_len: usize, c_len: usize) -> Result<()> {
    for (what, v) in [("M", d.m), ("N", d.n), ("K", d.k)] {
        if v as u64 > MAX_DIM {
            return Err(Error::TooLarge {
                op: op.into(),
                what: what.into(),
                value: v as u64,
                limit: MAX_DIM,
            });
        }
    }
    let want = |r: usize, c: usize| r.checked_mul(c);
    for (name, rows, cols, len) in [
        ("A", d.m, d.k, a_len),
        ("B", d.k, d.n, b_len),
        ("C", d.m, d.n, c_len),
    ] {
        if want(rows, cols) != Some(len) {
            return Err(Error::Shape {
                op: op.into(),
                what: format!("{name} should be {rows}x{cols} for {d}, but has {len} elements"),
            });
        }
    }
    Ok(())
}

/// `C = alpha·A·B + beta·C` with the given variant. `beta == 0` means C is only written.
/// M or N zero: nothing to do, nothing launched. K zero: C = beta·C, which the kernel's
/// epilogue computes (one launch, no loads of A or B).
#[allow(clippy::too_many_arguments)]
pub fn sgemm(
    gpu: &Gpu,
    v: Variant,
    d: Dims,
    alpha: f32,
    a: View<'_, f32>,
    b: View<'_, f32>,
    beta: f32,
    c: ViewMut<'_, f32>,
) -> Result<()> {
    let op = v.entry();
    validate(op, d, a.len, b.len, c.len)?;
    if d.m == 0 || d.n == 0 {
        return Ok(());
    }
    let cfg = v.launch_config(d)?;
    let (m, n, k) = (d.m as u32, d.n as u32, d.k as u32);
    let (pa, pb, pc) = (a.addr, b.addr, c.addr);
    // SAFETY: the views are live and hold M·K, K·N and M·N f32 (validated); the arguments
    // match the entries' common signature (u32, u32, u32, f32, ptr, ptr, f32, ptr).
    unsafe { gpu.launch(op, cfg, &kernel_args![m, n, k, alpha, pa, pb, beta, pc]) }
}

// ---------------------------------------------------------------- CPU reference

/// The f64 reference of one element and its error bound.
///
/// `want = alpha·Σ a_ik·b_kj + beta·c_ij` in f64. A K-long f32 dot product in any order
/// (FMA or not) is within `γ_K·Σ|a_ik·b_kj|` of the exact value, `γ_K ≈ K·u`, u = 2^-24;
/// the epilogue adds a few roundings of `alpha·acc` and `beta·c`. The bound is
/// `1e-5·|want| + (K + 4)·u·(|alpha|·Σ|a·b| + |beta·c|)`: the rigorous worst case (to first
/// order), plus ordinary f32 relative precision. Typical errors are ~√K·u·Σ|a·b|, far
/// inside it; index bugs (a missing or doubled tile) are far outside it.
#[allow(clippy::too_many_arguments)]
pub fn element_ref(
    d: Dims,
    alpha: f32,
    a: &[f32],
    b: &[f32],
    beta: f32,
    c_in: Option<&[f32]>,
    i: usize,
    j: usize,
) -> (f64, f64) {
    let (mut s, mut sa) = (0.0f64, 0.0f64);
    for kk in 0..d.k {
        let p = a[i * d.k + kk] as f64 * b[kk * d.n + j] as f64;
        s += p;
        sa += p.abs();
    }
    finish(d, alpha, beta, c_in.map(|c| c[i * d.n + j]), s, sa)
}

fn finish(d: Dims, alpha: f32, beta: f32, c: Option<f32>, s: f64, sa: f64) -> (f64, f64) {
    let bc = match c {
        Some(c) if beta != 0.0 => beta as f64 * c as f64,
        _ => 0.0,
    };
    let want = alpha as f64 * s + bc;
    let u = f32::EPSILON as f64 / 2.0;
    let bound = 1e-5 * want.abs() + (d.k as f64 + 4.0) * u * (alpha.abs() as f64 * sa + bc.abs());
    (want, bound)
}

/// The whole reference: (want, bound) for every element, row-major. Rows are split over
/// the CPU's threads (f64 accumulation, i-k-j order so the inner loop streams B's rows).
pub fn gemm_ref(
    d: Dims,
    alpha: f32,
    a: &[f32],
    b: &[f32],
    beta: f32,
    c_in: Option<&[f32]>,
) -> (Vec<f64>, Vec<f64>) {
    let mut want = vec![0.0f64; d.m * d.n];
    let mut bound = vec![0.0f64; d.m * d.n];
    if d.n == 0 {
        return (want, bound);
    }
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1);
    let rows_per = d.m.div_ceil(threads).max(1);
    std::thread::scope(|sc| {
        for (chunk, (w, bd)) in want
            .chunks_mut(rows_per * d.n)
            .zip(bound.chunks_mut(rows_per * d.n))
            .enumerate()
        {
            sc.spawn(move || {
                let mut s = vec![0.0f64; d.n];
                let mut sa = vec![0.0f64; d.n];
                for (r, (wr, br)) in w.chunks_mut(d.n).zip(bd.chunks_mut(d.n)).enumerate() {
                    let i = chunk * rows_per + r;
                    s.fill(0.0);
                    sa.fill(0.0);
                    for kk in 0..d.k {
                        let x = a[i * d.k + kk] as f64;
                        let brow = &b[kk * d.n..(kk + 1) * d.n];
                        for j in 0..d.n {
                            let p = x * brow[j] as f64;
                            s[j] += p;
                            sa[j] += p.abs();
                        }
                    }
                    for j in 0..d.n {
                        (wr[j], br[j]) =
                            finish(d, alpha, beta, c_in.map(|c| c[i * d.n + j]), s[j], sa[j]);
                    }
                }
            });
        }
    });
    (want, bound)
}

/// The f64 reference of one product at the elements a check compares: every element while
/// M·N·K <= FULL_CHECK_MAX_MACS, else a sample plus the first/last rows and columns.
pub struct Reference {
    idx: Vec<usize>,
    want: Vec<f64>,
    bound: Vec<f64>,
}

impl Reference {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        d: Dims,
        alpha: f32,
        a: &[f32],
        b: &[f32],
        beta: f32,
        c_in: Option<&[f32]>,
        seed: u64,
    ) -> Reference {
        let macs = d.m.saturating_mul(d.n).saturating_mul(d.k);
        let (idx, (want, bound)) = if macs <= FULL_CHECK_MAX_MACS {
            (
                (0..d.m * d.n).collect(),
                gemm_ref(d, alpha, a, b, beta, c_in),
            )
        } else {
            let idx = sample_indices(d, SAMPLE, seed);
            let r = sampled_ref(d, alpha, a, b, beta, c_in, &idx);
            (idx, r)
        };
        Reference { idx, want, bound }
    }

    /// `got` (all of C) against the reference; `what` names the check in the message.
    pub fn compare(&self, what: &str, d: Dims, got: &[f32]) -> Result<()> {
        let what = if self.idx.len() < d.m * d.n {
            format!("{what} (sampled)")
        } else {
            what.to_string()
        };
        compare_bounded(&what, d, got, &self.idx, &self.want, &self.bound).map_err(Error::Mismatch)
    }
}

/// (want, bound) at the flat indices `idx` only, on all cores (each element is a K-long
/// dot product down a column of B: seconds for 8192² when done one by one).
#[allow(clippy::too_many_arguments)]
pub fn sampled_ref(
    d: Dims,
    alpha: f32,
    a: &[f32],
    b: &[f32],
    beta: f32,
    c_in: Option<&[f32]>,
    idx: &[usize],
) -> (Vec<f64>, Vec<f64>) {
    crate::check::par_map(idx.len(), |t| {
        element_ref(d, alpha, a, b, beta, c_in, idx[t] / d.n, idx[t] % d.n)
    })
    .into_iter()
    .unzip()
}

/// Compare GPU results with reference values at the given flat indices. NaN or infinity
/// never passes. Returns a message naming the first few bad elements and the count.
pub fn compare_bounded(
    what: &str,
    d: Dims,
    got: &[f32],
    idx: &[usize],
    want: &[f64],
    bound: &[f64],
) -> std::result::Result<(), String> {
    let mut bad = Vec::new();
    let mut count = 0usize;
    for (t, &e) in idx.iter().enumerate() {
        let g = got[e];
        let ok = g.is_finite() && (g as f64 - want[t]).abs() <= bound[t];
        if !ok {
            count += 1;
            if bad.len() < 5 {
                bad.push(format!(
                    "C[{}][{}] got {g:e} want {:e} (bound {:.2e})",
                    e / d.n,
                    e % d.n,
                    want[t],
                    bound[t]
                ));
            }
        }
    }
    if count == 0 {
        Ok(())
    } else {
        Err(format!(
            "{what}: {count} of {} checked elements wrong; first: {}",
            idx.len(),
            bad.join(", ")
        ))
    }
}

/// Elements checked when the full reference would be too slow: `n` random ones plus the
/// whole first and last row and column (where the edge tiles are).
pub fn sample_indices(d: Dims, n: usize, seed: u64) -> Vec<usize> {
    let mut r = rng(seed ^ 0x5eed);
    let mut v: Vec<usize> = (0..n)
        .map(|_| r.random_range(0..d.m) * d.n + r.random_range(0..d.n))
        .collect();
    for j in 0..d.n {
        v.push(j);
        v.push((d.m - 1) * d.n + j);
    }
    for i in 0..d.m {
        v.push(i * d.n);
        v.push(i * d.n + d.n - 1);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Above this many multiply-adds the check compares a sample instead of every element.
pub const FULL_CHECK_MAX_MACS: usize = 1 << 30;
/// Random elements in a sampled check.
pub const SAMPLE: usize = 4096;

// ---------------------------------------------------------------- cost model

/// 2·M·N·K FLOPs; A, B read once and C written once, plus C read when `beta != 0`.
pub fn gemm_cost(d: Dims, reads_c: bool) -> Cost {
    let (m, n, k) = (d.m as u64, d.n as u64, d.k as u64);
    let c_words = if reads_c { 2 * m * n } else { m * n };
    Cost::new(
        Flops(2 * m * n * k),
        Bytes::of::<f32>(m * k + k * n + c_words),
    )
}

// ---------------------------------------------------------------- checks

/// Inputs of one check: (alpha, beta). beta == 0 poisons C first.
pub const TEST_SCALARS: [(f32, f32); 2] = [(1.0, 0.0), (-1.5, 0.75)];

/// One correctness check: fresh random A, B (and C when beta != 0, else NaN poison), the
/// matrices `off` elements into their allocations (off = 1 breaks 16-byte alignment, which
/// sends v06-v08 down their scalar paths), every element compared (or a sample, for big
/// shapes) against the f64 reference with the per-element bound.
#[allow(clippy::too_many_arguments)]
pub fn check(
    gpu: &Gpu,
    v: Option<Variant>,
    cublas: Option<&Cublas>,
    d: Dims,
    alpha: f32,
    beta: f32,
    off: usize,
    seed: u64,
) -> Result<()> {
    let mut r = rng(seed);
    let a = random_f32(&mut r, d.m * d.k, -1.0, 1.0);
    let b = random_f32(&mut r, d.k * d.n, -1.0, 1.0);
    let c0 = random_f32(&mut r, d.m * d.n, -1.0, 1.0);
    let pad = |x: &[f32]| [vec![0.5f32; off], x.to_vec()].concat();
    let da = gpu.upload(&pad(&a))?;
    let db = gpu.upload(&pad(&b))?;
    let mut dc = gpu.upload(&pad(&c0))?;
    let name = v.map(|v| v.entry()).unwrap_or("cublasSgemm");
    let what = format!("{name} {d} alpha={alpha} beta={beta} offset={off} seed={seed}");
    {
        let cv = dc.view_range_mut(off..off + d.m * d.n);
        let (av, bv) = (
            da.view_range(off..off + d.m * d.k),
            db.view_range(off..off + d.k * d.n),
        );
        let mut cv = cv;
        if beta == 0.0 {
            gpu.poison(cv.reborrow())?;
        }
        match (v, cublas) {
            (Some(v), _) => sgemm(gpu, v, d, alpha, av, bv, beta, cv)?,
            (None, Some(cb)) => {
                gpu.sync()?;
                cb.sgemm_row_major(gpu, d.m, d.n, d.k, alpha, av, bv, beta, cv)?
            }
            (None, None) => return Err(Error::Other("check: no variant and no peer".into())),
        }
    }
    gpu.sync()?;
    let got_all = dc.to_host()?;
    let got = &got_all[off..];
    let c_in = (beta != 0.0).then_some(&c0[..]);
    Reference::new(d, alpha, &a, &b, beta, c_in, seed).compare(&what, d, got)?;
    // The padding in front of C must be untouched.
    if got_all[..off].iter().any(|&x| x != 0.5) {
        return Err(Error::Mismatch(format!("{what}: wrote before C")));
    }
    Ok(())
}

/// Shapes every variant's GPU test covers: scalar, primes / not multiples of any tile,
/// exactly one tile, powers of two, and tall-skinny (sampled check).
pub const TEST_SHAPES: [Dims; 7] = [
    Dims::new(1, 1, 1),
    Dims::new(17, 33, 65),
    Dims::new(128, 128, 16),
    Dims::new(256, 512, 128),
    Dims::new(1000, 1023, 777),
    Dims::new(1024, 1024, 1024),
    Dims::new(8192, 128, 8192),
];

/// The whole check of one variant (or of cuBLAS with `v == None`).
pub fn check_all(gpu: &Gpu, v: Option<Variant>, cublas: Option<&Cublas>, seed: u64) -> Result<()> {
    // Under the sanitizer only the small shapes (all edges and tails are among them).
    let shapes = crate::testing::shapes(&TEST_SHAPES, |d| (d.m * d.n * d.k) >> 4);
    for (i, &d) in shapes.iter().enumerate() {
        for (j, &(alpha, beta)) in TEST_SCALARS.iter().enumerate() {
            let s = seed.wrapping_add((i * 7 + j) as u64);
            check(gpu, v, cublas, d, alpha, beta, 0, s)?;
        }
    }
    // Misaligned rows (K, N multiples of 4, but the matrices start 4 bytes off).
    check(
        gpu,
        v,
        cublas,
        Dims::new(130, 260, 36),
        1.0,
        0.5,
        1,
        seed ^ 1,
    )?;
    // Rows of odd length.
    check(
        gpu,
        v,
        cublas,
        Dims::new(129, 131, 133),
        0.5,
        0.0,
        0,
        seed ^ 2,
    )?;
    Ok(())
}

// ---------------------------------------------------------------- bench

/// The inputs of one bench shape, shared by every variant's row at that shape: A and B are
/// drawn, uploaded and the CPU reference computed once (at 8192³ that is seconds of host
/// work, which per row used to dominate the bench's run time).
struct ShapeInputs {
    d: Dims,
    /// Rotating (A, B) device copies (enough sets to outgrow the L2).
    sets: Vec<(DeviceArray<f32>, DeviceArray<f32>)>,
    reference: Reference,
    seed: u64,
}

impl ShapeInputs {
    fn new(gpu: &Gpu, d: Dims, sets: usize, seed: u64) -> Result<ShapeInputs> {
        let mut r = rng(seed);
        let a = random_f32(&mut r, d.m * d.k, -1.0, 1.0);
        let b = random_f32(&mut r, d.k * d.n, -1.0, 1.0);
        let sets = (0..sets)
            .map(|_| Ok((gpu.upload(&a)?, gpu.upload(&b)?)))
            .collect::<Result<Vec<_>>>()?;
        let reference = Reference::new(d, BENCH_ALPHA, &a, &b, BENCH_BETA, None, seed);
        Ok(ShapeInputs {
            d,
            sets,
            reference,
            seed,
        })
    }
}

/// What the cases of one bench run share: the inputs of the shape being run (one at a
/// time: the next shape replaces them) and cuBLAS, loaded once.
#[derive(Default)]
struct Shared {
    inputs: RefCell<Option<Rc<ShapeInputs>>>,
    cublas: OnceCell<Rc<std::result::Result<Cublas, String>>>,
}

impl Shared {
    fn inputs(&self, gpu: &Gpu, d: Dims, sets: usize, seed: u64) -> Result<Rc<ShapeInputs>> {
        let mut slot = self.inputs.borrow_mut();
        if let Some(x) = slot.as_ref().filter(|x| x.d == d && x.sets.len() == sets) {
            return Ok(x.clone());
        }
        // Free the previous shape's buffers before allocating the next.
        *slot = None;
        let x = Rc::new(ShapeInputs::new(gpu, d, sets, seed)?);
        *slot = Some(x.clone());
        Ok(x)
    }
    fn cublas(&self) -> Rc<std::result::Result<Cublas, String>> {
        self.cublas.get_or_init(|| Rc::new(Cublas::load())).clone()
    }
}

struct GemmWork {
    v: Variant,
    inputs: Rc<ShapeInputs>,
    /// One C per (A, B) set.
    outs: Vec<DeviceArray<f32>>,
    cublas: Rc<std::result::Result<Cublas, String>>,
}

/// The bench's alpha and beta: beta == 0, as in C = A·B.
const BENCH_ALPHA: f32 = 1.0;
const BENCH_BETA: f32 = 0.0;

impl Workload for GemmWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        // C poisoned, one launch on the first set, compared with the shape's reference
        // (every element, or a sample plus the first/last rows and columns).
        let x = &self.inputs;
        let d = x.d;
        let (a, b) = &x.sets[0];
        let c = &mut self.outs[0];
        gpu.poison(c.view_mut())?;
        sgemm(
            gpu,
            self.v,
            d,
            BENCH_ALPHA,
            a.view(),
            b.view(),
            BENCH_BETA,
            c.view_mut(),
        )?;
        gpu.sync()?;
        let got = c.to_host()?;
        let what = format!(
            "{} {d} alpha={BENCH_ALPHA} beta={BENCH_BETA} seed={}",
            self.v.entry(),
            x.seed
        );
        x.reference.compare(&what, d, &got)
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.outs.len();
        let (a, b) = &self.inputs.sets[k];
        let d = self.inputs.d;
        sgemm(
            gpu,
            self.v,
            d,
            BENCH_ALPHA,
            a.view(),
            b.view(),
            BENCH_BETA,
            self.outs[k].view_mut(),
        )
    }
    fn peer(&self) -> Peer {
        match self.cublas.as_ref() {
            Ok(_) => Peer::Available("cuBLAS SGEMM".into()),
            Err(_) => Peer::Unavailable("cuBLAS not found, peer column skipped".into()),
        }
    }
    fn launch_peer(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.outs.len();
        let (a, b) = &self.inputs.sets[k];
        let d = self.inputs.d;
        let cb = self
            .cublas
            .as_ref()
            .as_ref()
            .map_err(|e| Error::Other(e.clone()))?;
        cb.sgemm_row_major(
            gpu,
            d.m,
            d.n,
            d.k,
            BENCH_ALPHA,
            a.view(),
            b.view(),
            BENCH_BETA,
            self.outs[k].view_mut(),
        )
    }
}

/// The largest `--size` gemm takes as its square dimension.
pub const MAX_BENCH_DIM: u64 = 65536;

/// Bench shapes. v01/v02 run only up to 2048², v03/v04 up to 4096² and the tall-skinny
/// shape: at 8192³ they would take seconds per launch and dominate the run.
pub fn bench_shapes(quick: bool, size: Option<u64>) -> Vec<(Dims, Variant)> {
    let mut shapes: Vec<Dims> = match size {
        // --size is M = N = K here; past 65536 the three matrices would not fit a GPU's
        // memory (a size meant for the elementwise families), so gemm sits that run out.
        Some(s) if s > MAX_BENCH_DIM => vec![],
        Some(s) => vec![Dims::new(s as usize, s as usize, s as usize)],
        None if quick => vec![Dims::new(1024, 1024, 1024), Dims::new(2048, 2048, 2048)],
        None => [1024, 2048, 4096, 8192]
            .iter()
            .map(|&s| Dims::new(s, s, s))
            .collect(),
    };
    if size.is_none() && !quick {
        shapes.push(Dims::new(8192, 128, 8192));
    }
    shapes
        .into_iter()
        .map(|d| {
            let macs = d.m.saturating_mul(d.n).saturating_mul(d.k);
            let first = if macs > 4096 * 4096 * 4096 {
                Variant::V05Blocktile2d
            } else if macs > 2048 * 2048 * 2048 {
                Variant::V03SmemTiled
            } else {
                Variant::V01Naive
            };
            (d, first)
        })
        .collect()
}

pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let mut out = Vec::new();
    let shared = Rc::new(Shared::default());
    for (d, first) in bench_shapes(quick, size) {
        let skipped = LADDER.iter().take_while(|&&v| v != first).count();
        let note = if skipped > 0 {
            format!("v01..v{skipped:02} skipped at this size (too slow)",)
        } else {
            String::new()
        };
        for &v in LADDER.iter().skip(skipped) {
            let cost = gemm_cost(d, BENCH_BETA != 0.0);
            out.push(Case {
                family: FAMILY,
                variant: v.stem(),
                ladder: "sgemm",
                shape: if d.m == d.n && d.n == d.k {
                    format!("{}^3", d.m)
                } else {
                    format!("{}x{}x{}", d.m, d.n, d.k)
                },
                note: note.clone(),
                cost,
                torch: None,
                prepare: {
                    let shared = shared.clone();
                    Box::new(move |gpu: &Gpu| {
                        let sets = rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes);
                        let inputs = shared.inputs(gpu, d, sets, seed)?;
                        let outs = (0..sets)
                            .map(|_| gpu.alloc::<f32>(d.m * d.n))
                            .collect::<Result<Vec<_>>>()?;
                        Ok(Box::new(GemmWork {
                            v,
                            inputs,
                            outs,
                            cublas: shared.cublas(),
                        }) as Box<dyn Workload>)
                    })
                },
            });
        }
    }
    out
}

pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for v in LADDER {
        t.push(GpuTest::new(
            format!("{}_matches_cpu", v.entry()),
            move |gpu| check_all(gpu, Some(v), None, seed),
        ));
    }
    t.push(GpuTest::new("gemm_cublas_peer_matches_cpu", move |gpu| {
        match Cublas::load() {
            Ok(cb) => {
                eprintln!("gemm_cublas_peer_matches_cpu: using {}", cb.path);
                check_all(gpu, None, Some(&cb), seed)
            }
            Err(why) => {
                // Not a failure of rooflab: the peer column is skipped on such machines.
                eprintln!("gemm_cublas_peer_matches_cpu: cuBLAS not found, nothing checked: {why}");
                Ok(())
            }
        }
    }));
    t.push(GpuTest::new(
        "gemm_bad_shapes_are_refused_before_launch",
        |gpu| {
            let a = gpu.upload(&[1.0f32; 12])?;
            let b = gpu.upload(&[1.0f32; 20])?;
            let mut c = gpu.alloc::<f32>(15)?;
            for v in LADDER {
                // A is 3x4, B should be 4x5 = 20, C 3x5 = 15.
                let d = Dims::new(3, 5, 4);
                sgemm(gpu, v, d, 1.0, a.view(), b.view(), 0.0, c.view_mut())?;
                expect_error(
                    sgemm(
                        gpu,
                        v,
                        Dims::new(3, 5, 5),
                        1.0,
                        a.view(),
                        b.view(),
                        0.0,
                        c.view_mut(),
                    ),
                    &["bad input", "A should be 3x5", "12"],
                )?;
                expect_error(
                    sgemm(
                        gpu,
                        v,
                        Dims::new(4, 5, 3),
                        1.0,
                        a.view(),
                        b.view(),
                        0.0,
                        c.view_mut(),
                    ),
                    &["bad input", "B should be 3x5", "20"],
                )?;
                expect_error(
                    sgemm(
                        gpu,
                        v,
                        d,
                        1.0,
                        a.view(),
                        b.view(),
                        0.0,
                        c.view_range_mut(0..14),
                    ),
                    &["bad input", "C should be 3x5", "14"],
                )?;
            }
            gpu.sync()?;
            // Too many row blocks for gridDim.y (65535): M = 65535·128 + 1 with K = N = 1.
            let m = 65535 * 128 + 1;
            let a = gpu.alloc::<f32>(m)?;
            let b = gpu.upload(&[1.0f32])?;
            let mut c = gpu.alloc::<f32>(m)?;
            expect_error(
                sgemm(
                    gpu,
                    Variant::V08DoubleBuffered,
                    Dims::new(m, 1, 1),
                    1.0,
                    a.view(),
                    b.view(),
                    0.0,
                    c.view_mut(),
                ),
                &["blocks in y", "65535"],
            )
        },
    ));
    t.push(GpuTest::new("gemm_zero_sizes", move |gpu| {
        for v in LADDER {
            // M or N zero: nothing launched, nothing to check but that it is Ok.
            let e = gpu.alloc::<f32>(0)?;
            let b = gpu.upload(&[1.0f32; 6])?;
            let mut c = gpu.alloc::<f32>(0)?;
            sgemm(
                gpu,
                v,
                Dims::new(0, 3, 2),
                1.0,
                e.view(),
                b.view(),
                0.0,
                c.view_mut(),
            )?;
            // K zero: C = beta·C exactly (and 0 when beta == 0, even over NaN).
            let c0 = random_f32(&mut rng(seed), 35, -1.0, 1.0);
            let mut c = gpu.upload(&c0)?;
            sgemm(
                gpu,
                v,
                Dims::new(5, 7, 0),
                2.0,
                e.view(),
                e.view(),
                0.5,
                c.view_mut(),
            )?;
            gpu.sync()?;
            let got = c.to_host()?;
            if got.iter().zip(&c0).any(|(g, w)| *g != 0.5 * w) {
                return Err(Error::Mismatch(format!("{}: K=0 is not beta*C", v.entry())));
            }
            gpu.poison(c.view_mut())?;
            sgemm(
                gpu,
                v,
                Dims::new(5, 7, 0),
                2.0,
                e.view(),
                e.view(),
                0.0,
                c.view_mut(),
            )?;
            gpu.sync()?;
            if c.to_host()?.iter().any(|g| *g != 0.0) {
                return Err(Error::Mismatch(format!(
                    "{}: K=0, beta=0 is not 0",
                    v.entry()
                )));
            }
        }
        Ok(())
    }));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_model_hand_computed() {
        // 2x3x4: 48 FLOPs; A 8 + B 12 + C 6 words = 104 bytes; +6 words read with beta.
        let d = Dims::new(2, 3, 4);
        assert_eq!(gemm_cost(d, false), Cost::new(Flops(48), Bytes(104)));
        assert_eq!(gemm_cost(d, true), Cost::new(Flops(48), Bytes(128)));
    }

    #[test]
    fn reference_small_exact() {
        // [1 2; 3 4] · [5 6; 7 8] = [19 22; 43 50]; alpha 2, beta 0.5 on C = 1.
        let d = Dims::new(2, 2, 2);
        let (a, b, c) = ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [1.0; 4]);
        let (w, bound) = gemm_ref(d, 2.0, &a, &b, 0.5, Some(&c));
        assert_eq!(w, vec![38.5, 44.5, 86.5, 100.5]);
        assert!(bound.iter().all(|&x| x > 0.0 && x < 1e-2));
        for i in 0..2 {
            for j in 0..2 {
                let (e, _) = element_ref(d, 2.0, &a, &b, 0.5, Some(&c), i, j);
                assert_eq!(e, w[i * 2 + j]);
            }
        }
        // beta == 0 ignores C even if it is NaN.
        let (w, _) = gemm_ref(d, 1.0, &a, &b, 0.0, Some(&[f32::NAN; 4]));
        assert_eq!(w, vec![19.0, 22.0, 43.0, 50.0]);
    }

    #[test]
    fn bound_accepts_f32_and_rejects_wrong() {
        // An f32 sequential dot product is within the bound; an off-by-one-term one is not.
        let d = Dims::new(3, 5, 4097);
        let mut r = rng(3);
        let a = random_f32(&mut r, d.m * d.k, -1.0, 1.0);
        let b = random_f32(&mut r, d.k * d.n, -1.0, 1.0);
        let (want, bound) = gemm_ref(d, 1.0, &a, &b, 0.0, None);
        let mut got = vec![0.0f32; d.m * d.n];
        for i in 0..d.m {
            for j in 0..d.n {
                let mut s = 0.0f32;
                for kk in 0..d.k {
                    s = a[i * d.k + kk].mul_add(b[kk * d.n + j], s);
                }
                got[i * d.n + j] = s;
            }
        }
        let idx: Vec<usize> = (0..d.m * d.n).collect();
        compare_bounded("f32", d, &got, &idx, &want, &bound).unwrap();
        // One product too many (|a·b| up to 1) is outside: the bound here is ~0.25.
        got[7] += 1.0;
        let e = compare_bounded("x", d, &got, &idx, &want, &bound).unwrap_err();
        assert!(e.contains("1 of 15") && e.contains("C[1][2]"), "{e}");
        got[7] = f32::NAN;
        assert!(compare_bounded("x", d, &got, &idx, &want, &bound).is_err());
    }

    #[test]
    fn threaded_reference_matches_elementwise() {
        let d = Dims::new(37, 19, 23);
        let mut r = rng(5);
        let a = random_f32(&mut r, d.m * d.k, -1.0, 1.0);
        let b = random_f32(&mut r, d.k * d.n, -1.0, 1.0);
        let c = random_f32(&mut r, d.m * d.n, -1.0, 1.0);
        let (w, bd) = gemm_ref(d, 0.7, &a, &b, -0.3, Some(&c));
        for i in 0..d.m {
            for j in 0..d.n {
                let (e, eb) = element_ref(d, 0.7, &a, &b, -0.3, Some(&c), i, j);
                assert!((e - w[i * d.n + j]).abs() < 1e-12);
                assert!((eb - bd[i * d.n + j]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn validation_messages() {
        let d = Dims::new(3, 5, 4);
        validate("op", d, 12, 20, 15).unwrap();
        let e = validate("op", d, 12, 21, 15).unwrap_err().to_string();
        assert!(e.contains("B should be 4x5") && e.contains("21"), "{e}");
        let e = validate("op", Dims::new(1 << 31, 1, 1), 1 << 31, 1, 1 << 31)
            .unwrap_err()
            .to_string();
        assert!(e.contains("M") && e.contains("limit"), "{e}");
        validate("op", Dims::new(0, 5, 4), 0, 20, 0).unwrap();
    }

    #[test]
    fn launch_geometry_covers_c() {
        for v in LADDER {
            for d in TEST_SHAPES {
                let cfg = v.launch_config(d).unwrap();
                let (_, _, rows, cols, shared) = v.geometry();
                let (gm, gn) = if v == Variant::V01Naive {
                    (cfg.grid.0, cfg.grid.1)
                } else {
                    (cfg.grid.1, cfg.grid.0)
                };
                assert!(gm as usize * rows as usize >= d.m, "{v:?} {d}");
                assert!(gn as usize * cols as usize >= d.n, "{v:?} {d}");
                assert_eq!(cfg.shared_bytes, shared * 4);
                // Past 48 KiB the launch opts in (gpu.rs); 99 KiB still fits every sm_80+ GPU.
                assert!(cfg.shared_bytes <= 99 * 1024, "{v:?} shared memory");
                let threads = cfg.block.0 * cfg.block.1;
                assert!(threads <= 1024 && threads.is_multiple_of(32));
            }
        }
        let e = Variant::V05Blocktile2d
            .launch_config(Dims::new(65535 * 128 + 1, 1, 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("blocks in y"), "{e}");
    }

    /// The warp-tile mappings of v07/v08, v09, v10 and v11 give each (row, col) of the block
    /// tile to exactly one thread; v09's lane pairs share addresses as its header says.
    #[test]
    fn warptile_mapping_is_a_bijection() {
        // (BM, BN, WM, WN, WMITER, WNITER, THREADS, lane map); TM = TN = 4 everywhere.
        macro_rules! geometry {
            ($v:ident, $lane:path) => {
                (
                    $v::BM,
                    $v::BN,
                    $v::WM,
                    $v::WN,
                    $v::WMITER,
                    $v::WNITER,
                    $v::THREADS,
                    $lane as fn(u32) -> (u32, u32),
                )
            };
        }
        let geometries = [
            geometry!(v07_warptile, v07_warptile::lane_origin),
            geometry!(v09_interleaved_lanes, v09_interleaved_lanes::lane_origin),
            geometry!(v10_warptile_64x64, v07_warptile::lane_origin),
            geometry!(v11_block_256x128, v07_warptile::lane_origin),
        ];
        for (bm, bn, wm, wn, wmiter, wniter, threads, lane_origin) in geometries {
            let (bm, bn, wm, wn) = (bm as usize, bn as usize, wm as usize, wn as usize);
            let (subm, subn) = (wm / wmiter as usize, wn / wniter as usize);
            let mut seen = vec![0u8; bm * bn];
            for t in 0..threads as usize {
                let (w, lane) = (t / 32, t % 32);
                let wm0 = (w / (bn / wn)) * wm;
                let wn0 = (w % (bn / wn)) * wn;
                let (lr, lc) = lane_origin(lane as u32);
                let (lr, lc) = (lr as usize, lc as usize);
                for sm in 0..wmiter as usize {
                    for i in 0..4 {
                        for sn in 0..wniter as usize {
                            for j in 0..4 {
                                let row = wm0 + sm * subm + lr + i;
                                let col = wn0 + sn * subn + lc + j;
                                seen[row * bn + col] += 1;
                            }
                        }
                    }
                }
            }
            assert!(seen.iter().all(|&s| s == 1));
        }
        // v07: lanes 8 wide, row-major. v09: (l, l^1) share the row (A's address),
        // (l, l^2) share the column (B's address).
        assert_eq!(v07_warptile::lane_origin(9), (4, 4));
        for l in 0..32 {
            let o = v09_interleaved_lanes::lane_origin;
            assert_eq!(o(l).0, o(l ^ 1).0, "lane {l}");
            assert_eq!(o(l).1, o(l ^ 2).1, "lane {l}");
        }
    }

    /// v08's, v10's and v11's loads of one stage (A as in v07: float4 `tid + i·THREADS` of the
    /// BM×BK tile in row-major float4 order, stored transposed; B copied as it is): every A
    /// (row, k) lands transposed exactly once, B's float4s cover the tile; all inside
    /// STAGE_F32.
    #[test]
    fn double_buffer_stage_layout() {
        let geometries = {
            use v08_double_buffered as a;
            use v10_warptile_64x64 as c;
            use v11_block_256x128 as d;
            [
                (a::BK, a::BM, a::BN, a::LDA, a::THREADS, a::STAGE_F32),
                (c::BK, c::BM, c::BN, c::LDA, c::THREADS, c::STAGE_F32),
                (d::BK, d::BM, d::BN, d::LDA, d::THREADS, d::STAGE_F32),
            ]
        };
        for (bk, bm, bn, lda, t, stage_f32) in geometries {
            let [bk, bm, bn, lda, t, stage_f32] =
                [bk, bm, bn, lda, t, stage_f32].map(|x| x as usize);
            let mut hit = vec![0u8; stage_f32];
            for tid in 0..t {
                // Mirrors dev::fetch_tile::<BM, BK, ..> + dev::store_a_transposed.
                for i in 0..bm * bk / 4 / t {
                    let idx = tid + i * t;
                    let (r, c) = (idx / (bk / 4), idx % (bk / 4) * 4);
                    assert!(r < bm);
                    for j in 0..4 {
                        hit[(c + j) * lda + r] += 1;
                    }
                }
                for i in 0..bk * bn / 4 / t {
                    let idx = tid + i * t;
                    let (r, cc) = (idx / (bn / 4), idx % (bn / 4) * 4);
                    for j in 0..4 {
                        hit[bk * lda + r * bn + cc + j] += 1;
                    }
                }
            }
            for kk in 0..bk {
                for mm in 0..lda {
                    assert_eq!(hit[kk * lda + mm], (mm < bm) as u8, "A[{kk}][{mm}]");
                }
            }
            assert!(hit[bk * lda..].iter().all(|&h| h == 1));
        }
    }

    #[test]
    fn names_follow_the_stem() {
        for v in LADDER {
            assert_eq!(v.entry(), format!("gemm_{}", v.stem()));
            assert!(
                crate::ptx::BUILT[0]
                    .1
                    .contains(&format!(".entry {}(", v.entry())),
                "{} not in the PTX",
                v.entry()
            );
        }
    }

    #[test]
    fn cases_cover_every_variant_and_skip_slow_ones() {
        let all = cases(false, None, 1);
        for v in LADDER {
            assert!(all.iter().any(|c| c.variant == v.stem()));
        }
        assert!(
            !all.iter()
                .any(|c| c.shape == "8192^3" && c.variant == "v01_naive")
        );
        assert!(
            all.iter()
                .any(|c| c.shape == "8192x128x8192" && c.variant == "v08_double_buffered")
        );
        assert_eq!(cases(true, None, 1).len(), 2 * LADDER.len());
    }

    #[test]
    fn samples_include_edges() {
        let d = Dims::new(10, 7, 3);
        let s = sample_indices(d, 5, 1);
        assert!(s.contains(&0) && s.contains(&69) && s.contains(&6) && s.contains(&63));
        assert!(s.iter().all(|&e| e < 70));
    }
}
