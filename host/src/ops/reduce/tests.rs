//! reduce: the GPU correctness tests (every variant against the f64 reference at awkward
//! lengths and alignments, and bit for bit against the exact sum of small integers;
//! run-to-run determinism, bad input), and the check and inputs the bench reuses.

use super::launch::{LADDER, Variant, partials_len, sum, v07_blocks, v07_head, workspace_len};
use super::reference::{
    chain_len, compare_exact, compare_sum, compare_sum_to, exact_sum, passes, sum_ref,
};
use crate::check::{random_f32, random_small_integers, rng};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, View};
use crate::testing::{GpuTest, expect_error};

/// The input distributions: positive with mean 1 (the relative check is tight), mixed signs
/// (cancellation; the bound is relative to Σ|x|), and small integers of both signs, uniform
/// over ±1..=[`SMALL_INTEGER_MAX`], whose sums f32 forms exactly: checked bit for bit against
/// the i64 sum (see `reference`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inputs {
    Positive,
    MixedSigns,
    SmallIntegers,
}

/// The largest magnitude of [`Inputs::SmallIntegers`]: small enough that v07's partial sums at
/// 2^28 stay 7× below 2^24 (`reference`), large enough that a block rarely sums to 0.
pub const SMALL_INTEGER_MAX: u32 = 16;

pub fn inputs(seed: u64, n: usize, kind: Inputs) -> Vec<f32> {
    let (lo, hi) = match kind {
        Inputs::Positive => (0.5, 1.5),
        Inputs::MixedSigns => (-1.0, 1.0),
        Inputs::SmallIntegers => {
            return random_small_integers(&mut rng(seed), n, SMALL_INTEGER_MAX);
        }
    };
    random_f32(&mut rng(seed), n, lo, hi)
}

/// One check: `n` elements starting `off` elements into their allocation (so the 16-byte
/// head varies), output poisoned, compared with the f64 sum (bit for bit with the exact sum
/// for [`Inputs::SmallIntegers`]). Returns the GPU's result.
pub fn check(gpu: &Gpu, v: Variant, n: usize, off: usize, kind: Inputs, seed: u64) -> Result<f32> {
    let x = inputs(seed, n + off, kind);
    let dx = gpu.upload(&x)?;
    let view = dx.view_range(off..off + n);
    let head = v07_head(view.device_addr(), n as u64);
    let got = gpu_sum(gpu, v, view)?;
    let what = format!(
        "{} n={n} offset={off} {kind:?} seed={seed}",
        v.row_variant()
    );
    let blocks = chain_blocks(gpu, v, n)?;
    if kind == Inputs::SmallIntegers {
        let want = exact_sum(v, &x[off..], blocks, head)
            .map_err(|e| Error::Other(format!("{what}: {e}")))?;
        compare_exact(&what, got, want)?;
    } else {
        compare_sum(&what, got, &x[off..], chain_len(v, n as u64, blocks))?;
    }
    Ok(got)
}

/// `x` summed on the GPU by `v`, output and workspace poisoned first.
fn gpu_sum(gpu: &Gpu, v: Variant, x: View<'_, f32>) -> Result<f32> {
    let mut out = gpu.alloc::<f32>(1)?;
    let mut ws = gpu.alloc::<f32>(workspace_len(gpu, v, x.len() as u64))?;
    gpu.poison(out.view_mut())?;
    gpu.poison(ws.view_mut())?;
    sum(gpu, v, x, out.view_mut(), Some(ws.view_mut()))?;
    gpu.sync()?;
    Ok(out.to_host()?[0])
}

/// The blocks whose partial sums v07 adds (0 for the other variants).
fn chain_blocks(gpu: &Gpu, v: Variant, n: usize) -> Result<u64> {
    Ok(match v {
        Variant::V07MultiElement { .. } => v07_blocks(gpu, n as u64)? as u64,
        _ => 0,
    })
}

/// The value of every element past index 2^31 in the 2^31 + 5 test: 2^20 each, so the
/// 5 of them weigh 5·2^20 ≈ 0.24% of the ~2^31 total, far above the check's bound for
/// positive inputs (~1e-5 relative). A kernel that drops them, wraps a 32-bit offset
/// (reading elements near 0, ~1 each, instead) or returns 0 fails.
pub const PAST_2_31_VALUE: f32 = 1_048_576.0;

