//! norm: FLOPs and the fewest bytes a normalization must move, and each variant's modelled
//! traffic.

use rooflab_kernels::norm::v01_two_pass;

use super::launch::{Kind, Variant};
use crate::cost::{Bytes, Cost, Flops};
use crate::tensor::Dtype;

/// x read, y written, weight (and bias) read once. FLOPs per element: LayerNorm 8 (sum,
/// deviation, square-add, normalize, scale, shift), RMSNorm 5.
pub fn cost(k: Kind, dt: Dtype, rows: u64, cols: u64) -> Cost {
    let (f, params) = match k {
        Kind::LayerNorm => (8, 2),
        Kind::RmsNorm => (5, 1),
    };
    Cost::new(
        Flops(f * rows * cols),
        dt.bytes(2 * rows * cols + params * cols),
    )
}

impl Variant {
    /// v01 reads x 3 (LayerNorm) or 2 (RMSNorm) times and writes y, plus mean and rstd
    /// (written, read back); the fused variants are modelled at the minimum.
    pub fn modelled(self, k: Kind, dt: Dtype, rows: u64, cols: u64) -> Cost {
        let base = cost(k, dt, rows, cols);
        match self {
            Variant::V01TwoPass => {
                let passes = match k {
                    Kind::LayerNorm => v01_two_pass::PASSES.0,
                    Kind::RmsNorm => v01_two_pass::PASSES.1,
                };
                let params = if k == Kind::LayerNorm { 2 } else { 1 };
                base.with_modelled(
                    dt.bytes(passes * rows * cols + params * cols) + Bytes(16 * rows),
                )
            }
            _ => base,
        }
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cost_model() {
        assert_eq!(
            cost(Kind::LayerNorm, Dtype::F32, 2, 3).min_bytes,
            Bytes(4 * (12 + 6))
        );
        assert_eq!(
            cost(Kind::RmsNorm, Dtype::Bf16, 2, 3).min_bytes,
            Bytes(2 * (12 + 3))
        );
        let m = Variant::V01TwoPass.modelled(Kind::LayerNorm, Dtype::F32, 16384, 4096);
        assert!((m.modelled_bytes.0 as f64 / m.min_bytes.0 as f64 - 2.0).abs() < 1e-2);
    }
}
