//! transpose: the GPU correctness tests (every variant against the CPU reference, bit for
//! bit, at awkward shapes and alignments, and bad input), and the check the bench reuses.

use rooflab_kernels::transpose::MAX_DIM;

use super::launch::{LADDER, Variant, transpose, validate};
use super::reference::transpose_ref;
use crate::check::{compare_f32, random_f32, rng};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::testing::{GpuTest, expect_error};

/// One check: an `m × n` transpose with the input starting `in_off` elements and the output
/// `out_off` elements into their allocations (so 16-byte alignment varies), fresh random
/// data, output poisoned, every element compared exactly; the elements around the output
/// window must be untouched.
pub fn check(
    gpu: &Gpu,
    v: Variant,
    m: usize,
    n: usize,
    in_off: usize,
    out_off: usize,
    seed: u64,
) -> Result<()> {
    let mut r = rng(seed);
    let x = random_f32(&mut r, m * n + in_off, -1.0, 1.0);
    let guard = random_f32(&mut r, out_off, -1.0, 1.0);
    let dx = gpu.upload(&x)?;
    let mut dy = gpu.alloc::<f32>(m * n + out_off)?;
    if out_off > 0 {
        let mut init = guard.clone();
        init.resize(m * n + out_off, 0.0);
        dy.copy_from_host(&init)?;
    }
    gpu.poison(dy.view_range_mut(out_off..out_off + m * n))?;
    transpose(
        gpu,
        v,
        m,
        n,
        dx.view_range(in_off..in_off + m * n),
        dy.view_range_mut(out_off..out_off + m * n),
    )?;
    gpu.sync()?;
    let got = dy.to_host()?;
    let what = format!(
        "{} {m}x{n} offsets=({in_off},{out_off}) seed={seed}",
        v.kernel().name()
    );
    compare_f32(
        &format!("{what} (before window)"),
        &got[..out_off],
        &guard,
        0.0,
        0.0,
    )
    .map_err(Error::Mismatch)?;
    let want = transpose_ref(&x[in_off..], m, n);
    // Bit-exact: compare_f32 with zero tolerance also fails any NaN (the poison).
    compare_f32(&what, &got[out_off..], &want, 0.0, 0.0).map_err(Error::Mismatch)
}

/// Shapes every variant is checked at: 1×1, a row, a column, odd and prime shapes that are
/// no multiple of any tile, a tall one that needs the y loop only where grids are capped,
/// a wide one past 65535 column blocks (v04's y loop over columns), a large awkward one and
/// the bench shape.
pub const TEST_SHAPES: [(usize, usize); 13] = [
    (1, 1),
    (1, 1000),
    (1000, 1),
    (33, 65),
    (4, 4),
    (31, 37),
    (127, 257),
    (1021, 1031),
    (7, 100_003),
    (100_003, 5),
    (3, 2_100_007),
    (4097, 8191),
    (8192, 8192),
];

/// (input offset, output offset) in elements, run at the smaller shapes: both aligned, both
/// off by one element (no 16-byte access possible), only the output off.
pub const TEST_OFFSETS: [(usize, usize); 3] = [(0, 0), (1, 1), (0, 3)];

pub fn check_variant(gpu: &Gpu, v: Variant, seed: u64) -> Result<()> {
    for (k, &(m, n)) in crate::testing::matrices(&TEST_SHAPES).iter().enumerate() {
        let offsets: &[(usize, usize)] = if m * n <= 1 << 22 {
            &TEST_OFFSETS
        } else {
            &TEST_OFFSETS[..1]
        };
        for (l, &(a, b)) in offsets.iter().enumerate() {
            check(gpu, v, m, n, a, b, seed.wrapping_add((k * 7 + l) as u64))?;
        }
    }
    // Multiples of 4 with aligned buffers: v04's all-vector path at an edge-free and an
    // edge-cut shape (rows not a multiple of the block's 128).
    for (m, n) in [(128, 32), (260, 132), (4, 8)] {
        check(gpu, v, m, n, 0, 0, seed ^ 0x5eed)?;
    }
    Ok(())
}

/// The family's GPU tests: every variant against the CPU reference, and bad input.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for v in LADDER {
        t.push(GpuTest::new(
            format!("{}_matches_cpu", v.kernel().name()),
            move |gpu| check_variant(gpu, v, seed),
        ));
    }
    t.push(GpuTest::new(
        "transpose_mismatched_lengths_are_refused_before_launch",
        |gpu| {
            let a = gpu.upload(&[1.0f32; 12])?;
            let mut b = gpu.alloc::<f32>(13)?;
            let mut c = gpu.alloc::<f32>(12)?;
            for v in LADDER {
                // Output too long, input too short for the shape, shape product wrong.
                expect_error(
                    transpose(gpu, v, 3, 4, a.view(), b.view_mut()),
                    &["bad input", "3 x 4", "12", "13"],
                )?;
                expect_error(
                    transpose(gpu, v, 4, 4, a.view(), c.view_mut()),
                    &["bad input", "4 x 4", "16"],
                )?;
            }
            Ok(())
        },
    ));
    t.push(GpuTest::new(
        "transpose_zero_size_launches_nothing",
        |gpu| {
            let a = gpu.alloc::<f32>(0)?;
            let mut c = gpu.upload(&[7.0f32; 8])?;
            for v in LADDER {
                for (m, n) in [(0, 0), (0, 5), (5, 0)] {
                    transpose(gpu, v, m, n, a.view(), c.view_range_mut(4..4))?;
                }
            }
            gpu.sync()?;
            if c.to_host()? != vec![7.0f32; 8] {
                return Err(Error::Mismatch("an empty transpose wrote something".into()));
            }
            Ok(())
        },
    ));
    t.push(GpuTest::new(
        "transpose_dimension_past_32_bit_index_is_refused",
        |gpu| {
            // A 1 × 2^31 matrix cannot be allocated cheaply; the limit is checked from the shape
            // and the views' lengths alone, so fake-length views of an empty array suffice.
            let a = gpu.alloc::<f32>(0)?;
            let mut b = gpu.alloc::<f32>(0)?;
            let big = (MAX_DIM + 1) as usize;
            let v04 = Variant::V04MultiElementVectorized.kernel().name();
            let r = validate(v04, 1, big, big, big);
            expect_error(r, &["columns (n)", "limit"])?;
            let r = validate(Variant::V01Naive.kernel().name(), big, 1, big, big);
            expect_error(r, &["rows (m)", "limit"])?;
            // And through the public entry: the length check comes first for real views.
            expect_error(
                transpose(gpu, Variant::V01Naive, 1, big, a.view(), b.view_mut()),
                &["bad input"],
            )
        },
    ));
    t
}
