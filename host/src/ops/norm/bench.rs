//! norm: the bench cases, for both kinds and dtypes: the ladder up to v04 at 16384 x 4096
//! (v05 is for shorter rows, v06 and v07 for longer ones), short rows (262144 x 128) for v02,
//! v04 and v05, long rows (1024 x 32768) for v02, v06, v07 and v08; and a row-length sweep at
//! a fixed total (ladders `sweep_cols_KIND_DTYPE`: rows x cols = 2^26 for cols = 128 ..
//! 262144) of v05 (up to its 512), v04 (up to `ROW_MAX_COLS`), v06 and v07 (from 8192 up to
//! their max), v02 and v08 (any length), drawn as one line per step over cols by the report.

use super::launch::{Kind, LADDER, NormArgs, Variant, norm};
use super::tests::{EPS, check};
use crate::bench::{Case, TorchSpec, Workload, rotation_sets};
use crate::check::{random_f32, rng};
use crate::error::Result;
use crate::gpu::Gpu;
use crate::tensor::{Buf, Dtype, RowStats};

struct NormWork {
    v: Variant,
    k: Kind,
    dt: Dtype,
    rows: usize,
    cols: usize,
    xs: Vec<Buf>,
    w: Buf,
    b: Buf,
    y: Buf,
    stats: RowStats,
    seed: u64,
}

impl Workload for NormWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check(
            gpu, self.v, self.k, self.dt, self.rows, self.cols, false, self.seed,
        )
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let a = NormArgs {
            x: &self.xs[i % self.xs.len()],
            weight: &self.w,
            bias: &self.b,
            eps: EPS,
        };
        norm(
            gpu,
            self.v,
            self.k,
            self.rows,
            self.cols,
            &a,
            &mut self.y,
            Some(&mut self.stats),
        )
    }
}

/// The ladder a row climbs: one per kind and dtype.
fn ladder(k: Kind, dt: Dtype) -> &'static str {
    match (k, dt) {
        (Kind::LayerNorm, Dtype::F32) => "layernorm_f32",
        (Kind::LayerNorm, Dtype::Bf16) => "layernorm_bf16",
        (Kind::RmsNorm, Dtype::F32) => "rmsnorm_f32",
        (Kind::RmsNorm, Dtype::Bf16) => "rmsnorm_bf16",
    }
}

/// Elements of every point of the row-length sweep (rows = SWEEP_TOTAL / cols).
pub const SWEEP_TOTAL: usize = 1 << 26;
/// The sweep's row lengths: short rows (v05's, up to 512), v04's range and its longest
/// (`ROW_MAX_COLS`), and past it (v07's and v06's). Not 4096: the ladder's own shape, 16384 x 4096,
/// is that point; not 32768: the long-row shape's length (a name and a shape name one row).
pub const SWEEP_COLS: [usize; 8] = [128, 256, 512, 1024, 8192, 16384, 65536, 262144];
/// The steps the sweep draws, each at the lengths [`sweeps`] gives it.
pub const SWEEP_STEPS: [Variant; 6] = [
    Variant::V05RowsPerWarp,
    Variant::V04PackedRow,
    Variant::V07ClusterRegisters,
    Variant::V06ClusterRow,
    Variant::V08L2Reread,
    Variant::V02FusedBlock,
];
/// The shortest row the sweep runs the cluster steps at: where v04 starts to fall off (below, 8 blocks
/// share a row a few vectors long, which is not what the step is for).
pub const SWEEP_CLUSTER_FROM: usize = 8192;

/// Whether the sweep runs step `v` at rows of `cols`: every length it takes (v06 and v07:
/// from [`SWEEP_CLUSTER_FROM`]).
pub fn sweeps(v: Variant, cols: usize) -> bool {
    let fits = v.max_cols().is_none_or(|m| cols <= m as usize);
    let cluster = matches!(v, Variant::V06ClusterRow | Variant::V07ClusterRegisters);
    fits && (!cluster || cols >= SWEEP_CLUSTER_FROM)
}

/// Row length of the short-row shape (v05's) and of the long-row shape (v06's and v07's).
pub const SHORT_COLS: usize = 128;
pub const LONG_COLS: usize = 32768;

