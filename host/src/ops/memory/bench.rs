//! memory: the bench cases (copy and saxpy ladders, the particle layouts).

use rooflab_kernels::memory::PARTICLE_F32S;

use super::cost::{copy_cost, particles_aos_modelled, particles_cost, saxpy_cost};
use super::launch::{LADDER, Op, Variant, copy, particles_aos, particles_kernel_use, particles_soa, saxpy};
use super::tests::{DT, SAXPY_A, check_elementwise, check_particles};
use crate::bench::{Case, Workload, rotation_sets};
use crate::check::{random_f32, rng};
use crate::error::Result;
use crate::gpu::{DeviceArray, Gpu};

/// Default bench sizes: f32 elements for copy/saxpy, particles for the update.
pub fn default_sizes(quick: bool) -> (u64, u64) {
    if quick {
        (1 << 24, 1 << 21)
    } else {
        (1 << 28, 1 << 25)
    }
}

/// `2^k` when `n` is a power of two, else the number.
pub fn pretty_len(n: u64) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

struct ElementwiseWork {
    v: Variant,
    op: Op,
    n: usize,
    /// Rotating (x, y) sets; set 0 is also the one checked.
    sets: Vec<(DeviceArray<f32>, DeviceArray<f32>)>,
    seed: u64,
}

impl Workload for ElementwiseWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        // A fresh, full-size check on its own buffers (the timed sets keep their data).
        check_elementwise(gpu, self.v, self.op, self.n, 0, 0, self.seed)
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.sets.len();
        let (x, y) = &mut self.sets[k];
        match self.op {
            Op::Copy => copy(gpu, self.v, x.view(), y.view_mut()),
            // Repeated saxpy grows y by a*x each time: bounded, never overflows in a run.
            Op::Saxpy => saxpy(gpu, self.v, SAXPY_A, x.view(), y.view_mut()),
        }
    }
}

struct ParticleWork {
    soa: bool,
    n: usize,
    aos: Vec<DeviceArray<f32>>,
    soa_sets: Vec<[DeviceArray<f32>; 6]>,
    seed: u64,
}

impl Workload for ParticleWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check_particles(gpu, self.soa, self.n, self.seed)
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        if self.soa {
            let k = i % self.soa_sets.len();
            let [p0, p1, p2, v0, v1, v2] = &mut self.soa_sets[k];
            particles_soa(
                gpu,
                [p0.view_mut(), p1.view_mut(), p2.view_mut()],
                [v0.view(), v1.view(), v2.view()],
                DT,
            )
        } else {
            let k = i % self.aos.len();
            particles_aos(gpu, self.aos[k].view_mut(), DT)
        }
    }
}

/// The family's bench cases. `size` overrides the element count of copy/saxpy (and sets
/// the particle count to size / 8).
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let (n, np) = match size {
        Some(s) => (s, (s / PARTICLE_F32S as u64).max(1)),
        None => default_sizes(quick),
    };
    let mut out = Vec::new();
    for op in [Op::Copy, Op::Saxpy] {
        // v01 at stride 32 first (the ladder's baseline); copy then sweeps the stride down to
        // 1 so the table shows the bytes model at work; then the other steps.
        let mut variants: Vec<Variant> = vec![LADDER[0]];
        if op == Op::Copy {
            variants.extend([16, 8, 4, 2, 1].map(|stride| Variant::V01Strided { stride }));
        }
        variants.extend(&LADDER[1..]);
        for v in variants {
            let base = match op {
                Op::Copy => copy_cost(n),
                Op::Saxpy => saxpy_cost(n),
            };
            let cost = base.with_modelled(v.modelled_bytes(op, base.min_bytes));
            let note = match v {
                Variant::V01Strided { stride } => format!("stride {stride}"),
                _ => String::new(),
            };
            out.push(Case {
                family: super::FAMILY.name,
                variant: v.row_variant(op),
                kernels: vec![v.kernel_use(op)],
                ladder: op.name(),
                shape: format!("n={}", pretty_len(n)),
                note,
                cost,
                torch: None,
                prepare: Box::new(move |gpu: &Gpu| {
                    let mut r = rng(seed);
                    let sets = (0..rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes))
                        .map(|_| {
                            let x = gpu.upload(&random_f32(&mut r, n as usize, -1.0, 1.0))?;
                            let y = gpu.upload(&random_f32(&mut r, n as usize, -1.0, 1.0))?;
                            Ok((x, y))
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(Box::new(ElementwiseWork {
                        v,
                        op,
                        n: n as usize,
                        sets,
                        seed,
                    }) as Box<dyn Workload>)
                }),
            });
        }
    }
    for soa in [false, true] {
        let base = particles_cost(np);
        let cost = if soa {
            base
        } else {
            base.with_modelled(particles_aos_modelled(np))
        };
        out.push(Case {
            family: super::FAMILY.name,
            variant: particles_kernel_use(soa).kernel.name()["memory_".len()..].to_string(),
            kernels: vec![particles_kernel_use(soa)],
            ladder: "particles",
            shape: format!("particles={}", pretty_len(np)),
            note: String::new(),
            cost,
            torch: None,
            prepare: Box::new(move |gpu: &Gpu| {
                let mut r = rng(seed);
                let sets = rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes);
                let mut w = ParticleWork {
                    soa,
                    n: np as usize,
                    aos: vec![],
                    soa_sets: vec![],
                    seed,
                };
                for _ in 0..sets {
                    if soa {
                        let mut f = || gpu.upload(&random_f32(&mut r, np as usize, -10.0, 10.0));
                        w.soa_sets.push([f()?, f()?, f()?, f()?, f()?, f()?]);
                    } else {
                        w.aos.push(gpu.upload(&random_f32(
                            &mut r,
                            np as usize * PARTICLE_F32S,
                            -10.0,
                            10.0,
                        ))?);
                    }
                }
                Ok(Box::new(w) as Box<dyn Workload>)
            }),
        });
    }
    out
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cases_cover_every_variant() {
        let cases = cases(true, None, 1);
        for op in [Op::Copy, Op::Saxpy] {
            for v in LADDER {
                assert!(cases.iter().any(|c| c.variant == v.row_variant(op)));
            }
        }
        assert!(cases.iter().any(|c| c.variant == "v05_particles_aos"));
        assert!(cases.iter().any(|c| c.variant == "v06_particles_soa"));
    }
}