/// The 2^31 + 5 check: positive inputs with a distinctive tail past 2^31, and the check
/// itself proven on the same data against the bugs it is there to catch.
fn past_2_31(gpu: &Gpu, seed: u64) -> Result<()> {
    let n = (1usize << 31) + 5;
    let mut x = inputs(seed, n, Inputs::Positive);
    for v in &mut x[1 << 31..] {
        *v = PAST_2_31_VALUE;
    }
    // One upload and one f64 reference (8 GiB each way) for both variants and the planted bugs.
    let dx = gpu.upload(&x)?;
    let (want, abs) = sum_ref(&x);
    let tail: f64 = x[1 << 31..].iter().map(|&v| v as f64).sum();
    let body = want - tail;
    let wrapped = body + x[..5].iter().map(|&v| v as f64).sum::<f64>();
    for deterministic in [false, true] {
        let v = Variant::V07MultiElement { deterministic };
        let what = format!("{} n={n} positive, 2^20 past 2^31, seed={seed}", v.row_variant());
        let h = chain_len(v, n as u64, chain_blocks(gpu, v, n)?);
        let got = gpu_sum(gpu, v, dx.view())?;
        compare_sum_to(&what, got, want, abs, h)?;
        // Planted bugs, each computed from this very input: the check must refuse them.
        for (bug, value) in [
            ("returns 0", 0.0),
            ("drops the 5 elements past 2^31", body),
            ("wraps a 32-bit offset (reads x[0..5] for the tail)", wrapped),
        ] {
            if passes(value as f32, want, abs, h) {
                return Err(Error::Mismatch(format!(
                    "the 2^31 + 5 check would pass a kernel that {bug} ({value:e}; the GPU gave {got:e})"
                )));
            }
        }
    }
    Ok(())
}

/// Lengths every variant is checked at: 1, 2, around a block, primes, and 2^24 + 3.
pub const TEST_LENGTHS: [usize; 11] = [
    1,
    2,
    3,
    31,
    1023,
    1024,
    1025,
    65_537,
    1_000_003,
    (1 << 22) + 1,
    (1 << 24) + 3,
];

pub fn check_variant(gpu: &Gpu, v: Variant, seed: u64) -> Result<()> {
    let mut lengths = crate::testing::lengths(&TEST_LENGTHS);
    if !matches!(v, Variant::V01Atomic) && !crate::testing::sanitizing() {
        // The top of the supported range (1 GiB of input); v01 is limited to 2^24 (see
        // `reference`).
        lengths.push(1 << 28);
    }
    for (k, &n) in lengths.iter().enumerate() {
        let s = seed.wrapping_add(k as u64 * 13);
        for kind in [Inputs::Positive, Inputs::MixedSigns] {
            check(gpu, v, n, 0, kind, s)?;
        }
        // Exact, so one dropped block fails even at 2^28, where the positive inputs' bound
        // allows more than a block's sum (`reduce_2_28_check_refuses_a_dropped_block`). Not
        // v01: its running sum over 2^24 integers passes 2^24, where f32 adds round.
        let exact = v != Variant::V01Atomic;
        if exact {
            check(gpu, v, n, 0, Inputs::SmallIntegers, s)?;
        }
        // Misaligned starts (v07's scalar head) at the smaller lengths.
        if n <= 1 << 22 {
            for off in [1, 3] {
                check(gpu, v, n, off, Inputs::Positive, s ^ off as u64)?;
                if exact {
                    check(gpu, v, n, off, Inputs::SmallIntegers, s ^ off as u64)?;
                }
            }
        }
    }
    Ok(())
}

