//! decode: the bench cases (batch 1, 16, 64, 256 × contexts of L and drawn in [1, L] for L
//! 512, 4096, 32768; Hq 32, Hkv 8, D 128, pages of 16).

use super::launch::{LADDER, Variant, decode, decode_timeline};
use super::tests::pages_needed;
use super::tests::{Heads, Problem, check, problem};
use crate::bench::{Case, TorchSpec, Workload};
use crate::check::rng;
use crate::error::Result;
use crate::gpu::Gpu;
use crate::tensor::{Buf, Dtype};
use super::peer::DECODE_SDPA;
use super::probe::{PROBES, Probe, ProbeRun};
use crate::cost::{Cost, Flops};
use rand::Rng;

/// The bench's heads: a Llama-style GQA layer.
pub const HEADS: Heads = Heads {
    hq: 32,
    hkv: 8,
    dim: 128,
    page_size: 16,
};

/// Pages in the bench's cache: 12288 pages of 16 keys × 8 heads × 128 dims, 384 MiB per
/// cache, 12.8× the H200's L2 for K and V together (the inputs are made on the CPU, so not
/// more). A batch whose contexts need at most that many pages gets pages of its own, in
/// random order: every KV byte comes from DRAM once, as the roof assumes. Larger batches draw
/// their pages from the pool at random, so a page serves several sequences (as shared
/// prefixes do) and some of its reads may hit L2: their rows say "pages shared", and their
/// GB/s can pass the DRAM roof. (2^13 pages with every batch drawing at random put batch
/// 64 × L 4096 at 0.84× the modelled DRAM bytes under ncu, H200 2026-12-03.)
pub const POOL_PAGES: usize = 12288;

struct DecodeWork {
    v: Variant,
    p: Problem,
    out: Buf,
}

impl Workload for DecodeWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        // A few sequences, every head (the reference walks each context in f64).
        let n = self.p.kv.shape.batch;
        let seqs: Vec<usize> = [0, n / 3, n / 2, n - 1].into_iter().filter(|&b| b < n).collect();
        let mut seqs = seqs;
        seqs.dedup();
        check(gpu, self.v, &self.p, &seqs)
    }
    fn launch(&mut self, gpu: &Gpu, _i: usize) -> Result<()> {
        decode(gpu, self.v, &self.p.q, &self.p.kv, &mut self.out)
    }
    fn timeline(&mut self, gpu: &Gpu) -> Option<Result<Vec<crate::timeline::BlockStamps>>> {
        self.v
            .streamed()
            .then(|| decode_timeline(gpu, self.v, &self.p.q, &self.p.kv, &mut self.out))
    }
}

/// The probe rows' ladder (their own: the decode ladder's baseline stays v01).
pub const PROBE_LADDER: &str = "decode_probe";

struct ProbeWork {
    p: Problem,
    run: ProbeRun,
}

impl Workload for ProbeWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        self.run.check(gpu, &self.p.kv)
    }
    fn launch(&mut self, gpu: &Gpu, _i: usize) -> Result<()> {
        self.run.run(gpu, &self.p.kv)
    }
}

/// (batch, L) of the bench; `--quick`: two; `size` sets L at batch 64.
pub fn shapes(quick: bool, size: Option<u64>) -> Vec<(usize, u32)> {
    match size {
        Some(l) => vec![(64, l.clamp(1, 1 << 20) as u32)],
        None if quick => vec![(16, 4096), (1, 32768)],
        None => [1, 16, 64, 256]
            .into_iter()
            .flat_map(|b| [512u32, 4096, 32768].map(move |l| (b, l)))
            .collect(),
    }
}

/// Context lengths: the first sequence exactly L (so batch 1 is a context of L, and every
/// batch has its longest), the others drawn uniformly in [1, L] (seeded).
pub fn lengths(batch: usize, l: u32, seed: u64) -> Vec<u32> {
    let mut r = rng(seed);
    (0..batch)
        .map(|b| if b == 0 { l } else { r.random_range(1..=l) })
        .collect()
}

