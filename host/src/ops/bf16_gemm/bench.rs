//! bf16_gemm: the bench cases, all with cuBLAS's BF16 GemmEx (`Cublas::linear_bf16`, the
//! call behind torch's linear) as the peer:
//!
//! - the ladder (every step but v05: mma.sync v01-v04, v06; wgmma v07-v11, sm_90a only) at
//!   4096³ and 8192³ (`--quick`: 1024³ and 2048³; `--size S`: S³);
//! - the M sweep at N = K = 8192 (M = 1, 8, 64, 256, 1024, 4096, 8192; ladder
//!   `sweep_n8192_k8192`) and the MLP projection 8×28672×8192 (ladder
//!   `sweep_n28672_k8192`): at M ≤ `MAX_M` the weight-streaming step v05 beside the
//!   tensor-core steps v04 and v10 (and v06 at the MLP shape); at M = 64 all of v01-v04,
//!   v06, v07 and v10; above, v04, v06, v09, v10 and v11 (the run stays within a few
//!   minutes). `--quick` keeps M = 1, 8 and 256.
//!
//! The rows of one shape share its inputs and CPU reference. PyTorch's own column is empty
//! (`torch: None`): `host/peer/torch_peer.py` has no "linear" op; the cuBLAS column is the
//! same library call torch's `linear` makes.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use super::cost::bf16_gemm_cost;
use super::launch::{Dims, LADDER, Variant, linear};
use super::reference::{Reference, random_bf16};
use crate::bench::{Case, Peer, Workload, rotation_sets};
use crate::check::rng;
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu};
use crate::ops::gemm::bench::MAX_BENCH_DIM;
use crate::peer::cublas::Cublas;
use crate::tensor::POISON_BF16_BITS;

/// The ladder rows' ladder name (the square shapes).
pub const LADDER_NAME: &str = "bf16_gemm";
/// The M sweep's ladder name at N = K = 8192.
pub const SWEEP_NAME: &str = "sweep_n8192_k8192";
/// The MLP up-projection shape's ladder name (M = 8, N = 28672, K = 8192).
pub const MLP_NAME: &str = "sweep_n28672_k8192";
/// The sweep's M values (N = K = 8192).
pub const SWEEP_M: [usize; 7] = [1, 8, 64, 256, 1024, 4096, 8192];
/// `--quick`'s sweep.
pub const SWEEP_M_QUICK: [usize; 3] = [1, 8, 256];

/// The inputs of one bench shape, shared by every row at that shape: x and W drawn,
/// uploaded and the CPU reference computed once.
struct ShapeInputs {
    d: Dims,
    /// Rotating (x, W) device copies (enough sets to outgrow the L2).
    sets: Vec<(DeviceArray<u16>, DeviceArray<u16>)>,
    reference: Reference,
    seed: u64,
}

impl ShapeInputs {
    fn new(gpu: &Gpu, d: Dims, sets: usize, seed: u64) -> Result<ShapeInputs> {
        let mut r = rng(seed);
        let x = random_bf16(&mut r, d.m * d.k, -1.0, 1.0);
        let w = random_bf16(&mut r, d.n * d.k, -1.0, 1.0);
        let sets = (0..sets)
            .map(|_| Ok((gpu.upload(&x)?, gpu.upload(&w)?)))
            .collect::<Result<Vec<_>>>()?;
        let reference = Reference::new(d, &x, &w, seed);
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

struct LinearWork {
    v: Variant,
    inputs: Rc<ShapeInputs>,
    /// One y per (x, W) set.
    outs: Vec<DeviceArray<u16>>,
    cublas: Rc<std::result::Result<Cublas, String>>,
}

impl Workload for LinearWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        // y poisoned (bf16 NaN), one launch on the first set, compared with the shape's
        // reference (every element, or a sample plus the first/last rows and columns).
        let x = &self.inputs;
        let d = x.d;
        let (xs, ws) = &x.sets[0];
        gpu.sync()?;
        self.outs[0].copy_from_host(&vec![POISON_BF16_BITS; d.m * d.n])?;
        linear(
            gpu,
            self.v,
            d.m,
            d.n,
            d.k,
            xs.view(),
            ws.view(),
            self.outs[0].view_mut(),
        )?;
        gpu.sync()?;
        let got = self.outs[0].to_host()?;
        let what = format!("{} {d} seed={}", self.v.kernel().name(), x.seed);
        x.reference.compare(&what, d, &got)
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.outs.len();
        let (xs, ws) = &self.inputs.sets[k];
        let d = self.inputs.d;
        linear(
            gpu,
            self.v,
            d.m,
            d.n,
            d.k,
            xs.view(),
            ws.view(),
            self.outs[k].view_mut(),
        )
    }
    fn peer(&self) -> Peer {
        match self.cublas.as_ref() {
            Ok(_) => Peer::Available("cuBLAS GemmEx BF16".into()),
            Err(_) => Peer::Unavailable("cuBLAS not found, peer column skipped".into()),
        }
    }
    fn launch_peer(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.outs.len();
        let (xs, ws) = &self.inputs.sets[k];
        let d = self.inputs.d;
        let cb = self
            .cublas
            .as_ref()
            .as_ref()
            .map_err(|e| Error::Other(e.clone()))?;
        cb.linear_bf16(
            gpu,
            d.m,
            d.n,
            d.k,
            xs.view(),
            ws.view(),
            self.outs[k].view_mut(),
        )
    }
}