/// The family's GPU tests: every variant against the f64 reference, determinism, and bad
/// input.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for v in LADDER {
        // Named after the kernel that writes the result (the deterministic v07's final pass).
        let name = format!("{}_matches_cpu", v.result_kernel().name());
        t.push(GpuTest::new(name, move |gpu| check_variant(gpu, v, seed)));
    }
    // v03 adds v02's pairs in v02's order, only from other threads (its header's claim):
    // the same bits.
    let (v02, v03) = (Variant::V02TreeDivergent, Variant::V03StridedIndex);
    t.push(GpuTest::new(
        format!("{}_is_v02_bit_for_bit", v03.kernel().name()),
        move |gpu| {
            for (n, kind) in [
                (1_000_003, Inputs::MixedSigns),
                ((1 << 24) + 3, Inputs::Positive),
            ] {
                let dx = gpu.upload(&inputs(seed, n, kind))?;
                let (a, b) = (gpu_sum(gpu, v02, dx.view())?, gpu_sum(gpu, v03, dx.view())?);
                if a.to_bits() != b.to_bits() {
                    return Err(Error::Mismatch(format!(
                        "n={n} {kind:?} seed={seed}: {} gave {a:e}, {} gave {b:e}",
                        v02.row_variant(),
                        v03.row_variant()
                    )));
                }
            }
            Ok(())
        },
    ));
    // 2^31 + 5 f32 (8 GiB): past i32 indexing, both the atomic and the deterministic v07
    // (the kernels index with u64). Skipped under the sanitizer with the other multi-GB tests.
    t.push(GpuTest::new("reduce_v07_past_2_31_elements", move |gpu| {
        past_2_31(gpu, seed ^ 0x231)
    }));
    let det = Variant::V07MultiElement {
        deterministic: true,
    };
    t.push(GpuTest::new(
        format!("{}_is_bit_identical_run_to_run", det.result_kernel().name()),
        move |gpu| {
            for (n, off) in [(1usize << 28, 0usize), ((1 << 24) + 3, 1), (1_000_003, 3)] {
                for kind in [Inputs::Positive, Inputs::MixedSigns] {
                    let a = check(gpu, det, n, off, kind, seed)?;
                    let b = check(gpu, det, n, off, kind, seed)?;
                    if a.to_bits() != b.to_bits() {
                        return Err(Error::Mismatch(format!(
                            "deterministic sum n={n} offset={off} {kind:?}: {a:e} \
                             ({:#010x}) then {b:e} ({:#010x})",
                            a.to_bits(),
                            b.to_bits()
                        )));
                    }
                }
            }
            Ok(())
        },
    ));
    t.push(GpuTest::new(
        "reduce_bad_output_is_refused_before_launch",
        move |gpu| {
            let x = gpu.upload(&[1.0f32; 10])?;
            let mut out2 = gpu.alloc::<f32>(2)?;
            let mut out0 = gpu.alloc::<f32>(0)?;
            for v in LADDER {
                expect_error(
                    sum(gpu, v, x.view(), out2.view_mut(), None),
                    &["bad input", "one element", "2"],
                )?;
                expect_error(
                    sum(gpu, v, x.view(), out0.view_mut(), None),
                    &["bad input", "one element", "0"],
                )?;
            }
            let mut out = gpu.alloc::<f32>(1)?;
            expect_error(
                sum(gpu, det, x.view(), out.view_mut(), None),
                &["bad input", "workspace", "got none"],
            )?;
            let mut small = gpu.alloc::<f32>(3)?;
            expect_error(
                sum(gpu, det, x.view(), out.view_mut(), Some(small.view_mut())),
                &["bad input", "workspace", "it has 3"],
            )?;
            // A multi-pass variant on 1000 elements needs 4 partials (256 per block).
            let x = gpu.upload(&[1.0f32; 1000])?;
            expect_error(
                sum(
                    gpu,
                    Variant::V04TreeSequential,
                    x.view(),
                    out.view_mut(),
                    None,
                ),
                &["bad input", "workspace of 4", "got none"],
            )?;
            expect_error(
                sum(
                    gpu,
                    Variant::V04TreeSequential,
                    x.view(),
                    out.view_mut(),
                    Some(small.view_mut()),
                ),
                &["bad input", "workspace of 4", "it has 3"],
            )
        },
    ));
    t.push(GpuTest::new(
        "reduce_empty_input_gives_zero_without_launch",
        |gpu| {
            let x = gpu.alloc::<f32>(0)?;
            let mut out = gpu.alloc::<f32>(1)?;
            let mut ws = gpu.alloc::<f32>(partials_len(gpu))?;
            for v in LADDER {
                gpu.poison(out.view_mut())?;
                sum(gpu, v, x.view(), out.view_mut(), Some(ws.view_mut()))?;
                gpu.sync()?;
                let got = out.to_host()?[0];
                if got.to_bits() != 0 {
                    return Err(Error::Mismatch(format!(
                        "{}: empty sum gave {got:e}, want 0",
                        v.row_variant()
                    )));
                }
            }
            Ok(())
        },
    ));
    t
}
