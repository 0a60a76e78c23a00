//! attention: FLOPs and the fewest bytes prefill attention must move, from the shape, and
//! each variant's modelled traffic.

use super::launch::{Attn, Variant};
use crate::cost::{Bytes, Cost, Flops, Precision};

/// (query, key) pairs a head scores: S², or S(S+1)/2 under the causal mask.
pub fn pairs(a: &Attn) -> u64 {
    let s = a.seq as u64;
    if a.causal {
        s.saturating_mul(s + 1) / 2
    } else {
        s.saturating_mul(s)
    }
}

/// 4·D FLOPs per scored pair (2·D for q·k, 2·D for p·v), the convention FlashAttention's
/// papers and PyTorch's benchmarks use; Q, K, V read and O written once, bf16. The
/// arithmetic of v01-v02 is f32 on the CUDA cores: the FP32 roof (v03's is on the tensor
/// cores: [`Variant::modelled`] sets the BF16 tensor roof).
pub fn cost(a: &Attn) -> Cost {
    Cost::new(
        // Saturating: the bench builds costs before the shape checks refuse absurd sizes.
        Flops((4 * a.dim as u64 * a.bh() as u64).saturating_mul(pairs(a))),
        Bytes::of::<u16>(4 * a.elements() as u64),
    )
    .with_precision(Precision::Fp32Simt)
}

impl Variant {
    /// v01 adds the scores' round trips: written, read and written (softmax in place), read:
    /// 16 bytes per score, all S² of them (the masked ones are written too). v03 does the
    /// same FLOPs on the tensor cores (`mma.sync` bf16): the BF16 tensor roof. (Its P·V runs
    /// twice, P as bf16 hi + lo, but the count is the op's 4·D per pair, as for every
    /// step and for PyTorch's figures.)
    pub fn modelled(self, a: &Attn) -> Cost {
        let base = cost(a);
        match self {
            Variant::V01Naive => base
                .with_modelled(
                    base.min_bytes
                        + Bytes(
                            (16 * a.bh() as u64)
                                .saturating_mul((a.seq as u64).saturating_mul(a.seq as u64)),
                        ),
                )
                .with_scratch(Bytes(self.scratch_bytes(a))),
            Variant::V02FusedSimt => base,
            Variant::V03FlashMma | Variant::V04FlashWgmma => base.with_precision(Precision::Bf16Tensor),
        }
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cost_by_hand() {
        let a = Attn::new(1, 2, 3, 64, false);
        // 4·64·2·9 FLOPs; 4 tensors of 2·3·64 bf16.
        assert_eq!(cost(&a).flops, Flops(4 * 64 * 2 * 9));
        assert_eq!(cost(&a).min_bytes, Bytes(4 * 2 * 3 * 64 * 2));
        let c = Attn { causal: true, ..a };
        assert_eq!(cost(&c).flops, Flops(4 * 64 * 2 * 6));
        assert_eq!(
            Variant::V01Naive.modelled(&a).modelled_bytes,
            Bytes(4 * 2 * 3 * 64 * 2 + 16 * 2 * 9)
        );
        // v01 holds the scores (4 B each); v02 nothing beyond Q, K, V, O.
        assert_eq!(Variant::V01Naive.modelled(&a).scratch_bytes, Bytes(4 * 2 * 9));
        assert_eq!(Variant::V02FusedSimt.modelled(&a).scratch_bytes, Bytes(0));
        // v03: the same FLOPs and bytes, against the BF16 tensor roof.
        let v3 = Variant::V03FlashMma.modelled(&c);
        assert_eq!((v3.flops, v3.min_bytes), (cost(&c).flops, cost(&c).min_bytes));
        assert_eq!(v3.precision, Precision::Bf16Tensor);
        assert_eq!(Variant::V02FusedSimt.modelled(&a).precision, Precision::Fp32Simt);
    }
}
