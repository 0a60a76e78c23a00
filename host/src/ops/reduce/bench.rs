//! reduce: the bench cases (the sum ladder at one length; v01 capped).

use super::cost::{cost, modelled_bytes};
use super::launch::{LADDER, Variant, sum, workspace_len};
use super::tests::{Inputs, check, inputs};
use crate::bench::{Case, Workload, rotation_sets};
use crate::error::Result;
use crate::gpu::{DeviceArray, Gpu};

/// Default bench length: 2^28 (1 GiB) or 2^24 in quick mode.
pub fn default_len(quick: bool) -> u64 {
    if quick { 1 << 24 } else { 1 << 28 }
}

/// v01's same-address atomics run at roughly a few per nanosecond: at 2^28 one launch would
/// take far longer than the rest of the family together, so its row stays at 2^24.
pub const V01_BENCH_MAX: u64 = 1 << 24;

struct SumWork {
    v: Variant,
    n: usize,
    sets: Vec<DeviceArray<f32>>,
    out: DeviceArray<f32>,
    workspace: DeviceArray<f32>,
    seed: u64,
}

impl Workload for SumWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check(gpu, self.v, self.n, 0, Inputs::Positive, self.seed).map(|_| ())
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.sets.len();
        sum(
            gpu,
            self.v,
            self.sets[k].view(),
            self.out.view_mut(),
            Some(self.workspace.view_mut()),
        )
    }
}

fn pretty_len(n: u64) -> String {
    if n.is_power_of_two() {
        format!("n=2^{}", n.trailing_zeros())
    } else {
        format!("n={n}")
    }
}

/// The family's bench cases. `size` overrides the length (v01 is capped, see above).
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let n_all = size.unwrap_or(default_len(quick));
    LADDER
        .iter()
        .map(|&v| {
            let n = if v == Variant::V01Atomic {
                n_all.min(V01_BENCH_MAX)
            } else {
                n_all
            };
            let cost = cost(n).with_modelled(modelled_bytes(v, n));
            let note = match v {
                Variant::V01Atomic if n < n_all => format!(
                    "at {} not {}: same-address atomics would take too long",
                    pretty_len(n),
                    pretty_len(n_all)
                ),
                Variant::V07MultiElement {
                    deterministic: true,
                } => "deterministic: partials + fixed-order second launch".into(),
                Variant::V07MultiElement {
                    deterministic: false,
                } => "one atomic per block".into(),
                _ => String::new(),
            };
            Case {
                family: super::FAMILY.name,
                variant: v.row_variant(),
                kernels: v.kernel_uses(),
                ladder: "sum",
                shape: pretty_len(n),
                note,
                cost,
                torch: None,
                prepare: Box::new(move |gpu: &Gpu| {
                    let sets = (0..rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes))
                        .map(|k| {
                            gpu.upload(&inputs(
                                seed.wrapping_add(k as u64),
                                n as usize,
                                Inputs::Positive,
                            ))
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(Box::new(SumWork {
                        v,
                        n: n as usize,
                        sets,
                        out: gpu.alloc(1)?,
                        workspace: gpu.alloc(workspace_len(gpu, v, n))?,
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
    fn cases_keep_their_rows() {
        let cases = cases(false, None, 1);
        assert_eq!(cases.len(), LADDER.len());
        for (c, v) in cases.iter().zip(LADDER) {
            assert_eq!(c.variant, v.row_variant());
            assert_eq!(c.kernels, v.kernel_uses());
        }
        assert_eq!(
            cases.iter().map(|c| c.variant.as_str()).collect::<Vec<_>>(),
            [
                "v01_atomic",
                "v02_tree_divergent",
                "v03_strided_index",
                "v04_tree_sequential",
                "v05_first_add_on_load",
                "v06_warp_shuffle",
                "v07_multi_element",
                "v07_multi_element_final"
            ]
        );
        let v01 = cases.iter().find(|c| c.variant == "v01_atomic").unwrap();
        assert_eq!(v01.shape, "n=2^24");
    }
}
