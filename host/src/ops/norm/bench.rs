//! norm: the bench cases: the ladder at 16384 x 4096 for both kinds and dtypes, and a
//! row-length sweep at a fixed total (ladders `sweep_cols_KIND_DTYPE`: rows x cols = 2^26
//! for cols = 128 .. 262144) of v04 (rows it holds, up to `ROW_MAX_COLS`) and v02 (any
//! length), drawn as lines over cols by the report.

use rooflab_kernels::norm::v03_fused_vectorized::ROW_MAX_COLS;

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
/// The sweep's row lengths: short rows, v04's longest (`ROW_MAX_COLS`), and past it (not
/// 4096: the ladder's own shape, 16384 x 4096, is that point).
pub const SWEEP_COLS: [usize; 6] = [128, 1024, 8192, 16384, 65536, 262144];
/// The steps the sweep draws: the row held on chip where it fits, and v02 everywhere.
pub const SWEEP_STEPS: [Variant; 2] = [Variant::V04PackedRow, Variant::V02FusedBlock];

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
    // (ladder?, rows, cols, step): the ladder at its shape, then the sweep's points.
    let mut plan: Vec<(bool, usize, usize, Variant)> =
        LADDER.iter().map(|&v| (true, rows, cols, v)).collect();
    if !quick && size.is_none() {
        for c in SWEEP_COLS {
            for v in SWEEP_STEPS {
                if !v.holds_row() || c <= ROW_MAX_COLS as usize {
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

    #[test]
    fn the_sweep_keeps_the_total_and_v04_where_it_fits() {
        let c = cases(false, None, 1);
        for k in Kind::ALL {
            for dt in Dtype::ALL {
                let sweep: Vec<&Case> = c.iter().filter(|c| c.ladder == sweep_ladder(k, dt)).collect();
                // v02 at every length, v04 up to ROW_MAX_COLS (4 of the 6).
                assert_eq!(sweep.len(), SWEEP_COLS.len() + 4);
                for case in sweep {
                    let (r, cols) = case.shape.split_once('x').unwrap();
                    let (r, cols): (usize, usize) = (r.parse().unwrap(), cols.parse().unwrap());
                    assert_eq!(r * cols, SWEEP_TOTAL);
                    // Never the ladder's shape: a name and shape name one row (docs markers).
                    assert_ne!(case.shape, "16384x4096");
                    if case.variant == Variant::V04PackedRow.row_variant(k, dt) {
                        assert!(cols <= ROW_MAX_COLS as usize);
                    }
                }
            }
        }
    }

    #[test]
    fn cases_cover_the_ladder() {
        let c = cases(true, None, 1);
        assert_eq!(c.len(), 4 * LADDER.len());
        for k in Kind::ALL {
            for dt in Dtype::ALL {
                for v in LADDER {
                    assert!(c.iter().any(|c| c.variant == v.row_variant(k, dt)));
                }
            }
        }
        assert!(c.iter().all(|c| !c.kernels.is_empty() && c.torch.is_some()));
    }
}