/// One bench shape: its ladder name, the shape and the steps run at it (in ladder order).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchShape {
    pub ladder: &'static str,
    pub d: Dims,
    pub steps: Vec<Variant>,
}

/// The steps the sweep runs at M (see the module docs).
pub fn sweep_steps(m: usize) -> Vec<Variant> {
    use Variant::*;
    let v05_rows = V05WeightStreaming.geometry().max_m.unwrap_or(0) as usize;
    if m <= v05_rows {
        vec![V04Swizzled, V05WeightStreaming, V10Persistent]
    } else if m <= 64 {
        vec![
            V01MmaSync,
            V02SmemLdmatrix,
            V03CpAsyncPipeline,
            V04Swizzled,
            V06FragmentDoubleBuffer,
            V07Wgmma,
            V10Persistent,
        ]
    } else {
        vec![
            V04Swizzled,
            V06FragmentDoubleBuffer,
            V09WarpSpecialized,
            V10Persistent,
            V11ClusterMulticast,
        ]
    }
}

/// The steps at the MLP projection shape 8×28672×8192: the sweep's steps at M = 8 and v06.
pub fn mlp_steps() -> Vec<Variant> {
    let mut steps = sweep_steps(8);
    steps.push(Variant::V06FragmentDoubleBuffer);
    steps
}

/// Every bench shape of a run.
pub fn bench_shapes(quick: bool, size: Option<u64>) -> Vec<BenchShape> {
    let ladder_steps = |d: Dims| -> Vec<Variant> {
        LADDER
            .into_iter()
            .filter(|v| v.geometry().max_m.is_none() && v.applies(d))
            .collect()
    };
    let cube = |s: usize| {
        let d = Dims::new(s, s, s);
        BenchShape {
            ladder: LADDER_NAME,
            d,
            steps: ladder_steps(d),
        }
    };
    match size {
        // --size is M = N = K here, as for gemm; past MAX_BENCH_DIM (a size meant for the
        // elementwise families) the family sits the run out.
        Some(s) if s > MAX_BENCH_DIM => vec![],
        Some(s) => vec![cube(s as usize)],
        None => {
            let (cubes, ms): (&[usize], &[usize]) = if quick {
                (&[1024, 2048], &SWEEP_M_QUICK)
            } else {
                (&[4096, 8192], &SWEEP_M)
            };
            let mut out: Vec<BenchShape> = cubes.iter().map(|&s| cube(s)).collect();
            for &m in ms {
                out.push(BenchShape {
                    ladder: SWEEP_NAME,
                    d: Dims::new(m, 8192, 8192),
                    steps: sweep_steps(m),
                });
            }
            if !quick {
                out.push(BenchShape {
                    ladder: MLP_NAME,
                    d: Dims::new(8, 28672, 8192),
                    steps: mlp_steps(),
                });
            }
            // Only the steps that take the shape (K multiples, v05's rows).
            for s in &mut out {
                let d = s.d;
                s.steps.retain(|v| v.applies(d));
            }
            out
        }
    }
}

