//! gemm: the bench cases (the ladder at each shape, with cuBLAS SGEMM as the peer). The
//! rows of one shape share its inputs and its CPU reference.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use super::cost::gemm_cost;
use super::launch::{Dims, LADDER, Variant, sgemm};
use super::reference::Reference;
use crate::bench::{Case, Peer, Workload, rotation_sets};
use crate::check::{random_f32, rng};
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu};
use crate::peer::cublas::Cublas;

/// The inputs of one bench shape, shared by every variant's row at that shape: A and B are
/// drawn, uploaded and the CPU reference computed once (at 8192³ that is seconds of host
/// work, which per row used to dominate the bench's run time).
struct ShapeInputs {
    d: Dims,
    /// Rotating (A, B) device copies (enough sets to outgrow the L2).
    sets: Vec<(DeviceArray<f32>, DeviceArray<f32>)>,
    reference: Reference,
    seed: u64,
}

impl ShapeInputs {
    fn new(gpu: &Gpu, d: Dims, sets: usize, seed: u64) -> Result<ShapeInputs> {
        let mut r = rng(seed);
        let a = random_f32(&mut r, d.m * d.k, -1.0, 1.0);
        let b = random_f32(&mut r, d.k * d.n, -1.0, 1.0);
        let sets = (0..sets)
            .map(|_| Ok((gpu.upload(&a)?, gpu.upload(&b)?)))
            .collect::<Result<Vec<_>>>()?;
        let reference = Reference::new(d, BENCH_ALPHA, &a, &b, BENCH_BETA, None, seed);
        Ok(ShapeInputs {
            d,
            sets,
            reference,
            seed,
        })
    }
}

/// What the cases of one bench run share: the inputs of the shape being run (one at a
/// time: the next shape replaces them) and cuBLAS, loaded once.
#[derive(Default)]
struct Shared {
    inputs: RefCell<Option<Rc<ShapeInputs>>>,
    cublas: OnceCell<Rc<std::result::Result<Cublas, String>>>,
}

impl Shared {
    fn inputs(&self, gpu: &Gpu, d: Dims, sets: usize, seed: u64) -> Result<Rc<ShapeInputs>> {
        let mut slot = self.inputs.borrow_mut();
        if let Some(x) = slot.as_ref().filter(|x| x.d == d && x.sets.len() == sets) {
            return Ok(x.clone());
        }
        // Free the previous shape's buffers before allocating the next.
        *slot = None;
        let x = Rc::new(ShapeInputs::new(gpu, d, sets, seed)?);
        *slot = Some(x.clone());
        Ok(x)
    }
    fn cublas(&self) -> Rc<std::result::Result<Cublas, String>> {
        self.cublas.get_or_init(|| Rc::new(Cublas::load())).clone()
    }
}

struct GemmWork {
    v: Variant,
    inputs: Rc<ShapeInputs>,
    /// One C per (A, B) set.
    outs: Vec<DeviceArray<f32>>,
    cublas: Rc<std::result::Result<Cublas, String>>,
}

/// The bench's alpha and beta: beta == 0, as in C = A·B.
const BENCH_ALPHA: f32 = 1.0;
const BENCH_BETA: f32 = 0.0;

impl Workload for GemmWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        // C poisoned, one launch on the first set, compared with the shape's reference
        // (every element, or a sample plus the first/last rows and columns).
        let x = &self.inputs;
        let d = x.d;
        let (a, b) = &x.sets[0];
        let c = &mut self.outs[0];
        gpu.poison(c.view_mut())?;
        sgemm(
            gpu,
            self.v,
            d,
            BENCH_ALPHA,
            a.view(),
            b.view(),
            BENCH_BETA,
            c.view_mut(),
        )?;
        gpu.sync()?;
        let got = c.to_host()?;
        let what = format!(
            "{} {d} alpha={BENCH_ALPHA} beta={BENCH_BETA} seed={}",
            self.v.kernel().name(),
            x.seed
        );
        x.reference.compare(&what, d, &got)
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.outs.len();
        let (a, b) = &self.inputs.sets[k];
        let d = self.inputs.d;
        sgemm(
            gpu,
            self.v,
            d,
            BENCH_ALPHA,
            a.view(),
            b.view(),
            BENCH_BETA,
            self.outs[k].view_mut(),
        )
    }
    fn peer(&self) -> Peer {
        match self.cublas.as_ref() {
            Ok(_) => Peer::Available("cuBLAS SGEMM".into()),
            Err(_) => Peer::Unavailable("cuBLAS not found, peer column skipped".into()),
        }
    }
    fn launch_peer(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.outs.len();
        let (a, b) = &self.inputs.sets[k];
        let d = self.inputs.d;
        let cb = self
            .cublas
            .as_ref()
            .as_ref()
            .map_err(|e| Error::Other(e.clone()))?;
        cb.sgemm_row_major(
            gpu,
            d.m,
            d.n,
            d.k,
            BENCH_ALPHA,
            a.view(),
            b.view(),
            BENCH_BETA,
            self.outs[k].view_mut(),
        )
    }
}

