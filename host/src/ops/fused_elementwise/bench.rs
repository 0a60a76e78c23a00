//! fused_elementwise: the bench cases (the ladder at 16384 x 4096, both GELU forms, both
//! dtypes).

use super::cost::cost;
use super::launch::{Gelu, Inputs, Intermediates, LADDER, Variant, gelu_chain};
use super::tests::{check, host_inputs};
use crate::bench::{Case, TorchSpec, Workload, rotation_sets};
use crate::error::Result;
use crate::gpu::Gpu;
use crate::tensor::{Buf, Dtype};

struct ChainWork {
    v: Variant,
    g: Gelu,
    dt: Dtype,
    rows: usize,
    cols: usize,
    sets: Vec<[Buf; 4]>,
    y: Buf,
    tmp: Option<Intermediates>,
    seed: u64,
}

impl Workload for ChainWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check(
            gpu, self.v, self.g, self.dt, self.rows, self.cols, self.seed,
        )
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let [x, s, b, r] = &self.sets[i % self.sets.len()];
        let inp = Inputs {
            x,
            scale: s,
            bias: b,
            residual: r,
        };
        gelu_chain(
            gpu,
            self.v,
            self.g,
            self.rows,
            self.cols,
            &inp,
            &mut self.y,
            self.tmp.as_mut(),
        )
    }
}

/// Bench shape: 16384 x 4096 (quick: 2048 x 4096, rotated); `size` overrides the rows.
pub fn bench_shape(quick: bool, size: Option<u64>) -> (usize, usize) {
    let cols = 4096;
    let rows = match size {
        Some(s) => (s as usize / cols).max(1),
        None if quick => 2048,
        None => 16384,
    };
    (rows, cols)
}

/// The ladder a row climbs: one per GELU form and dtype.
fn ladder(g: Gelu, dt: Dtype) -> &'static str {
    match (g, dt) {
        (Gelu::Tanh, Dtype::F32) => "gelu_tanh_f32",
        (Gelu::Tanh, Dtype::Bf16) => "gelu_tanh_bf16",
        (Gelu::Erf, Dtype::F32) => "gelu_erf_f32",
        (Gelu::Erf, Dtype::Bf16) => "gelu_erf_bf16",
    }
}

/// The family's bench cases. `size` overrides the element count (the rows follow).
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let (rows, cols) = bench_shape(quick, size);
    let mut out = Vec::new();
    for dt in Dtype::ALL {
        for g in [Gelu::Tanh, Gelu::Erf] {
            for v in LADDER {
                let base = cost(dt, rows as u64, cols as u64);
                let c = base.with_modelled(v.modelled_bytes(dt, rows as u64, cols as u64));
                out.push(Case {
                    family: super::FAMILY.name,
                    variant: v.row_variant(dt),
                    kernels: v.kernel_uses(dt),
                    ladder: ladder(g, dt),
                    shape: format!("{rows}x{cols}"),
                    note: format!("gelu {}", g.name()),
                    cost: c,
                    torch: Some(TorchSpec {
                        op: format!("gelu_chain_{}", g.name()),
                        shape: vec![rows as u64, cols as u64],
                        dtype: dt.torch().into(),
                        lens: Vec::new(),
                    }),
                    prepare: Box::new(move |gpu: &Gpu| {
                        let sets = (0..rotation_sets(c.min_bytes.0, gpu.info.l2_bytes))
                            .map(|k| {
                                let h = host_inputs(dt, rows, cols, seed + 1000 + k as u64);
                                let up = |d: &[f32]| Buf::upload(gpu, dt, d);
                                Ok([up(&h.x)?, up(&h.scale)?, up(&h.bias)?, up(&h.res)?])
                            })
                            .collect::<Result<Vec<_>>>()?;
                        let tmp = if v == Variant::V01Unfused {
                            Some(Intermediates::alloc(gpu, dt, rows * cols)?)
                        } else {
                            None
                        };
                        Ok(Box::new(ChainWork {
                            v,
                            g,
                            dt,
                            rows,
                            cols,
                            sets,
                            y: Buf::alloc(gpu, dt, rows * cols)?,
                            tmp,
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
        assert_eq!(c.len(), 12);
        assert!(c.iter().all(|c| c.torch.is_some()));
        assert!(c.iter().all(|c| !c.kernels.is_empty()));
        assert!(c.iter().any(|c| c.variant == "v03_fused_vectorized_bf16"));
    }
}