/// The family's bench cases.
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let mut out = Vec::new();
    for (batch, l) in shapes(quick, size) {
        let lens = lengths(batch, l, seed ^ (batch as u64 * 31 + l as u64));
        let s = super::launch::DecodeShape {
            batch,
            hq: HEADS.hq,
            hkv: HEADS.hkv,
            dim: HEADS.dim,
            page_size: HEADS.page_size,
            num_pages: POOL_PAGES,
            max_pages: (l as usize).div_ceil(HEADS.page_size),
        };
        // The copy-only probe: the same K and V bytes read in decode's pattern, as whole
        // rows and as a contiguous stream (no peer: there is no op to compare).
        for probe in PROBES {
            let lens = lens.clone();
            out.push(Case {
                family: super::FAMILY.name,
                variant: probe.row_variant(HEADS.dim),
                kernels: vec![Probe::kernel_use()],
                ladder: PROBE_LADDER,
                shape: format!("batch {batch} L {l}"),
                note: format!("copy-only probe, {}; {} keys", probe.name().replace('_', " "), lens.iter().map(|&x| x as u64).sum::<u64>()),
                // The cache's bytes (the u32 a block written: a fraction of a percent, not counted).
                cost: Cost::new(Flops(0), super::cost::cache_bytes(&s, &lens)),
                torch: None,
                prepare: Box::new(move |gpu: &Gpu| {
                    let p = problem(gpu, HEADS, &lens, Some(POOL_PAGES), seed ^ 0xdec0)?;
                    let run = ProbeRun::new(gpu, probe, &p.kv)?;
                    Ok(Box::new(ProbeWork { p, run }) as Box<dyn Workload>)
                }),
            });
        }
        for v in LADDER {
            let lens = lens.clone();
            let cost = v.modelled(&s, &lens);
            out.push(Case {
                family: super::FAMILY.name,
                variant: v.row_variant(HEADS.dim),
                kernels: v.kernel_uses(&s),
                ladder: "decode",
                shape: format!("batch {batch} L {l}"),
                note: format!(
                    "Hq {} Hkv {} D {} page {}; {} keys{}",
                    HEADS.hq,
                    HEADS.hkv,
                    HEADS.dim,
                    HEADS.page_size,
                    lens.iter().map(|&x| x as u64).sum::<u64>(),
                    if pages_needed(&lens, HEADS.page_size) > POOL_PAGES {
                        format!("; pages shared (a pool of {POOL_PAGES})")
                    } else {
                        String::new()
                    }
                ),
                cost,
                // PyTorch SDPA on a contiguous copy of a cache with these lengths
                // (`--peer torch`, `decode::peer`).
                torch: Some(TorchSpec {
                    op: DECODE_SDPA.into(),
                    shape: [batch, HEADS.hq, HEADS.hkv, HEADS.dim].map(|x| x as u64).to_vec(),
                    dtype: Dtype::Bf16.torch().into(),
                    lens: lens.clone(),
                }),
                prepare: Box::new(move |gpu: &Gpu| {
                    let p = problem(gpu, HEADS, &lens, Some(POOL_PAGES), seed ^ 0xdec0)?;
                    let out = Buf::alloc(gpu, Dtype::Bf16, p.kv.shape.q_elements())?;
                    Ok(Box::new(DecodeWork { v, p, out }) as Box<dyn Workload>)
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
        assert_eq!(cases(false, None, 1).len(), 12 * (LADDER.len() + PROBES.len()));
        assert!(cases(false, None, 1).iter().any(|c| c.kernels.len() == 2));
        assert_eq!(cases(true, None, 1).len(), 2 * (LADDER.len() + PROBES.len()));
        let l = lengths(64, 4096, 7);
        assert!(l.iter().all(|&x| (1..=4096).contains(&x)));
        assert_eq!(l[0], 4096);
        assert_eq!(l, lengths(64, 4096, 7), "seeded");
        // The peer gets the row's own lengths.
        let c: Vec<Case> = cases(false, None, 1).into_iter().filter(|c| c.ladder == "decode").collect();
        let spec = c[0].torch.as_ref().unwrap();
        assert_eq!(spec.op, DECODE_SDPA);
        assert_eq!(spec.shape, vec![1, 32, 8, 128]);
        assert_eq!(spec.lens, vec![512]);
        let big = c.iter().find(|c| c.shape == "batch 64 L 4096").unwrap();
        let lens = &big.torch.as_ref().unwrap().lens;
        assert_eq!(lens.len(), 64);
        assert!(big.note.ends_with(&format!("{} keys", lens.iter().map(|&x| x as u64).sum::<u64>())));
        // Batch 64 × L 4096 fits the pool (pages of its own); batch 256 × L 32768 does not.
        assert!(pages_needed(lens, HEADS.page_size) <= POOL_PAGES);
        let huge = c.iter().find(|c| c.shape == "batch 256 L 32768").unwrap();
        assert!(huge.note.ends_with("pages shared (a pool of 12288)"), "{}", huge.note);
    }
}