/// The family's bench cases (see the module docs).
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let mut out = Vec::new();
    let shared = Rc::new(Shared::default());
    for shape in bench_shapes(quick, size) {
        let d = shape.d;
        for v in shape.steps {
            let cost = bf16_gemm_cost(d, v.precision());
            out.push(Case {
                family: super::FAMILY.name,
                variant: v.row_variant(),
                kernels: vec![v.kernel_use()],
                ladder: shape.ladder,
                shape: d.shape(),
                note: String::new(),
                cost,
                torch: None,
                prepare: {
                    let shared = shared.clone();
                    Box::new(move |gpu: &Gpu| {
                        let sets = rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes);
                        let inputs = shared.inputs(gpu, d, sets, seed)?;
                        let outs = (0..sets)
                            .map(|_| gpu.alloc::<u16>(d.m * d.n))
                            .collect::<Result<Vec<_>>>()?;
                        Ok(Box::new(LinearWork {
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
    use crate::cost::Precision;

    #[test]
    fn cases_cover_every_step_and_the_sweep() {
        let all = cases(false, None, 1);
        for v in LADDER {
            assert!(all.iter().any(|c| c.variant == v.row_variant()), "{v:?}");
        }
        // The ladder at both cubes: every step but v05 (v01..v04, v06..v11).
        for s in ["4096^3", "8192^3"] {
            let rows: Vec<_> = all
                .iter()
                .filter(|c| c.shape == s && c.ladder == LADDER_NAME)
                .collect();
            assert_eq!(rows.len(), 10, "{s}");
        }
        // The sweep: every M at N = K = 8192, each row with v04 (the best tensor-core step),
        // v05 exactly where M <= MAX_M.
        let max_m = Variant::V05WeightStreaming.geometry().max_m.unwrap() as usize;
        for m in SWEEP_M {
            let shape = Dims::new(m, 8192, 8192).shape();
            let rows: Vec<_> = all
                .iter()
                .filter(|c| c.ladder == SWEEP_NAME && c.shape == shape)
                .collect();
            assert!(
                rows.iter()
                    .any(|c| c.variant == Variant::V04Swizzled.row_variant()),
                "{shape}"
            );
            let has_v05 = rows
                .iter()
                .any(|c| c.variant == Variant::V05WeightStreaming.row_variant());
            assert_eq!(has_v05, m <= max_m, "{shape}");
        }
        assert_eq!(Dims::new(8192, 8192, 8192).shape(), "8192^3");
        let mlp: Vec<_> = all.iter().filter(|c| c.ladder == MLP_NAME).collect();
        assert_eq!(mlp.len(), 4);
        assert!(mlp.iter().all(|c| c.shape == "8×28672×8192"));
        // Short enough: a few dozen rows.
        assert!(all.len() <= 60, "{} rows", all.len());
        // Quick: small cubes, a short sweep, no MLP shape.
        let quick = cases(true, None, 1);
        assert!(quick.iter().any(|c| c.shape == "1024^3"));
        assert!(quick.iter().any(|c| c.shape == "2048^3"));
        assert!(
            !quick
                .iter()
                .any(|c| c.shape == "4096^3" || c.ladder == MLP_NAME)
        );
        assert!(quick.iter().any(|c| c.ladder == SWEEP_NAME));
        // --size: one cube; too large for gemm's limit: nothing.
        let sized = cases(false, Some(512), 1);
        assert!(!sized.is_empty() && sized.iter().all(|c| c.shape == "512^3"));
        assert!(cases(false, Some(1 << 20), 1).is_empty());
    }

    #[test]
    fn every_case_names_its_kernel_launch_shape_and_cost() {
        for quick in [false, true] {
            for c in cases(quick, None, 1) {
                let v = LADDER
                    .into_iter()
                    .find(|v| v.row_variant() == c.variant)
                    .unwrap();
                assert_eq!(c.family, super::super::FAMILY.name);
                assert_eq!(c.kernels.len(), 1, "{}", c.variant);
                let u = &c.kernels[0];
                assert_eq!(u.kernel, v.kernel());
                assert_eq!(u.block_threads, v.geometry().block_threads);
                assert_eq!(u.shared_bytes, v.geometry().shared_bytes);
                assert!(c.torch.is_none());
                assert!(c.cost.flops.0 > 0 && c.cost.min_bytes.0 > 0);
                // Every step multiplies on the tensor cores (v05 with x padded to 16 rows).
                assert_eq!(c.cost.precision, Precision::Bf16Tensor, "{}", c.variant);
            }
        }
    }
}
