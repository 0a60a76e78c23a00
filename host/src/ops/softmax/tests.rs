//! softmax: the GPU correctness tests (every variant and `auto`, both dtypes, against the
//! CPU reference at awkward shapes and inputs, and bad input), and the check the bench
//! reuses.

use rooflab_kernels::softmax::{WARP_ROW_MAX_COLS, v07_cluster_row, v08_cluster_registers};

use super::launch::{LADDER, Variant, auto, auto_choice, clusters_available, softmax};
use super::reference::softmax_ref;
use crate::check::{compare_f32, random_f32, rng};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::ops::cluster_row::{Keep, check_every_size};
use crate::tensor::{Buf, Dtype, RowStats};
use crate::testing::{GpuTest, expect_error};

/// (rel, abs) tolerance for rows of `cols`; see the module header.
pub fn tolerance(dt: Dtype, cols: usize) -> (f32, f32) {
    let f32_rel = 4e-6 + 6e-8 * (cols as f32 / 32.0 + 10.0);
    match dt {
        Dtype::F32 => (f32_rel, UNDERFLOW_ABS),
        Dtype::Bf16 => (8e-3 + f32_rel, UNDERFLOW_ABS),
    }
}

/// The absolute floor of both dtypes: a few times f32's (and bf16's: the same exponent range)
/// smallest normal, where flush-to-zero may drop a value. Every output above it is checked
/// relatively (a floor of 1e-6 used to leave 37-70% of bf16 outputs of long rows unchecked).
pub const UNDERFLOW_ABS: f32 = 4.0 * f32::MIN_POSITIVE;

/// Input patterns the checks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Uniform in [-8, 8).
    Normal,
    /// Uniform in [-1e4, 1e4): overflow without the max subtraction.
    Huge,
    /// Normal, with every 7th element -inf and row 1 (if any) entirely -inf.
    NegInf,
    /// -inf except the last `cols / 16 + 1` elements of each row (Normal there): whole
    /// lanes, threads and (v07) blocks of the cluster see only -inf, and the max arrives last.
    Tail,
}

/// The patterns every variant is checked with.
pub const PATTERNS: [Pattern; 4] = [Pattern::Normal, Pattern::Huge, Pattern::NegInf, Pattern::Tail];

pub fn make_input(dt: Dtype, rows: usize, cols: usize, p: Pattern, seed: u64) -> Vec<f32> {
    let (lo, hi) = if p == Pattern::Huge {
        (-1e4, 1e4)
    } else {
        (-8.0, 8.0)
    };
    let mut x: Vec<f32> = random_f32(&mut rng(seed), rows * cols, lo, hi)
        .into_iter()
        .map(|v| dt.quantize(v))
        .collect();
    if p == Pattern::NegInf {
        for (i, v) in x.iter_mut().enumerate() {
            if i % 7 == 3 || (i / cols.max(1)) == 1 {
                *v = f32::NEG_INFINITY;
            }
        }
    }
    if p == Pattern::Tail {
        let live = cols / 16 + 1;
        for (i, v) in x.iter_mut().enumerate() {
            if i % cols < cols - live {
                *v = f32::NEG_INFINITY;
            }
        }
    }
    x
}

/// One correctness check: fresh input, poisoned output, every element compared. `v: None`
/// runs `auto`. Returns the variant that ran.
pub fn check(
    gpu: &Gpu,
    v: Option<Variant>,
    dt: Dtype,
    rows: usize,
    cols: usize,
    p: Pattern,
    seed: u64,
) -> Result<Variant> {
    let h = make_input(dt, rows, cols, p, seed);
    let x = Buf::upload(gpu, dt, &h)?;
    let mut y = Buf::alloc(gpu, dt, rows * cols)?;
    y.poison(gpu)?;
    let ran = match v {
        Some(v) => {
            let mut st = RowStats::alloc(gpu, rows)?;
            softmax(gpu, v, rows, cols, &x, &mut y, Some(&mut st))?;
            v
        }
        None => auto(gpu, rows, cols, &x, &mut y)?,
    };
    gpu.sync()?;
    let got = y.to_f32()?;
    let want = softmax_ref(rows, cols, &h);
    let (rel, abs) = tolerance(dt, cols);
    let what = format!(
        "{}{} {rows}x{cols} {p:?} seed={seed}",
        if v.is_none() { "auto->" } else { "" },
        ran.name(dt)
    );
    compare_f32(&what, &got, &want, rel, abs).map_err(Error::Mismatch)?;
    Ok(ran)
}

