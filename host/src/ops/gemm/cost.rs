//! gemm: FLOPs and the fewest bytes a product must move, from the shape.

use super::launch::Dims;
use crate::cost::{Bytes, Cost, Flops};

/// 2·M·N·K FLOPs; A, B read once and C written once, plus C read when `beta != 0`.
pub fn gemm_cost(d: Dims, reads_c: bool) -> Cost {
    let (m, n, k) = (d.m as u64, d.n as u64, d.k as u64);
    let c_words = if reads_c { 2 * m * n } else { m * n };
    Cost::new(
        Flops(2 * m * n * k),
        Bytes::of::<f32>(m * k + k * n + c_words),
    )
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cost_model_hand_computed() {
        // 2x3x4: 48 FLOPs; A 8 + B 12 + C 6 words = 104 bytes; +6 words read with beta.
        let d = Dims::new(2, 3, 4);
        assert_eq!(gemm_cost(d, false), Cost::new(Flops(48), Bytes(104)));
        assert_eq!(gemm_cost(d, true), Cost::new(Flops(48), Bytes(128)));
    }
}
