//! transpose: FLOPs and the fewest bytes it must move, from the shape, and what each
//! variant is modelled to move.

use super::launch::Variant;
use crate::cost::{Bytes, Cost, Flops};

/// No FLOPs; `m·n` f32 read and `m·n` written.
pub fn cost(m: u64, n: u64) -> Cost {
    Cost::new(Flops(0), Bytes::of::<f32>(2 * m * n))
}

/// v01's writes: one 32-byte sector per 4-byte element at worst (when the output's rows are
/// far apart and L2 cannot merge neighbouring warps' partial sectors), i.e. 8× the writes.
pub fn modelled_bytes(v: Variant, m: u64, n: u64) -> Bytes {
    match v {
        Variant::V01Naive => Bytes::of::<f32>(m * n) + Bytes::of::<f32>(m * n) * 8,
        _ => cost(m, n).min_bytes,
    }
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
        assert_eq!(modelled_bytes(Variant::V01Naive, 3, 5), Bytes(60 + 480));
        assert_eq!(modelled_bytes(Variant::V03Padded, 3, 5), Bytes(120));
    }
}
