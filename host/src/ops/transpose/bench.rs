//! transpose: the bench cases (the ladder at one square shape).

use super::cost::{cost, modelled_bytes};
use super::launch::{LADDER, Variant, transpose};
use super::tests::check;
use crate::bench::{Case, Workload, rotation_sets};
use crate::check::{random_f32, rng};
use crate::error::Result;
use crate::gpu::{DeviceArray, Gpu};

/// Default bench shape (m, n): 8192² (256 MiB each way) or 2048² rotated in quick mode.
pub fn default_shape(quick: bool) -> (u64, u64) {
    if quick { (2048, 2048) } else { (8192, 8192) }
}

struct TransposeWork {
    v: Variant,
    m: usize,
    n: usize,
    /// Rotating (input, output) sets.
    sets: Vec<(DeviceArray<f32>, DeviceArray<f32>)>,
    seed: u64,
}

impl Workload for TransposeWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check(gpu, self.v, self.m, self.n, 0, 0, self.seed)
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.sets.len();
        let (x, y) = &mut self.sets[k];
        transpose(gpu, self.v, self.m, self.n, x.view(), y.view_mut())
    }
}

/// The family's bench cases. `size` overrides the square edge.
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let (m, n) = match size {
        Some(s) => (s, s),
        None => default_shape(quick),
    };
    LADDER
        .iter()
        .map(|&v| {
            let cost = cost(m, n).with_modelled(modelled_bytes(v, m, n));
            Case {
                family: super::FAMILY.name,
                variant: v.row_variant(),
                kernels: vec![v.kernel_use()],
                ladder: "transpose",
                shape: format!("{m}x{n}"),
                note: String::new(),
                cost,
                torch: None,
                prepare: Box::new(move |gpu: &Gpu| {
                    let mut r = rng(seed);
                    let len = (m * n) as usize;
                    let sets = (0..rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes))
                        .map(|_| {
                            let x = gpu.upload(&random_f32(&mut r, len, -1.0, 1.0))?;
                            let y = gpu.alloc::<f32>(len)?;
                            Ok((x, y))
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(Box::new(TransposeWork {
                        v,
                        m: m as usize,
                        n: n as usize,
                        sets,
                        seed,
                    }) as Box<dyn Workload>)
                }),
            }
        })
        .collect()
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cases_cover_every_variant() {
        let cases = cases(true, None, 1);
        assert_eq!(cases.len(), LADDER.len());
        for (c, v) in cases.iter().zip(LADDER) {
            assert_eq!(c.variant, v.row_variant());
            assert_eq!(c.kernels, vec![v.kernel_use()]);
        }
        assert_eq!(
            cases.iter().map(|c| c.variant.as_str()).collect::<Vec<_>>(),
            [
                "v01_naive",
                "v02_smem_tiled",
                "v03_padded",
                "v04_multi_element_vectorized"
            ]
        );
    }
}
