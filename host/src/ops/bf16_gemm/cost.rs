//! bf16_gemm: FLOPs and the fewest bytes a product must move, from the shape.

use super::launch::Dims;
use crate::cost::{Bytes, Cost, Flops, Precision};

/// `y = x·Wᵀ`: 2·M·N·K FLOPs done in `precision`; x (M·K) and W (N·K) read once and y (M·N)
/// written once, 2 bytes each. At small M the weight bytes N·K dominate and the intensity is
/// about M FLOP/B, far below any compute ridge: the model itself calls those shapes
/// memory-bound (the weight-streaming step's regime).
pub fn bf16_gemm_cost(d: Dims, precision: Precision) -> Cost {
    let (m, n, k) = (d.m as u64, d.n as u64, d.k as u64);
    Cost::new(
        Flops(2 * m * n * k),
        Bytes::of::<u16>(m * k + n * k + m * n),
    )
    .with_precision(precision)
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cost_model_hand_computed() {
        // 2x3x4: 48 FLOPs; x 8 + W 12 + y 6 elements of 2 bytes = 52 bytes.
        let c = bf16_gemm_cost(Dims::new(2, 3, 4), Precision::Bf16Tensor);
        assert_eq!(
            c,
            Cost::new(Flops(48), Bytes(52)).with_precision(Precision::Bf16Tensor)
        );
        assert_eq!(c.modelled_bytes, c.min_bytes);
        // 4096^3: 2·4096^3 FLOPs over 3·4096^2·2 bytes: AI = 4096/3 ≈ 1365 FLOP/B.
        let c = bf16_gemm_cost(Dims::new(4096, 4096, 4096), Precision::Bf16Tensor);
        assert_eq!(c.flops, Flops(2 * (1 << 36)));
        assert_eq!(c.min_bytes, Bytes(6 * (1 << 24)));
        assert!((c.intensity() - 4096.0 / 3.0).abs() < 1e-9);
        // A GEMV (M = 1, N = K = 8192): AI just under 1 FLOP/B, memory-bound on any GPU.
        let c = bf16_gemm_cost(Dims::new(1, 8192, 8192), Precision::Fp32Simt);
        assert_eq!(c.precision, Precision::Fp32Simt);
        assert_eq!(c.min_bytes, Bytes(2 * (8192 + 8192 * 8192 + 8192)));
        assert!(c.intensity() < 1.0 && c.intensity() > 0.99);
        // M = 8: AI ≈ 8, still below the FP32 ridge (~15 on an H200) and far below BF16's.
        let c = bf16_gemm_cost(Dims::new(8, 28672, 8192), Precision::Fp32Simt);
        assert!(c.intensity() > 7.9 && c.intensity() < 8.0);
    }
}
