//! memory: the GPU correctness tests (every variant against the CPU reference, at awkward
//! lengths and alignments, and bad input), and the checks the bench reuses.

use rooflab_kernels::memory::PARTICLE_F32S;

use super::launch::{LADDER, Op, Variant, copy, particles_aos, particles_soa, saxpy};
use super::reference::{particles_ref, saxpy_ref};
use crate::check::{compare_f32, random_f32, rng};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::testing::{GpuTest, expect_error};

pub const SAXPY_A: f32 = 1.75;
pub const DT: f32 = 0.01;

/// One correctness check of copy or saxpy: `n` elements, the input array starting
/// `src_off` elements into its allocation and the output `dst_off` (so alignments differ),
/// fresh random data from `seed`, output poisoned, every element compared.
pub fn check_elementwise(
    gpu: &Gpu,
    v: Variant,
    op: Op,
    n: usize,
    src_off: usize,
    dst_off: usize,
    seed: u64,
) -> Result<()> {
    check_elementwise_scaled(gpu, v, op, n, (src_off, dst_off), 1.0, seed)
}

/// `check_elementwise` with values drawn from `[-scale, scale)`.
pub fn check_elementwise_scaled(
    gpu: &Gpu,
    v: Variant,
    op: Op,
    n: usize,
    (src_off, dst_off): (usize, usize),
    scale: f32,
    seed: u64,
) -> Result<()> {
    let mut r = rng(seed);
    let x = random_f32(&mut r, n + src_off, -scale, scale);
    let y = random_f32(&mut r, n + dst_off, -scale, scale);
    let dx = gpu.upload(&x)?;
    let mut dy = gpu.upload(&y)?;
    let what = format!(
        "{} n={n} offsets=({src_off},{dst_off}) scale={scale:e} seed={seed}",
        v.kernel(op)
    );
    let want = match op {
        Op::Copy => {
            gpu.poison(dy.view_range_mut(dst_off..dst_off + n))?;
            copy(
                gpu,
                v,
                dx.view_range(src_off..src_off + n),
                dy.view_range_mut(dst_off..dst_off + n),
            )?;
            x[src_off..].to_vec()
        }
        Op::Saxpy => {
            saxpy(
                gpu,
                v,
                SAXPY_A,
                dx.view_range(src_off..src_off + n),
                dy.view_range_mut(dst_off..dst_off + n),
            )?;
            saxpy_ref(SAXPY_A, &x[src_off..], &y[dst_off..])
        }
    };
    gpu.sync()?;
    let got = dy.to_host()?;
    // Elements outside the window must be untouched.
    compare_f32(
        &format!("{what} (before window)"),
        &got[..dst_off],
        &y[..dst_off],
        0.0,
        0.0,
    )
    .map_err(Error::Mismatch)?;
    // Copy is exact. saxpy rounds once (fma): within half an ulp of |a*x| + |y| <= 2.75 scale,
    // which near cancellation is an absolute, not a relative, bound.
    let (rel, abs) = if op == Op::Copy {
        (0.0, 0.0)
    } else {
        (1e-6, 2.75 * scale * f32::EPSILON)
    };
    compare_f32(&what, &got[dst_off..], &want, rel, abs).map_err(Error::Mismatch)
}

/// One correctness check of the particle update, AoS (`soa == false`) or SoA.
pub fn check_particles(gpu: &Gpu, soa: bool, n: usize, seed: u64) -> Result<()> {
    let aos = random_f32(&mut rng(seed), n * PARTICLE_F32S, -10.0, 10.0);
    let want = particles_ref(&aos, DT);
    let what = format!(
        "{} n={n} seed={seed}",
        super::launch::particles_kernel_use(soa).kernel
    );
    let got = if soa {
        let field = |f: usize| {
            aos.chunks_exact(PARTICLE_F32S)
                .map(|p| p[f])
                .collect::<Vec<_>>()
        };
        let mut pos = [
            gpu.upload(&field(0))?,
            gpu.upload(&field(1))?,
            gpu.upload(&field(2))?,
        ];
        let vel = [
            gpu.upload(&field(3))?,
            gpu.upload(&field(4))?,
            gpu.upload(&field(5))?,
        ];
        let [p0, p1, p2] = &mut pos;
        particles_soa(
            gpu,
            [p0.view_mut(), p1.view_mut(), p2.view_mut()],
            [vel[0].view(), vel[1].view(), vel[2].view()],
            DT,
        )?;
        gpu.sync()?;
        let pos = [pos[0].to_host()?, pos[1].to_host()?, pos[2].to_host()?];
        let mut out = aos.clone();
        for (i, p) in out.chunks_exact_mut(PARTICLE_F32S).enumerate() {
            for k in 0..3 {
                p[k] = pos[k][i];
            }
        }
        out
    } else {
        let mut d = gpu.upload(&aos)?;
        particles_aos(gpu, d.view_mut(), DT)?;
        gpu.sync()?;
        d.to_host()?
    };
    compare_f32(&what, &got, &want, 1e-6, 1e-6).map_err(Error::Mismatch)
}

