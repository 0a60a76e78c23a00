//! gemm: the GPU correctness tests (every variant and the cuBLAS peer against the CPU
//! reference, at awkward shapes and alignments, bad shapes, zero sizes), and the check the
//! bench reuses.

use super::launch::{Dims, LADDER, Variant, sgemm};
use super::reference::Reference;
use crate::check::{random_f32, rng};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::peer::cublas::Cublas;
use crate::testing::{GpuTest, expect_error};

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
    let name = v.map(|v| v.kernel().name()).unwrap_or("cublasSgemm");
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

/// The family's GPU tests: every variant (and cuBLAS, when found) against the CPU
/// reference, bad shapes, zero sizes.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for v in LADDER {
        t.push(GpuTest::new(
            format!("{}_matches_cpu", v.kernel().name()),
            move |gpu| check_all(gpu, Some(v), None, seed),
        ));
    }
    // v12's split path at small shapes (so the sanitizers run it too): uneven slices, K not
    // a multiple of BK, beta != 0, and A, B, C 4 bytes off 16-byte alignment.
    t.push(GpuTest::new(
        format!(
            "{}_slices_add_up_to_cpu",
            Variant::V12SplitK.kernel().name()
        ),
        move |gpu| {
            let sms = gpu.info.multiprocessors;
            for (i, d) in [Dims::new(100, 70, 700), Dims::new(3, 5, 2000), Dims::new(300, 129, 1031)]
                .into_iter()
                .enumerate()
            {
                let s = Variant::V12SplitK.slices(d, sms);
                if s < 2 {
                    return Err(Error::Other(format!(
                        "{d}: v12 chose {s} slice(s) on {sms} SMs; this test needs a split"
                    )));
                }
                for (j, &(alpha, beta)) in TEST_SCALARS.iter().enumerate() {
                    for off in [0, 1] {
                        let seed = seed ^ (0x5150 + (i * 4 + j * 2 + off) as u64);
                        check(gpu, Some(Variant::V12SplitK), None, d, alpha, beta, off, seed)?;
                    }
                }
            }
            Ok(())
        },
    ));
    // Without libcublas the harness reports this test skipped, by name (never passed).
    t.push(
        GpuTest::new("gemm_cublas_peer_matches_cpu", move |gpu| {
            let cb = Cublas::load().map_err(Error::Other)?;
            eprintln!("gemm_cublas_peer_matches_cpu: using {}", cb.path);
            check_all(gpu, None, Some(&cb), seed)
        })
        .requiring_cublas(),
    );
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
                return Err(Error::Mismatch(format!(
                    "{}: K=0 is not beta*C",
                    v.kernel().name()
                )));
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
                    v.kernel().name()
                )));
            }
        }
        Ok(())
    }));
    t
}
