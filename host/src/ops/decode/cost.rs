//! decode: FLOPs and the fewest bytes a decode step must move, from the context lengths,
//! and each variant's modelled traffic.

use super::launch::{DecodeShape, Variant};
use crate::cost::{Bytes, Cost, Flops};

/// The bytes of the cache a step must read: the K and V rows the contexts need (each KV
/// head's, once), the block-table entries used and the lengths (the copy-only probe's cost).
pub fn cache_bytes(s: &DecodeShape, lens: &[u32]) -> Bytes {
    let keys: u64 = lens.iter().map(|&l| l as u64).sum();
    let pages: u64 = lens
        .iter()
        .map(|&l| (l as u64).div_ceil(s.page_size as u64))
        .sum();
    Bytes::of::<u16>(2 * keys * s.hkv as u64 * s.dim as u64) + Bytes::of::<u32>(pages + lens.len() as u64)
}

/// 4·D FLOPs per (query head, key); bytes: [`cache_bytes`], plus q read and out written.
pub fn cost(s: &DecodeShape, lens: &[u32]) -> Cost {
    let keys: u64 = lens.iter().map(|&l| l as u64).sum();
    Cost::new(
        Flops(4 * s.dim as u64 * s.hq as u64 * keys),
        cache_bytes(s, lens) + Bytes::of::<u16>(2 * s.q_elements() as u64),
    )
}

impl Variant {
    /// v01 reads each KV head's rows once per query head of its group (the extra reads may
    /// hit L2; the model counts them as DRAM traffic, the worst case).
    pub fn modelled(self, s: &DecodeShape, lens: &[u32]) -> Cost {
        let base = cost(s, lens);
        match self {
            Variant::V01BlockPerHead => {
                let keys: u64 = lens.iter().map(|&l| l as u64).sum();
                let extra = ((s.hq / s.hkv) as u64 - 1) * 2 * keys * s.hkv as u64 * s.dim as u64;
                base.with_modelled(base.min_bytes + Bytes::of::<u16>(extra))
            }
            // v03's partial rows (B·Hq·splits·(D + 2) f32, written and read) depend on the
            // GPU's SM count and are a fraction of a percent of the KV bytes: not modelled.
            Variant::V02GqaGrouped | Variant::V03SplitK => base,
            // A KV head is read once per chunk of its query heads: up to 8 (v04, v06-v10), 16 (v05).
            Variant::V04VectorizedPipeline
            | Variant::V05MmaHeads
            | Variant::V06KeysAsRows
            | Variant::V07FusedCombine
            | Variant::V08StreamK
            | Variant::V09BulkCopy
            | Variant::V10TmaPages
            | Variant::V11OneRoundCombine => {
                let group = (s.hq / s.hkv) as u32;
                let (gc, _) = self.pipeline_block(s.dim, group);
                let chunks = group.div_ceil(gc) as u64;
                let keys: u64 = lens.iter().map(|&l| l as u64).sum();
                let extra = (chunks - 1) * 2 * keys * s.hkv as u64 * s.dim as u64;
                base.with_modelled(base.min_bytes + Bytes::of::<u16>(extra))
            }
        }
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cost_by_hand() {
        let s = DecodeShape {
            batch: 2,
            hq: 4,
            hkv: 2,
            dim: 64,
            page_size: 16,
            num_pages: 4,
            max_pages: 2,
        };
        let c = cost(&s, &[17, 1]);
        assert_eq!(c.flops, Flops(4 * 64 * 4 * 18));
        // K and V: 18 keys × 2 heads × 64 × 2 B each; q and out 2·4·64·2 B; 3 pages + 2 lens.
        assert_eq!(c.min_bytes, Bytes(2 * 18 * 2 * 64 * 2 + 2 * 2 * 4 * 64 * 2 + 4 * 5));
        let m = Variant::V01BlockPerHead.modelled(&s, &[17, 1]);
        assert_eq!(m.modelled_bytes, Bytes(c.min_bytes.0 + 2 * 18 * 2 * 64 * 2));
    }
}