/// Lengths every correctness test covers: 1, tiny, warp-sized and odd, a prime past a
/// million, and one past any tile or vector multiple.
pub const TEST_LENGTHS: [usize; 8] = [1, 2, 3, 31, 1000, 4099, 1_000_003, (1 << 22) + 3];
/// (input offset, output offset) in elements: aligned, equally misaligned, differently
/// misaligned (no common 16-byte split).
pub const TEST_OFFSETS: [(usize, usize); 4] = [(0, 0), (1, 1), (3, 3), (1, 2)];
/// Strides the v01 test runs.
pub const TEST_STRIDES: [u32; 6] = [1, 2, 7, 8, 32, 64];

/// Every (variant, op) the correctness suite covers, v01 at each test stride.
pub fn test_matrix() -> Vec<(Variant, Op)> {
    let mut out = Vec::new();
    for op in [Op::Copy, Op::Saxpy] {
        for v in LADDER {
            out.push((v, op));
        }
    }
    out
}

/// The whole correctness check of one ladder variant: all lengths and offsets (and, for
/// v01, all test strides).
pub fn check_variant(gpu: &Gpu, v: Variant, op: Op, seed: u64) -> Result<()> {
    let variants: Vec<Variant> = match v {
        Variant::V01Strided { .. } => TEST_STRIDES
            .iter()
            .map(|&stride| Variant::V01Strided { stride })
            .collect(),
        v => vec![v],
    };
    for v in variants {
        for (i, &n) in crate::testing::lengths(&TEST_LENGTHS).iter().enumerate() {
            for (j, &(so, d)) in TEST_OFFSETS.iter().enumerate() {
                check_elementwise(gpu, v, op, n, so, d, seed.wrapping_add((i * 31 + j) as u64))?;
            }
        }
    }
    Ok(())
}

/// Particle lengths the correctness tests cover.
pub const TEST_PARTICLES: [usize; 5] = [1, 31, 257, 100_003, 1 << 20];