/// (rows, cols) every variant is checked at: lengths 1, 2, 31, 128, a 768 hidden size, 4097,
/// 16384 (v05's limit) and 131072 (past it: v05 and v06 are checked to refuse long rows
/// instead, in the bad-input test).
pub const TEST_SHAPES: [(usize, usize); 8] = [
    (3, 1),
    (5, 2),
    (33, 31),
    (7, 128),
    (19, 768),
    (9, 4097),
    (4, 16384),
    (2, 131072),
];

/// v06's own lengths (beside `TEST_SHAPES`' 1, 2, 31, 128): around 128 (a vector short and a
/// vector over, the scalar layout) and its longest row, `WARP_ROW_MAX_COLS`, a whole warp.
pub const WARP_ROW_SHAPES: [(usize, usize); 4] = [
    (1, 127),
    (17, 128),
    (3, 129),
    (17, WARP_ROW_MAX_COLS as usize),
];

/// The cluster steps' own lengths (beside `TEST_SHAPES`): just past v05's limit and odd
/// (scalar layout, a short last slice), 32768 (the bench's), an odd 65537, v08's longest row
/// and one past it, and v07's longest row (the same in f32 and bf16), few rows each.
pub const CLUSTER_SHAPES: [(usize, usize); 6] = [
    (17, 16385),
    (3, 32768),
    (1, 65537),
    (2, v08_cluster_registers::MAX_COLS as usize),
    (1, v08_cluster_registers::MAX_COLS as usize + 1),
    (3, v07_cluster_row::MAX_COLS as usize),
];

/// The shapes `v` is checked at: `TEST_SHAPES` up to its longest row, plus its own (v07, v08
/// and v09, which take every length up to their max: `auto`'s, the short ones included).
pub fn shapes_of(v: Variant) -> Vec<(usize, usize)> {
    let all = match v {
        Variant::V06RowsPerWarp => [&TEST_SHAPES[..], &WARP_ROW_SHAPES].concat(),
        Variant::V07ClusterRow | Variant::V08ClusterRegisters => auto_shapes(),
        // Any length: past v07's limit too (odd: the scalar path; and twice it).
        Variant::V09L2Reread => {
            let max = v07_cluster_row::MAX_COLS as usize;
            [auto_shapes(), vec![(1, max + 1), (2, 2 * max)]].concat()
        }
        _ => TEST_SHAPES.to_vec(),
    };
    let max = v.max_cols().map_or(usize::MAX, |m| m as usize);
    all.into_iter().filter(|&(_, cols)| cols <= max).collect()
}

/// The shapes `auto` is checked at: every variant's, v06's limit plus one (v05's first) and
/// the bf16 v09/v07 switch plus a vector.
pub fn auto_shapes() -> Vec<(usize, usize)> {
    let mut s: Vec<(usize, usize)> = TEST_SHAPES.to_vec();
    s.extend(WARP_ROW_SHAPES);
    s.push((3, WARP_ROW_MAX_COLS as usize + 1));
    s.extend(CLUSTER_SHAPES);
    // Just past the bf16 v09/v07 switch (whole vectors).
    s.push((2, super::launch::AUTO_L2_MAX_COLS_BF16 as usize + 8));
    s
}

