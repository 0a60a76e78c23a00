//! transpose: FLOPs and the fewest bytes it must move, from the shape, and what each
//! variant is modelled to move.

use super::launch::Variant;
use crate::cost::{Bytes, Cost, Flops};

/// No FLOPs; `m·n` f32 read and `m·n` written.
pub fn cost(m: u64, n: u64) -> Cost {
    Cost::new(Flops(0), Bytes::of::<f32>(2 * m * n))
}

/// The DRAM bytes every variant moves: the minimum, v01 included. v01's stores write a
/// 32-byte sector per 4-byte element (32 sectors per warp-wide request), but L2 merges the
/// partial sectors of neighbouring warps before they reach DRAM: ncu on the H200 counted
/// 538 MiB of DRAM traffic at 8192² against 512 MiB minimum (1.05×). v01's cost is in the
/// L1/L2 request traffic, which a DRAM-bytes model does not charge (chapter 02).
pub fn modelled_bytes(_v: Variant, m: u64, n: u64) -> Bytes {
    cost(m, n).min_bytes
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cost_model_hand_computed() {
        assert_eq!(
            cost(8192, 8192),
            Cost::new(Flops(0), Bytes(2 * 4 * 8192 * 8192))
        );
        assert_eq!(cost(3, 5).min_bytes, Bytes(120));
        assert_eq!(modelled_bytes(Variant::V01Naive, 3, 5), Bytes(120));
        assert_eq!(modelled_bytes(Variant::V03Padded, 3, 5), Bytes(120));
    }
}
