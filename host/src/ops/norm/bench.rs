//! norm: the bench cases (the ladder at 16384 x 4096 for both kinds and dtypes).

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

/// The family's bench cases. `size` overrides the element count (the rows follow).
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let cols = 4096;
    let rows = match size {
        Some(s) => (s as usize / cols).max(1),
        None if quick => 2048,
        None => 16384,
    };
    let mut out = Vec::new();
    for k in Kind::ALL {
        for dt in Dtype::ALL {
            for v in LADDER {
                let c = v.modelled(k, dt, rows as u64, cols as u64);
                out.push(Case {
                    family: super::FAMILY.name,
                    variant: v.row_variant(k, dt),
                    kernels: v.kernel_uses(k, dt, cols),
                    ladder: ladder(k, dt),
                    shape: format!("{rows}x{cols}"),
                    note: String::new(),
                    cost: c,
                    torch: Some(TorchSpec {
                        op: k.torch().into(),
                        shape: vec![rows as u64, cols as u64],
                        dtype: dt.torch().into(),
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