/// The largest `--size` gemm takes as its square dimension.
pub const MAX_BENCH_DIM: u64 = 65536;

/// Bench shapes. v01/v02 run only up to 2048², v03/v04 up to 4096² and the tall-skinny
/// shape: at 8192³ they would take seconds per launch and dominate the run.
pub fn bench_shapes(quick: bool, size: Option<u64>) -> Vec<(Dims, Variant)> {
    let mut shapes: Vec<Dims> = match size {
        // --size is M = N = K here; past 65536 the three matrices would not fit a GPU's
        // memory (a size meant for the elementwise families), so gemm sits that run out.
        Some(s) if s > MAX_BENCH_DIM => vec![],
        Some(s) => vec![Dims::new(s as usize, s as usize, s as usize)],
        None if quick => vec![Dims::new(1024, 1024, 1024), Dims::new(2048, 2048, 2048)],
        None => [1024, 2048, 4096, 8192]
            .iter()
            .map(|&s| Dims::new(s, s, s))
            .collect(),
    };
    if size.is_none() && !quick {
        shapes.push(Dims::new(8192, 128, 8192));
    }
    shapes
        .into_iter()
        .map(|d| {
            let macs = d.m.saturating_mul(d.n).saturating_mul(d.k);
            let first = if macs > 4096 * 4096 * 4096 {
                Variant::V05Blocktile2d
            } else if macs > 2048 * 2048 * 2048 {
                Variant::V03SmemTiled
            } else {
                Variant::V01Naive
            };
            (d, first)
        })
        .collect()
}

/// The family's bench cases: the ladder at each bench shape, cuBLAS as the peer.
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let mut out = Vec::new();
    let shared = Rc::new(Shared::default());
    for (d, first) in bench_shapes(quick, size) {
        let skipped = LADDER.iter().take_while(|&&v| v != first).count();
        let note = if skipped > 0 {
            format!("v01..v{skipped:02} skipped at this size (too slow)",)
        } else {
            String::new()
        };
        for &v in LADDER.iter().skip(skipped) {
            let cost = gemm_cost(d, BENCH_BETA != 0.0);
            out.push(Case {
                family: super::FAMILY.name,
                variant: v.stem().to_string(),
                kernels: v.kernel_uses(),
                ladder: "sgemm",
                shape: if d.m == d.n && d.n == d.k {
                    format!("{}^3", d.m)
                } else {
                    format!("{}x{}x{}", d.m, d.n, d.k)
                },
                note: note.clone(),
                cost,
                torch: None,
                prepare: {
                    let shared = shared.clone();
                    Box::new(move |gpu: &Gpu| {
                        let sets = rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes);
                        let inputs = shared.inputs(gpu, d, sets, seed)?;
                        let outs = (0..sets)
                            .map(|_| gpu.alloc::<f32>(d.m * d.n))
                            .collect::<Result<Vec<_>>>()?;
                        Ok(Box::new(GemmWork {
                            v,
                            inputs,
                            outs,
                            cublas: shared.cublas(),
                        }) as Box<dyn Workload>)
                    })
                },
            });
        }
    }
    out
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cases_cover_every_variant_and_skip_slow_ones() {
        let all = cases(false, None, 1);
        for v in LADDER {
            assert!(all.iter().any(|c| c.variant == v.stem()));
        }
        assert!(
            !all.iter()
                .any(|c| c.shape == "8192^3" && c.variant == "v01_naive")
        );
        assert!(
            all.iter()
                .any(|c| c.shape == "8192x128x8192" && c.variant == "v08_double_buffered")
        );
        assert_eq!(cases(true, None, 1).len(), 2 * LADDER.len());
    }

    #[test]
    fn every_case_names_its_kernel_and_launch_shape() {
        for c in cases(false, None, 1) {
            let v = LADDER.into_iter().find(|v| v.stem() == c.variant).unwrap();
            assert_eq!(c.kernels, v.kernel_uses(), "{}", c.variant);
            let u = &c.kernels[0];
            assert_eq!(u.kernel, v.kernel().id());
            assert_eq!(u.block_threads, v.geometry().threads());
            assert_eq!(u.shared_bytes, v.geometry().shared_bytes);
            assert!(u.block_threads > 0);
        }
    }
}
