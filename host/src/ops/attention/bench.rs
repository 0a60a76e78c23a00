//! attention: the bench cases (the ladder at B 4, H 16, S 1024 and 4096, D 64 and 128,
//! causal and not).

use super::launch::{Attn, LADDER, Variant, attention};
use super::tests::{check, inputs};
use crate::bench::{Case, TorchSpec, Workload, rotation_sets};
use crate::error::Result;
use crate::gpu::Gpu;
use crate::tensor::{Buf, Dtype};
use super::peer::{SDPA, SDPA_CAUSAL};

struct AttnWork {
    v: Variant,
    a: Attn,
    /// Input sets (Q, K, V), rotated when one would stay in L2.
    sets: Vec<[Buf; 3]>,
    o: Buf,
    seed: u64,
}

impl Workload for AttnWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        // At the bench shape, sampled rows (the reference is O(S²·D) a row).
        check(gpu, self.v, self.a, self.seed)
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let [q, k, v] = &self.sets[i % self.sets.len()];
        attention(gpu, self.v, &self.a, q, k, v, &mut self.o)
    }
}

/// The bench shapes: PyTorch's usual prefill benchmark (B 4, H 16), two lengths, both head
/// dims, causal and not; `--quick`: S 1024 only. `size` sets the elements of Q (as the
/// row-wise families' rows × cols): S = size / (B·H·D).
pub fn shapes(quick: bool, size: Option<u64>) -> Vec<Attn> {
    let (b, h) = (4, 16);
    let mut out = Vec::new();
    for d in [64, 128] {
        let seqs: Vec<usize> = match size {
            Some(n) => vec![(n as usize / (b * h * d)).max(1)],
            None if quick => vec![1024],
            None => vec![1024, 4096],
        };
        for s in seqs {
            for causal in [false, true] {
                out.push(Attn::new(b, h, s, d, causal));
            }
        }
    }
    out
}

/// The family's bench cases.
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let mut out = Vec::new();
    for a in shapes(quick, size) {
        for v in LADDER {
            let cost = v.modelled(&a);
            out.push(Case {
                family: super::FAMILY.name,
                variant: v.row_variant(a.dim),
                kernels: v.kernel_uses(a.dim),
                ladder: if a.causal { "prefill_causal" } else { "prefill" },
                shape: a.label(),
                note: String::new(),
                cost,
                // PyTorch SDPA on the same shape, flash then cuDNN backend (`--peer torch`).
                torch: Some(TorchSpec {
                    op: if a.causal { SDPA_CAUSAL } else { SDPA }.into(),
                    shape: [a.batch, a.heads, a.seq, a.dim].map(|x| x as u64).to_vec(),
                    dtype: Dtype::Bf16.torch().into(),
                    lens: Vec::new(),
                }),
                prepare: Box::new(move |gpu: &Gpu| {
                    let n = rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes).min(4);
                    let sets = (0..n)
                        .map(|i| {
                            let [q, k, v] = inputs(&a, seed ^ (0xa77 + i as u64));
                            Ok([
                                Buf::upload(gpu, Dtype::Bf16, &q)?,
                                Buf::upload(gpu, Dtype::Bf16, &k)?,
                                Buf::upload(gpu, Dtype::Bf16, &v)?,
                            ])
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(Box::new(AttnWork {
                        v,
                        a,
                        sets,
                        o: Buf::alloc(gpu, Dtype::Bf16, a.elements())?,
                        seed,
                    }) as Box<dyn Workload>)
                }),
            });
        }
    }
    out
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cases_cover_the_ladder() {
        let c = cases(false, None, 1);
        assert_eq!(c.len(), 8 * LADDER.len());
        assert!(c.iter().all(|c| !c.kernels.is_empty()));
        assert!(c.iter().any(|c| c.shape == "4x16x4096x128 causal"));
        // Every row has its SDPA peer, causal as the row is.
        let t = c.iter().find(|c| c.shape == "4x16x4096x128 causal").unwrap();
        let spec = t.torch.as_ref().unwrap();
        assert_eq!((spec.op.as_str(), &spec.shape[..]), (SDPA_CAUSAL, &[4, 16, 4096, 128][..]));
        assert!(c.iter().all(|c| c.torch.is_some()));
        assert_eq!(cases(true, None, 1).len(), 4 * LADDER.len());
        // --size is Q's elements: S = size / (B·H·D).
        let s = shapes(false, Some(1 << 28));
        assert!(s.iter().any(|a| a.dim == 64 && a.seq == 65536));
        assert!(s.iter().any(|a| a.dim == 128 && a.seq == 32768));
    }
}