/// The family's GPU tests: every variant and `auto` against the CPU reference, and bad
/// input. v07's and v08's tests require their (sm_90a) kernels: elsewhere they are reported
/// skipped.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for dt in Dtype::ALL {
        for v in LADDER {
            let test = GpuTest::new(format!("{}_matches_cpu", v.name(dt)), move |gpu| {
                for (i, &(rows, cols)) in crate::testing::matrices(&shapes_of(v)).iter().enumerate()
                {
                    for p in PATTERNS {
                        check(gpu, Some(v), dt, rows, cols, p, seed + i as u64)?;
                    }
                }
                Ok(())
            });
            t.push(
                v.kernels(dt)
                    .into_iter()
                    .fold(test, |test, k| test.requiring(k)),
            );
        }
        t.push(GpuTest::new(
            format!("softmax_auto_{}_matches_cpu", dt.name()),
            move |gpu| {
                let clusters = clusters_available(gpu)?;
                for (i, &(rows, cols)) in crate::testing::matrices(&auto_shapes()).iter().enumerate()
                {
                    let ran = check(gpu, None, dt, rows, cols, Pattern::NegInf, seed + i as u64)?;
                    let want = auto_choice(cols, dt, clusters);
                    if ran != want {
                        return Err(Error::Mismatch(format!(
                            "auto ran {} for {rows}x{cols}, auto_choice says {}",
                            ran.name(dt),
                            want.name(dt)
                        )));
                    }
                }
                Ok(())
            },
        ));
    }
    // v07 and v08 at every cluster size, not only the one chosen for each length.
    for (dt, v, keep) in Dtype::ALL.into_iter().flat_map(|dt| {
        [
            (dt, Variant::V07ClusterRow, Keep::Shared),
            (dt, Variant::V08ClusterRegisters, Keep::Registers),
        ]
    }) {
        let name = format!("{}_every_cluster_size_matches_cpu", v.name(dt));
        let max = v.max_cols().map_or(usize::MAX, |m| m as usize);
        let test = GpuTest::new(name, move |gpu| {
            check_every_size(dt.size() as u32, keep, max, |rows, cols, i| {
                for p in [Pattern::Normal, Pattern::NegInf] {
                    check(gpu, Some(v), dt, rows, cols, p, seed + i)?;
                }
                Ok(())
            })
        });
        t.push(v.kernels(dt).into_iter().fold(test, |t, k| t.requiring(k)));
    }
    t.push(GpuTest::new("softmax_all_neg_inf_row_gives_zeros", |gpu| {
        let clusters = clusters_available(gpu)?;
        for dt in Dtype::ALL {
            for v in LADDER {
                let cluster = [Variant::V07ClusterRow, Variant::V08ClusterRegisters];
                if cluster.contains(&v) && !clusters {
                    continue; // refused as unavailable: the bad-input test checks that
                }
                let x = Buf::upload(gpu, dt, &[f32::NEG_INFINITY; 3 * 40])?;
                let mut y = Buf::alloc(gpu, dt, 3 * 40)?;
                y.poison(gpu)?;
                let mut st = RowStats::alloc(gpu, 3)?;
                softmax(gpu, v, 3, 40, &x, &mut y, Some(&mut st))?;
                let got = y.to_f32()?;
                if got.iter().any(|&g| g != 0.0) {
                    return Err(Error::Mismatch(format!(
                        "{}: all -inf row not all zeros",
                        v.name(dt)
                    )));
                }
            }
        }
        Ok(())
    }));
    t.push(GpuTest::new(
        "softmax_bad_input_is_refused_before_launch",
        |gpu| {
            let x = Buf::upload(gpu, Dtype::F32, &[1.0; 12])?;
            let mut y = Buf::alloc(gpu, Dtype::F32, 12)?;
            let mut yb = Buf::alloc(gpu, Dtype::Bf16, 12)?;
            for v in LADDER {
                let mut st = RowStats::alloc(gpu, 3)?;
                expect_error(
                    softmax(gpu, v, 4, 4, &x, &mut y, Some(&mut st)),
                    &["x has 12", "16"],
                )?;
                expect_error(
                    softmax(gpu, v, 3, 4, &x, &mut yb, Some(&mut st)),
                    &["y is bf16"],
                )?;
                // Empty: defined, nothing launched.
                let e = Buf::alloc(gpu, Dtype::F32, 0)?;
                let mut ye = Buf::alloc(gpu, Dtype::F32, 0)?;
                softmax(gpu, v, 0, 4, &e, &mut ye, Some(&mut st))?;
            }
            expect_error(
                softmax(gpu, Variant::V01ThreeKernels, 3, 4, &x, &mut y, None),
                &["RowStats"],
            )?;
            // Rows past each on-chip step's limit, refused with the limit and the way out
            // (before availability: the same message on every GPU).
            let v05 = Variant::V05RowInRegisters;
            let v06 = Variant::V06RowsPerWarp;
            let v07 = Variant::V07ClusterRow;
            let v08 = Variant::V08ClusterRegisters;
            let v08_max = v08_cluster_registers::MAX_COLS as usize;
            let too_long = [
                (v08, v08_max + 1, vec!["131073", "131072", "auto", v07.stem()]),
                (v05, 20000, vec!["20000", "16384", "auto"]),
                (v06, 513, vec!["513", "512", "auto", v05.stem()]),
                (v07, 262145, vec!["262145", "262144", "auto", Variant::V09L2Reread.stem()]),
            ];
            for (v, cols, needles) in too_long {
                for dt in Dtype::ALL {
                    let long = Buf::alloc(gpu, dt, cols)?;
                    let mut yl = Buf::alloc(gpu, dt, cols)?;
                    expect_error(softmax(gpu, v, 1, cols, &long, &mut yl, None), &needles)?;
                }
            }
            // Off Hopper, v07 and v08 are unavailable (and `auto` does not pick them).
            if !clusters_available(gpu)? {
                let x = Buf::upload(gpu, Dtype::F32, &[1.0; 32768])?;
                let mut y = Buf::alloc(gpu, Dtype::F32, 32768)?;
                for v in [v07, v08] {
                    expect_error(
                        softmax(gpu, v, 1, 32768, &x, &mut y, None),
                        &["unavailable", "sm_90a"],
                    )?;
                }
            }
            Ok(())
        },
    ));
    t
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    /// The lengths the GPU tests reach per step: v06 up to its max (refused past it), v07 from
    /// 1 to its max (refused past it), `auto` at all of them and at v06's max + 1.
    #[test]
    fn every_step_is_checked_at_its_edges() {
        let cols = |v: &[(usize, usize)]| v.iter().map(|s| s.1).collect::<Vec<_>>();
        let v06 = cols(&shapes_of(Variant::V06RowsPerWarp));
        for c in [1, 2, 31, 127, 128, 129, WARP_ROW_MAX_COLS as usize] {
            assert!(v06.contains(&c), "v06 at {c}");
        }
        assert!(v06.iter().all(|&c| c <= WARP_ROW_MAX_COLS as usize));
        let v07 = cols(&shapes_of(Variant::V07ClusterRow));
        let max = v07_cluster_row::MAX_COLS as usize;
        let short = [1, 2, 31, 127, 128, 129, 512, 513, 4097, 16384];
        for c in short.into_iter().chain([16385, 32768, 65537, 131072, max]) {
            assert!(v07.contains(&c), "v07 at {c}");
        }
        let auto = cols(&auto_shapes());
        assert!(auto.contains(&(WARP_ROW_MAX_COLS as usize + 1)) && auto.contains(&max));
        let rows: Vec<usize> = auto_shapes().iter().map(|s| s.0).collect();
        assert!([1, 3, 17].iter().all(|r| rows.contains(r)));
        // v05 keeps to its limit.
        assert!(cols(&shapes_of(Variant::V05RowInRegisters)).iter().all(|&c| c <= 16384));
    }

    #[test]
    fn tail_pattern_keeps_only_the_end_of_each_row() {
        let (rows, cols) = (3, 40);
        let x = make_input(Dtype::F32, rows, cols, Pattern::Tail, 1);
        for r in 0..rows {
            let row = &x[r * cols..(r + 1) * cols];
            let live = cols / 16 + 1;
            assert!(row[..cols - live].iter().all(|v| *v == f32::NEG_INFINITY));
            assert!(row[cols - live..].iter().all(|v| v.is_finite()));
        }
        let one = make_input(Dtype::Bf16, 2, 1, Pattern::Tail, 1);
        assert!(one.iter().all(|v| v.is_finite()), "a row of one stays finite");
    }

    #[test]
    fn tolerance_at_4096() {
        let (rel, _) = tolerance(Dtype::F32, 4096);
        assert!(rel < 2e-5 && rel > 1e-5);
    }

    /// A planted bug the old absolute floor (1e-6 for bf16) let through: a kernel writing 0
    /// for every output below 1e-6. On long rows of the test's inputs that is most of them,
    /// and the check must now refuse it, in both dtypes.
    #[test]
    fn zeroing_small_outputs_fails_the_check() {
        for dt in [Dtype::F32, Dtype::Bf16] {
            let (rows, cols) = (2, 32768);
            let x = make_input(dt, rows, cols, Pattern::Normal, 7);
            let want = super::super::reference::softmax_ref(rows, cols, &x);
            let small = want.iter().filter(|&&w| w < 1e-6).count();
            assert!(small > want.len() / 3, "{dt:?}: {small} small outputs");
            let planted: Vec<f32> = want.iter().map(|&w| if w < 1e-6 { 0.0 } else { w }).collect();
            let (rel, abs) = tolerance(dt, cols);
            assert!(compare_f32("planted", &planted, &want, rel, abs).is_err(), "{dt:?}");
            // The old floor passed it (the reason for the change).
            assert!(compare_f32("planted", &planted, &want, rel, 1e-6).is_ok(), "{dt:?}");
            // The reference itself, rounded to the dtype, passes.
            let rounded: Vec<f32> = want.iter().map(|&w| dt.quantize(w)).collect();
            compare_f32("rounded", &rounded, &want, rel, abs).unwrap();
        }
    }
}