/// The ladder of the row-length sweep of one kind and dtype.
fn sweep_ladder(k: Kind, dt: Dtype) -> &'static str {
    match (k, dt) {
        (Kind::LayerNorm, Dtype::F32) => "sweep_cols_layernorm_f32",
        (Kind::LayerNorm, Dtype::Bf16) => "sweep_cols_layernorm_bf16",
        (Kind::RmsNorm, Dtype::F32) => "sweep_cols_rmsnorm_f32",
        (Kind::RmsNorm, Dtype::Bf16) => "sweep_cols_rmsnorm_bf16",
    }
}

/// The family's bench cases. `size` overrides the element count (the rows follow);
/// `--quick` and `size` leave the sweep out.
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let cols = 4096;
    let rows = match size {
        Some(s) => (s as usize / cols).max(1),
        None if quick => 2048,
        None => 16384,
    };
    // The short- and long-row shapes: half the ladder's elements (so that no point is a
    // sweep point), or `size` when given.
    let rows_at = |c: usize| match size {
        Some(s) => (s as usize / c).max(1),
        None => (rows * cols / 2 / c).max(1),
    };
    let short = Variant::V05RowsPerWarp;
    let long = [Variant::V06ClusterRow, Variant::V07ClusterRegisters];
    // (ladder?, rows, cols, step): the ladder at its shape (v05, v06 and v07 cannot hold or
    // are not meant for 4096), the short and long rows, then the sweep's points.
    let mut plan: Vec<(bool, usize, usize, Variant)> = LADDER
        .iter()
        .filter(|&&v| v != short && !long.contains(&v))
        .map(|&v| (true, rows, cols, v))
        .collect();
    for v in [Variant::V02FusedBlock, Variant::V04PackedRow, short] {
        plan.push((true, rows_at(SHORT_COLS), SHORT_COLS, v));
    }
    for v in [Variant::V02FusedBlock, long[0], long[1], Variant::V08L2Reread] {
        plan.push((true, rows_at(LONG_COLS), LONG_COLS, v));
    }
    if !quick && size.is_none() {
        for c in SWEEP_COLS {
            for v in SWEEP_STEPS {
                if sweeps(v, c) {
                    plan.push((false, SWEEP_TOTAL / c, c, v));
                }
            }
        }
    }
    let mut out = Vec::new();
    for k in Kind::ALL {
        for dt in Dtype::ALL {
            for &(in_ladder, rows, cols, v) in &plan {
                let c = v.modelled(k, dt, rows as u64, cols as u64);
                out.push(Case {
                    family: super::FAMILY.name,
                    variant: v.row_variant(k, dt),
                    kernels: v.kernel_uses(k, dt, cols),
                    ladder: if in_ladder {
                        ladder(k, dt)
                    } else {
                        sweep_ladder(k, dt)
                    },
                    shape: format!("{rows}x{cols}"),
                    note: String::new(),
                    cost: c,
                    torch: Some(TorchSpec {
                        op: k.torch().into(),
                        shape: vec![rows as u64, cols as u64],
                        dtype: dt.torch().into(),
                        lens: Vec::new(),
                    }),
                    prepare: Box::new(move |gpu: &Gpu| {
                        let mut r = rng(seed + 11);
                        let xs = (0..rotation_sets(c.min_bytes.0, gpu.info.l2_bytes))
                            .map(|_| {
                                Buf::upload(gpu, dt, &random_f32(&mut r, rows * cols, -2.0, 2.0))
                            })
                            .collect::<Result<Vec<_>>>()?;
                        Ok(Box::new(NormWork {
                            v,
                            k,
                            dt,
                            rows,
                            cols,
                            xs,
                            w: Buf::upload(gpu, dt, &random_f32(&mut r, cols, 0.5, 1.5))?,
                            b: Buf::upload(gpu, dt, &random_f32(&mut r, cols, -0.5, 0.5))?,
                            y: Buf::alloc(gpu, dt, rows * cols)?,
                            stats: RowStats::alloc(gpu, rows)?,
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
mod unit_tests {
    use super::*;

    use rooflab_kernels::cluster_row::HEADER_BYTES;
    use rooflab_kernels::norm::v03_fused_vectorized::ROW_MAX_COLS;
    use rooflab_kernels::norm::v05_rows_per_warp;

    #[test]
    fn the_sweep_keeps_the_total_and_each_step_where_it_fits() {
        let c = cases(false, None, 1);
        for k in Kind::ALL {
            for dt in Dtype::ALL {
                let sweep: Vec<&Case> = c.iter().filter(|c| c.ladder == sweep_ladder(k, dt)).collect();
                // v02 and v08 at every length (8 each), v05 up to 512 (3), v04 up to
                // ROW_MAX_COLS (6), v06 from 8192 (4), v07 from 8192 to 131072 (3).
                assert_eq!(sweep.len(), 2 * SWEEP_COLS.len() + 3 + 6 + 4 + 3);
                for case in &sweep {
                    let (r, cols) = case.shape.split_once('x').unwrap();
                    let (r, cols): (usize, usize) = (r.parse().unwrap(), cols.parse().unwrap());
                    assert_eq!(r * cols, SWEEP_TOTAL);
                    // Never another case's shape: a name and shape name one row (docs markers).
                    let same = c
                        .iter()
                        .filter(|o| o.variant == case.variant && o.shape == case.shape)
                        .count();
                    assert_eq!(same, 1, "{} {}", case.variant, case.shape);
                    for v in SWEEP_STEPS {
                        if case.variant == v.row_variant(k, dt) {
                            assert!(v.check_cols(k, dt, cols).is_ok(), "{} {cols}", case.variant);
                        }
                    }
                }
                // Each new step draws a curve: at least three lengths.
                for v in [
                    Variant::V05RowsPerWarp,
                    Variant::V06ClusterRow,
                    Variant::V07ClusterRegisters,
                    Variant::V08L2Reread,
                ] {
                    let n = sweep.iter().filter(|c| c.variant == v.row_variant(k, dt)).count();
                    assert!(n >= 3, "{}: {n} points", v.stem());
                }
            }
        }
        // The sweep reaches both ends of the range, and v04's limit.
        assert_eq!(SWEEP_COLS[0], 128);
        assert_eq!(SWEEP_COLS[SWEEP_COLS.len() - 1], 262144);
        assert!(SWEEP_COLS.contains(&(ROW_MAX_COLS as usize)));
        assert!(SWEEP_COLS.contains(&(v05_rows_per_warp::MAX_COLS as usize)));
    }

    #[test]
    fn cases_cover_the_ladder() {
        let c = cases(true, None, 1);
        // The ladder at 4096 without v05, v06 and v07, 3 steps at short rows, 4 at long rows.
        assert_eq!(c.len(), 4 * (LADDER.len() - 3 + 3 + 4));
        for k in Kind::ALL {
            for dt in Dtype::ALL {
                for v in LADDER {
                    assert!(c.iter().any(|c| c.variant == v.row_variant(k, dt)));
                }
            }
        }
        assert!(c.iter().all(|c| !c.kernels.is_empty() && c.torch.is_some()));
        let v05 = c
            .iter()
            .find(|c| c.variant == "v05_rows_per_warp_layernorm_bf16")
            .unwrap();
        assert!(v05.shape.ends_with("x128"), "{}", v05.shape);
        let v06 = c
            .iter()
            .find(|c| c.variant == "v06_cluster_row_rmsnorm_f32")
            .unwrap();
        assert!(v06.shape.ends_with("x32768"), "{}", v06.shape);
        // 4 blocks a row of 8192 (32 KiB), 512 threads of 4 vectors.
        assert_eq!(v06.kernels[0].block_threads, 512);
        assert_eq!(v06.kernels[0].shared_bytes, HEADER_BYTES + 8192 * 4);
        // v07: 4 blocks a row of 8192 in registers, 512 threads of 16 slots, the header only.
        let v07 = c
            .iter()
            .find(|c| c.variant == "v07_cluster_registers_layernorm_bf16")
            .unwrap();
        assert!(v07.shape.ends_with("x32768"), "{}", v07.shape);
        assert_eq!((v07.kernels[0].block_threads, v07.kernels[0].shared_bytes), (512, HEADER_BYTES));
        // v08: a 1024-thread block a row of 32768 f32 (8 vectors a thread), 32 f32 shared.
        let v08 = c
            .iter()
            .filter(|c| c.variant == "v08_l2_reread_layernorm_f32")
            .find(|c| c.shape.ends_with("x32768"))
            .unwrap();
        assert_eq!((v08.kernels[0].block_threads, v08.kernels[0].shared_bytes), (1024, 128));
        // Full run: the short and long shapes hold half the ladder's elements.
        let c = cases(false, None, 1);
        assert!(c.iter().any(|c| c.shape == "262144x128"));
        assert!(c.iter().any(|c| c.shape == "1024x32768"));
    }
}