/// The family's GPU tests: every variant against the CPU reference, and bad input.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for (v, op) in test_matrix() {
        t.push(GpuTest::new(
            format!("{}_matches_cpu", v.kernel(op)),
            move |gpu| check_variant(gpu, v, op, seed),
        ));
    }
    for soa in [false, true] {
        let name = format!(
            "{}_matches_cpu",
            super::launch::particles_kernel_use(soa).kernel
        );
        t.push(GpuTest::new(name, move |gpu| {
            for (i, &n) in crate::testing::lengths(&TEST_PARTICLES).iter().enumerate() {
                check_particles(gpu, soa, n, seed + i as u64)?;
            }
            Ok(())
        }));
    }
    t.push(GpuTest::new(
        "memory_mismatched_lengths_are_refused_before_launch",
        |gpu| {
            let a = gpu.upload(&[1.0f32; 10])?;
            let mut b = gpu.alloc::<f32>(11)?;
            for v in LADDER {
                expect_error(
                    copy(gpu, v, a.view(), b.view_mut()),
                    &["bad input", "10", "11"],
                )?;
                expect_error(
                    saxpy(gpu, v, 1.0, a.view(), b.view_mut()),
                    &["bad input", "10", "11"],
                )?;
            }
            let mut p = gpu.alloc::<f32>(12)?;
            expect_error(
                particles_aos(gpu, p.view_mut(), 0.1),
                &["whole number", "particles"],
            )?;
            let (mut x, mut y, mut z) = (
                gpu.alloc::<f32>(4)?,
                gpu.alloc::<f32>(4)?,
                gpu.alloc::<f32>(5)?,
            );
            let v3 = gpu.alloc::<f32>(4)?;
            let r = particles_soa(
                gpu,
                [x.view_mut(), y.view_mut(), z.view_mut()],
                [v3.view(), v3.view(), v3.view()],
                0.1,
            );
            expect_error(r, &["bad input", "5"])
        },
    ));
    t.push(GpuTest::new("memory_zero_length_launches_nothing", |gpu| {
        let a = gpu.alloc::<f32>(0)?;
        let mut b = gpu.alloc::<f32>(0)?;
        for v in LADDER {
            copy(gpu, v, a.view(), b.view_mut())?;
            saxpy(gpu, v, 2.0, a.view(), b.view_mut())?;
        }
        // A zero-length window of a real array: the elements around it stay untouched.
        let mut c = gpu.upload(&[7.0f32; 8])?;
        copy(
            gpu,
            Variant::V03Vectorized,
            a.view(),
            c.view_range_mut(4..4),
        )?;
        gpu.sync()?;
        if c.to_host()? != vec![7.0f32; 8] {
            return Err(Error::Mismatch("a zero-length copy wrote something".into()));
        }
        Ok(())
    }));
    t.push(GpuTest::new(
        "memory_property_random_shapes_match_cpu",
        move |gpu| property_test(gpu, seed),
    ));
    t.push(GpuTest::new("memory_copy_past_2_31_elements", move |gpu| {
        // 2^31 + 5 f32: past i32 indexing, so 64-bit index math is exercised for real.
        let n = (1usize << 31) + 5;
        let host = fast_random(n, seed);
        let src = gpu.upload(&host)?;
        let mut dst = gpu.alloc::<f32>(n)?;
        for v in [
            Variant::V01Strided { stride: 32 },
            Variant::V02Coalesced,
            Variant::V03Vectorized,
            Variant::V04GridStrideIlp,
        ] {
            gpu.poison(dst.view_mut())?;
            copy(gpu, v, src.view(), dst.view_mut())?;
            gpu.sync()?;
            let got = dst.to_host()?;
            if let Some(i) = (0..n).find(|&i| got[i].to_bits() != host[i].to_bits()) {
                return Err(Error::Mismatch(format!(
                    "{} n={n}: element {i} is {:e}, want {:e} (seed {seed})",
                    v.kernel(Op::Copy),
                    got[i],
                    host[i]
                )));
            }
        }
        Ok(())
    }));
    t.push(GpuTest::new(
        "memory_v01_strided_refuses_stride_out_of_range",
        |gpu| {
            let a = gpu.upload(&[1.0f32; 100])?;
            let mut b = gpu.alloc::<f32>(100)?;
            for stride in [0, 65, 1000] {
                expect_error(
                    copy(gpu, Variant::V01Strided { stride }, a.view(), b.view_mut()),
                    &["stride", "1..=64"],
                )?;
            }
            Ok(())
        },
    ));
    t
}

/// `n` random f32 in [-1, 1) from a fast generator (for the multi-gigabyte tests).
fn fast_random(n: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut r = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..n).map(|_| r.random_range(-1.0f32..1.0)).collect()
}

/// Property test: random variant, op, length (weighted to small and odd), offsets, stride
/// and value scale, each case checked against the CPU reference. The proptest RNG is seeded
/// from the suite's seed, so a failure names the seed that replays it.
fn property_test(gpu: &Gpu, seed: u64) -> Result<()> {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

    let cases = if crate::testing::sanitizing() { 16 } else { 96 };
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let strategy = (
        0usize..4,
        any::<bool>(),
        prop_oneof![0usize..70, 0usize..5000, 0usize..300_000],
        0usize..4,
        0usize..4,
        1u32..=64,
        prop::sample::select(vec![1e-30f32, 1e-3, 1.0, 1e3, 1e30]),
        any::<u64>(),
    );
    runner
        .run(
            &strategy,
            |(vi, saxpy_op, n, so, d, stride, scale, case_seed)| {
                let v = match LADDER[vi] {
                    Variant::V01Strided { .. } => Variant::V01Strided { stride },
                    v => v,
                };
                let op = if saxpy_op { Op::Saxpy } else { Op::Copy };
                check_elementwise_scaled(gpu, v, op, n, (so, d), scale, case_seed)
                    .map_err(|e| TestCaseError::fail(e.to_string()))
            },
        )
        .map_err(|e| {
            Error::Mismatch(format!(
                "property test failed (replay with ROOFLAB_SEED={seed}): {e}"
            ))
        })
}

// Keep the kernel crate's particle layout and this file's assumptions in one place.
const _: () = assert!(size_of::<rooflab_kernels::memory::Particle>() == 32);
