//! fused_elementwise: FLOPs and the fewest bytes the chain must move, and each variant's
//! modelled traffic.

use rooflab_kernels::fused_elementwise::v01_unfused;

use super::launch::Variant;
use crate::cost::{Bytes, Cost, Flops};
use crate::tensor::Dtype;

/// FLOPs per element counted: fma 2, GELU 8 (the polynomial, the scaling and the final
/// product; the exp counted as one), the residual add 1.
pub const FLOPS_PER_ELEMENT: u64 = 11;

/// x and residual read, y written, scale and bias read once.
pub fn cost(dt: Dtype, rows: u64, cols: u64) -> Cost {
    let n = rows * cols;
    Cost::new(Flops(FLOPS_PER_ELEMENT * n), dt.bytes(3 * n + 2 * cols))
}

impl Variant {
    /// Modelled traffic: v01 moves 9 elements per element (see its header) plus the two
    /// per-column vectors; the fused variants the minimum.
    pub fn modelled_bytes(self, dt: Dtype, rows: u64, cols: u64) -> Bytes {
        match self {
            Variant::V01Unfused => dt.bytes(v01_unfused::PASSES * rows * cols + 2 * cols),
            _ => cost(dt, rows, cols).min_bytes,
        }
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cost_model_counts_bytes_exactly() {
        // 2 x 3 f32: x, residual, y = 18 elements, scale + bias = 6 -> 24 * 4 bytes.
        assert_eq!(cost(Dtype::F32, 2, 3).min_bytes, Bytes(96));
        assert_eq!(cost(Dtype::Bf16, 2, 3).min_bytes, Bytes(48));
        // v01: 9 passes of 6 elements + 6 = 60 elements.
        assert_eq!(
            Variant::V01Unfused.modelled_bytes(Dtype::F32, 2, 3),
            Bytes(240)
        );
        let (m1, m3) = (
            Variant::V01Unfused
                .modelled_bytes(Dtype::F32, 16384, 4096)
                .0 as f64,
            Variant::V03FusedVectorized
                .modelled_bytes(Dtype::F32, 16384, 4096)
                .0 as f64,
        );
        assert!((m1 / m3 - 3.0).abs() < 1e-3, "predicted ratio {}", m1 / m3);
    }
}
