//! reduce: FLOPs and the fewest bytes a sum must move, from the length, and what each
//! variant is modelled to move.

use super::launch::{Variant, pass_lengths};
use crate::cost::{Bytes, Cost, Flops};

/// `n` adds; `n` f32 read, one written.
pub fn cost(n: u64) -> Cost {
    Cost::new(Flops(n), Bytes::of::<f32>(n + 1))
}

/// What a variant moves beyond the minimum: the multi-pass variants write every pass's
/// partials and read them back; v07's partials are a few KiB and left out.
pub fn modelled_bytes(v: Variant, n: u64) -> Bytes {
    let extra = if v.multi_pass() {
        2 * pass_lengths(v, n)[1..].iter().sum::<u64>()
    } else {
        0
    };
    cost(n).min_bytes + Bytes::of::<f32>(extra)
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cost_model_hand_computed() {
        assert_eq!(cost(1000), Cost::new(Flops(1000), Bytes(4004)));
        assert_eq!(cost(1 << 28).min_bytes, Bytes((1 << 30) + 4));
        // 1000 elements, 256 per block: 4 partials written and read back.
        assert_eq!(
            modelled_bytes(Variant::V04TreeSequential, 1000),
            Bytes(4004 + 32)
        );
        // v03 moves what v02 does: the same blocks, the same passes.
        assert_eq!(
            modelled_bytes(Variant::V03StridedIndex, 1 << 28),
            modelled_bytes(Variant::V02TreeDivergent, 1 << 28)
        );
        assert_eq!(modelled_bytes(Variant::V01Atomic, 1000), Bytes(4004));
    }
}
