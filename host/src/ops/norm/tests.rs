//! norm: the GPU correctness tests (every variant and `auto`, kind and dtype against the CPU
//! reference, with ordinary and large-mean inputs, and bad input), and the check the bench
//! reuses.

use rooflab_kernels::norm::{v05_rows_per_warp, v06_cluster_row, v07_cluster_registers};

use super::launch::{
    Kind, LADDER, NormArgs, Variant, auto, auto_choice, clusters_available, norm,
};
use super::reference::{norm_ref, row_stats};
use crate::check::{compare_f32, random_f32, rng};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::ops::cluster_row::{Keep, check_every_size};
use crate::tensor::{Buf, Dtype, RowStats};
use crate::testing::{GpuTest, expect_error};

/// (rel, abs); see the module header.
pub fn tolerance(dt: Dtype, cols: usize, large_mean: bool) -> (f32, f32) {
    let rel = 1e-5 + 6e-8 * (cols as f32 / 32.0 + 10.0);
    match dt {
        // The f32 mean of values near 1000 drifts by a random walk of 2^-24 * 1000 steps over
        // the sum's chain; every output shifts by that times rstd * w, up to ~2.7 for a row of
        // U(-1, 1) (short rows can be tighter: see [`gain_scale`]).
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

/// How much more than [`tolerance`] assumes the inputs amplify an error of the mean: the
/// largest `rstd · |w|` of any row over the 2.7 the tolerance is built on, at least 1. A
/// short row of U(-1, 1) can happen to cluster (7 values of standard deviation 0.15 have
/// rstd 6.5), and the f32 mean's ordinary rounding error is then out by that much more
/// (measured: a 5x7 large-mean row, 6.7e-4 off with a correct kernel).
pub fn gain_scale(k: Kind, rows: usize, cols: usize, x: &[f32], w: &[f32]) -> f32 {
    let wmax = w.iter().fold(0.0f64, |m, &v| m.max((v as f64).abs()));
    let worst = (0..rows)
        .map(|r| row_stats(k, &x[r * cols..(r + 1) * cols], EPS).1)
        .fold(0.0f64, f64::max);
    ((worst * wmax / 2.7) as f32).max(1.0)
}

/// The spread of the large-mean inputs around 1000, per dtype: f32 takes U(-1, 1); bf16's
/// values near 1000 are 4 apart, so U(-1, 1) would round every element to 1000.0 (constant
/// rows: LayerNorm would just return the bias, and a kernel that ignored x would pass), and
/// bf16 takes U(-32, 32): 16 distinct values a row, still a mean 50 standard deviations away
/// from zero.
pub fn large_mean_spread(dt: Dtype) -> f32 {
    match dt {
        Dtype::F32 => 1.0,
        Dtype::Bf16 => 32.0,
    }
}

/// Fresh inputs of a check, already rounded to `dt`: x (uniform [-2, 2), or 1000 ±
/// [`large_mean_spread`] when `large_mean`), weight in [0.5, 1.5), bias in [-0.5, 0.5).
pub fn inputs(
    dt: Dtype,
    rows: usize,
    cols: usize,
    large_mean: bool,
    seed: u64,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut r = rng(seed);
    let q = |v: Vec<f32>| v.into_iter().map(|x| dt.quantize(x)).collect::<Vec<_>>();
    let x = if large_mean {
        let s = large_mean_spread(dt);
        q(random_f32(&mut r, rows * cols, 1000.0 - s, 1000.0 + s))
    } else {
        q(random_f32(&mut r, rows * cols, -2.0, 2.0))
    };
    let w = q(random_f32(&mut r, cols, 0.5, 1.5));
    let b = q(random_f32(&mut r, cols, -0.5, 0.5));
    (x, w, b)
}

/// One check: fresh inputs ([`inputs`]), poisoned output, every element compared.
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
    check_with(gpu, Some(v), k, dt, rows, cols, large_mean, seed).map(|_| ())
}

/// [`check`] of variant `v`, or of `auto` when `v` is `None`; returns the variant that ran.
#[allow(clippy::too_many_arguments)]
pub fn check_with(
    gpu: &Gpu,
    v: Option<Variant>,
    k: Kind,
    dt: Dtype,
    rows: usize,
    cols: usize,
    large_mean: bool,
    seed: u64,
) -> Result<Variant> {
    let (x, w, b) = inputs(dt, rows, cols, large_mean, seed);
    let (dx, dw, db) = (
        Buf::upload(gpu, dt, &x)?,
        Buf::upload(gpu, dt, &w)?,
        Buf::upload(gpu, dt, &b)?,
    );
    let mut y = Buf::alloc(gpu, dt, rows * cols)?;
    y.poison(gpu)?;
    let a = NormArgs {
        x: &dx,
        weight: &dw,
        bias: &db,
        eps: EPS,
    };
    let ran = match v {
        Some(v) => {
            let mut st = RowStats::alloc(gpu, rows)?;
            norm(gpu, v, k, rows, cols, &a, &mut y, Some(&mut st))?;
            v
        }
        None => auto(gpu, k, rows, cols, &a, &mut y)?,
    };
    gpu.sync()?;
    let got = y.to_f32()?;
    let want = norm_ref(k, rows, cols, &x, &w, &b, EPS);
    let (rel, mut abs) = tolerance(dt, cols, large_mean);
    if large_mean {
        abs *= gain_scale(k, rows, cols, &x, &w);
    }
    let what = format!(
        "{}{} {rows}x{cols} large_mean={large_mean} seed={seed}",
        if v.is_none() { "auto->" } else { "" },
        ran.name(k, dt)
    );
    compare_f32(&what, &got, &want, rel, abs).map_err(Error::Mismatch)?;
    Ok(ran)
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

/// v05's own lengths (beside `TEST_SHAPES`' 1, 7, and the odd and prime row counts): short
/// and odd (31, 127, 129: the scalar layout), the vector lengths around 128 and 256 (a
/// group of 8 or 4 lanes, rows of different groups in one warp), and its longest row,
/// `MAX_COLS` (a whole warp in f32, 16 lanes in bf16); row counts 1, odd and prime, so that
/// the last block and the last warp are partly empty.
pub const WARP_ROW_SHAPES: [(usize, usize); 8] = [
    (1, 31),
    (13, 31),
    (1, 127),
    (31, 128),
    (17, 129),
    (37, 256),
    (7, 384),
    (17, v05_rows_per_warp::MAX_COLS as usize),
];

/// The cluster steps' own lengths (beside `TEST_SHAPES`): just past v04's limit and odd
/// (scalar layout, a short last slice), 32768 (the bench's), an odd 65537, v07's longest row
/// and one past it, 262144 and 262145 (the longest, and one past it: scalar layout,
/// uneven slices), and v06's longest row, few rows each.
pub const CLUSTER_SHAPES: [(usize, usize); 9] = [
    (17, 16385),
    (3, 32768),
    (1, 65537),
    (2, v07_cluster_registers::MAX_COLS as usize),
    (1, v07_cluster_registers::MAX_COLS as usize + 1),
    (2, 262144),
    (3, 262145),
    (1, v06_cluster_row::MAX_COLS as usize),
    (2, v06_cluster_row::MAX_COLS as usize),
];

/// The shapes `v` is checked at: `TEST_SHAPES` up to its longest row, plus its own (v06, v07
/// and v08, which take every length up to their max, or any, at `auto`'s shapes: the short
/// ones included).
pub fn shapes_of(v: Variant) -> Vec<(usize, usize)> {
    let all = match v {
        Variant::V05RowsPerWarp => [&TEST_SHAPES[..], &WARP_ROW_SHAPES].concat(),
        Variant::V06ClusterRow | Variant::V07ClusterRegisters | Variant::V08L2Reread => {
            auto_shapes()
        }
        _ => TEST_SHAPES.to_vec(),
    };
    let max = v.max_cols().map_or(usize::MAX, |m| m as usize);
    all.into_iter().filter(|&(_, cols)| cols <= max).collect()
}

/// The shapes `auto` is checked at: every variant's, both sides of its v05/v04, bf16 LayerNorm
/// v04/v08 and bf16 v08/v06 switches, v05's limit plus one and v06's limit plus one.
pub fn auto_shapes() -> Vec<(usize, usize)> {
    let mut s: Vec<(usize, usize)> = TEST_SHAPES.to_vec();
    s.extend(WARP_ROW_SHAPES);
    let switch = super::launch::AUTO_SHORT_MAX_COLS as usize;
    s.extend([(5, switch), (5, switch + 1)]);
    s.push((3, v05_rows_per_warp::MAX_COLS as usize + 1));
    s.extend(CLUSTER_SHAPES);
    // Both sides of bf16 LayerNorm's v04/v08 switch.
    let reg = super::launch::AUTO_REGISTER_MAX_COLS_LAYERNORM_BF16 as usize;
    s.extend([(3, reg), (3, reg + 1), (2, reg + 8)]);
    // Both sides of the bf16 v08/v06 switch, and past v06's limit (v08 again).
    let l2 = super::launch::AUTO_L2_MAX_COLS_BF16 as usize;
    s.extend([(2, l2 + 1), (1, v06_cluster_row::MAX_COLS as usize + 1)]);
    s
}

/// The family's GPU tests: every variant and `auto` against the CPU reference, and bad
/// input. v06's and v07's tests require their (sm_90a) kernels: elsewhere they are reported
/// skipped.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for k in Kind::ALL {
        for dt in Dtype::ALL {
            for v in LADDER {
                let test = GpuTest::new(format!("{}_matches_cpu", v.name(k, dt)), move |gpu| {
                    for (i, &(rows, cols)) in
                        crate::testing::matrices(&shapes_of(v)).iter().enumerate()
                    {
                        for large_mean in [false, true] {
                            check(gpu, v, k, dt, rows, cols, large_mean, seed + i as u64)?;
                        }
                    }
                    Ok(())
                });
                t.push(
                    v.kernels(k, dt)
                        .into_iter()
                        .fold(test, |test, id| test.requiring(id)),
                );
            }
            // The cluster steps at every cluster size, not only the one chosen for each length.
            for (v, keep) in [
                (Variant::V06ClusterRow, Keep::Shared),
                (Variant::V07ClusterRegisters, Keep::Registers),
            ] {
                let name = format!("{}_every_cluster_size_matches_cpu", v.name(k, dt));
                let max = v.max_cols().map_or(usize::MAX, |m| m as usize);
                let test = GpuTest::new(name, move |gpu| {
                    check_every_size(dt.size() as u32, keep, max, |rows, cols, i| {
                        for large_mean in [false, true] {
                            check(gpu, v, k, dt, rows, cols, large_mean, seed + i)?;
                        }
                        Ok(())
                    })
                });
                t.push(v.kernels(k, dt).into_iter().fold(test, |t, id| t.requiring(id)));
            }
            t.push(GpuTest::new(
                format!("norm_auto_{}_{}_matches_cpu", k.name(), dt.name()),
                move |gpu| {
                    let clusters = clusters_available(gpu)?;
                    for (i, &(rows, cols)) in
                        crate::testing::matrices(&auto_shapes()).iter().enumerate()
                    {
                        let large_mean = i % 2 == 1;
                        let ran =
                            check_with(gpu, None, k, dt, rows, cols, large_mean, seed + i as u64)?;
                        let want = auto_choice(k, cols, dt, clusters);
                        if ran != want {
                            return Err(Error::Mismatch(format!(
                                "auto ran {} for {rows}x{cols}, auto_choice says {}",
                                ran.name(k, dt),
                                want.name(k, dt)
                            )));
                        }
                    }
                    Ok(())
                },
            ));
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
            // Rows past each on-chip step's limit, refused with the limit and the way out
            // (before availability: the same message on every GPU).
            let (v04, v05, v06, v07) = (
                Variant::V04PackedRow,
                Variant::V05RowsPerWarp,
                Variant::V06ClusterRow,
                Variant::V07ClusterRegisters,
            );
            let v06_max = v06_cluster_row::MAX_COLS as usize;
            let v07_max = v07_cluster_registers::MAX_COLS as usize;
            let too_long = [
                (Variant::V03FusedVectorized, 20000, vec!["20000", "16384", "auto"]),
                (v04, 20000, vec!["20000", "16384", "auto", v06.stem()]),
                (v05, 513, vec!["513", "512", "auto", v04.stem()]),
                (
                    v06,
                    v06_max + 1,
                    vec![
                        "393217",
                        "393216",
                        "auto",
                        Variant::V08L2Reread.stem(),
                    ],
                ),
                (
                    v07,
                    v07_max + 1,
                    vec!["131073", "131072", "auto", v06.stem()],
                ),
            ];
            for (v, cols, needles) in too_long {
                for dt in Dtype::ALL {
                    let long = Buf::alloc(gpu, dt, cols)?;
                    let wl = Buf::alloc(gpu, dt, cols)?;
                    let mut yl = Buf::alloc(gpu, dt, cols)?;
                    let a = NormArgs {
                        x: &long,
                        weight: &wl,
                        bias: &wl,
                        eps: EPS,
                    };
                    expect_error(
                        norm(gpu, v, Kind::LayerNorm, 1, cols, &a, &mut yl, None),
                        &needles,
                    )?;
                }
            }
            // Off Hopper, v06 and v07 are unavailable (and `auto` does not pick them).
            if !clusters_available(gpu)? {
                let x = Buf::upload(gpu, Dtype::F32, &vec![1.0; 32768])?;
                let mut y = Buf::alloc(gpu, Dtype::F32, 32768)?;
                let a = NormArgs {
                    x: &x,
                    weight: &x,
                    bias: &x,
                    eps: EPS,
                };
                for v in [v06, v07] {
                    expect_error(
                        norm(gpu, v, Kind::RmsNorm, 1, 32768, &a, &mut y, None),
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

    /// The inputs that failed a correct kernel (H200, 2026-12-04, norm v05 LayerNorm f32 5x7,
    /// large mean): its row 1 clusters (rstd 6.5), and the f32 mean's error, emulated here as
    /// the scalar path's sequential sum, lands outside the plain tolerance but inside the
    /// scaled one; ordinary long rows keep the plain one.
    #[test]
    fn clustered_short_rows_widen_the_large_mean_tolerance() {
        let seed = 9953662521212573644;
        let (x, w, _) = inputs(Dtype::F32, 5, 7, true, seed);
        let g = gain_scale(Kind::LayerNorm, 5, 7, &x, &w);
        assert!(g > 2.0, "{g}");
        let (_, abs) = tolerance(Dtype::F32, 7, true);
        let row = &x[7..14];
        let m32 = row.iter().fold(0.0f32, |s, &v| s + v) / 7.0;
        let (m64, rstd) = row_stats(Kind::LayerNorm, row, EPS);
        let shift = ((m32 as f64 - m64) * rstd * w[0] as f64).abs() as f32;
        assert!(shift > abs && shift < abs * g, "{shift} vs {abs} x {g}");
        // The bug the large-mean inputs exist for, planted: a one-pass f32 variance (E[x^2] -
        // E[x]^2) misses the widened tolerance by far on the same row.
        let sq = row.iter().fold(0.0f32, |s, &v| s + v * v) / 7.0;
        let rstd1 = 1.0 / ((sq - m32 * m32).max(0.0) + EPS).sqrt();
        let planted = row
            .iter()
            .zip(&w)
            .map(|(&v, &wj)| ((v as f64 - m64) * (rstd1 as f64 - rstd) * wj as f64).abs())
            .fold(0.0f64, f64::max) as f32;
        assert!(planted > 10.0 * abs * g, "one-pass variance: {planted} vs {abs} x {g}");
        let (x, w, _) = inputs(Dtype::F32, 9, 4096, true, 5);
        assert_eq!(gain_scale(Kind::LayerNorm, 9, 4096, &x, &w), 1.0);
        assert_eq!(gain_scale(Kind::RmsNorm, 9, 4096, &x, &w), 1.0);
    }

    /// The lengths the GPU tests reach per step: v05 from 1 to its max (refused past it), v06
    /// from 1 to its max, 262145 included (refused past it), `auto` at all of them and at
    /// v05's max + 1; row counts of 1, odd and prime.
    #[test]
    fn every_step_is_checked_at_its_edges() {
        let cols = |v: &[(usize, usize)]| v.iter().map(|s| s.1).collect::<Vec<_>>();
        let v05_max = v05_rows_per_warp::MAX_COLS as usize;
        let v05 = cols(&shapes_of(Variant::V05RowsPerWarp));
        for c in [1, 7, 31, 127, 128, 129, 256, v05_max] {
            assert!(v05.contains(&c), "v05 at {c}");
        }
        assert!(v05.iter().all(|&c| c <= v05_max));
        let v06 = cols(&shapes_of(Variant::V06ClusterRow));
        let max = v06_cluster_row::MAX_COLS as usize;
        let short = [1, 31, 127, 128, 129, 512, 513, 1001, 4096, 16384];
        for c in short.into_iter().chain([16385, 20000, 65537, 262144, 262145, max]) {
            assert!(v06.contains(&c), "v06 at {c}");
        }
        let v07 = cols(&shapes_of(Variant::V07ClusterRegisters));
        let max07 = v07_cluster_registers::MAX_COLS as usize;
        for c in short.into_iter().chain([16385, 20000, 65537, max07]) {
            assert!(v07.contains(&c), "v07 at {c}");
        }
        assert!(v07.iter().all(|&c| c <= max07));
        // v08 (any length): the short rows, both sides of v04's limit, the longest.
        let v08 = cols(&shapes_of(Variant::V08L2Reread));
        for c in short.into_iter().chain([16385, 20000, 32768, 65537, 262145, max]) {
            assert!(v08.contains(&c), "v08 at {c}");
        }
        let auto = cols(&auto_shapes());
        assert!(auto.contains(&(v05_max + 1)) && auto.contains(&max));
        let rows: Vec<usize> = auto_shapes().iter().map(|s| s.0).collect();
        assert!([1, 3, 13, 17, 31, 37].iter().all(|r| rows.contains(r)));
        // v03 and v04 keep to their limit.
        for v in [Variant::V03FusedVectorized, Variant::V04PackedRow] {
            assert!(cols(&shapes_of(v)).iter().all(|&c| c <= 16384));
        }
    }

    /// The planted bug the old bf16 large-mean inputs let through: rows that rounded to a
    /// constant, where "return the bias" is the right LayerNorm answer. Now the rows vary,
    /// and a kernel that returns the bias (ignores x) fails the check.
    #[test]
    fn bf16_large_mean_rows_are_not_constant() {
        let (rows, cols) = (4, 768);
        let (x, w, b) = inputs(Dtype::Bf16, rows, cols, true, 11);
        for r in 0..rows {
            let mut vals: Vec<u32> = x[r * cols..(r + 1) * cols].iter().map(|v| v.to_bits()).collect();
            vals.sort_unstable();
            vals.dedup();
            assert!(vals.len() >= 8, "row {r}: {} distinct values", vals.len());
        }
        let old: Vec<f32> = random_f32(&mut rng(11), rows * cols, 999.0, 1001.0)
            .into_iter()
            .map(|v| Dtype::Bf16.quantize(v))
            .collect();
        assert!(old.iter().all(|&v| v == 1000.0), "the old inputs were constant");
        let want = norm_ref(Kind::LayerNorm, rows, cols, &x, &w, &b, EPS);
        let bias_only: Vec<f32> = (0..rows * cols).map(|i| b[i % cols]).collect();
        let (rel, abs) = tolerance(Dtype::Bf16, cols, true);
        assert!(compare_f32("planted", &bias_only, &want, rel, abs).is_err());
    }
}
