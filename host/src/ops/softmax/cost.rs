//! softmax: FLOPs and the fewest bytes softmax must move, and each variant's modelled
//! traffic.

use rooflab_kernels::softmax::v01_three_kernels;

use super::launch::Variant;
use crate::cost::{Bytes, Cost, Flops};
use crate::tensor::Dtype;

/// One read of x, one write of y. FLOPs per element: max 1, sub+mul+exp 3, sum 1, scale 1.
pub fn cost(dt: Dtype, rows: u64, cols: u64) -> Cost {
    Cost::new(Flops(6 * rows * cols), dt.bytes(2 * rows * cols))
}

impl Variant {
    /// Modelled DRAM traffic: v01 reads x three times (plus its 2 x rows statistics written
    /// and read); v02-v04 are modelled at the minimum (their re-reads of a row hit cache for
    /// the rows benched); v05 to v08 read each row once by construction (registers, or
    /// v07's cluster shared memory) and write it once: the minimum; v09 reads each row twice,
/// the second time from L2 (its hints keep the resident rows there), so DRAM sees the
/// minimum too.
    pub fn modelled(self, dt: Dtype, rows: u64, cols: u64) -> Cost {
        let base = cost(dt, rows, cols);
        match self {
            Variant::V01ThreeKernels => base.with_modelled(
                dt.bytes(v01_three_kernels::PASSES * rows * cols) + Bytes(4 * 4 * rows),
            ),
            Variant::V02BlockPerRow | Variant::V03Online | Variant::V04WarpPerRow => base,
            Variant::V05RowInRegisters
            | Variant::V06RowsPerWarp
            | Variant::V07ClusterRow
            | Variant::V08ClusterRegisters
            | Variant::V09L2Reread => {
                base.with_modelled(dt.bytes(2 * rows * cols))
            }
        }
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn cost_model() {
        assert_eq!(cost(Dtype::F32, 2, 3).min_bytes.0, 48);
        let v01 = Variant::V01ThreeKernels.modelled(Dtype::F32, 16384, 4096);
        let ratio = v01.modelled_bytes.0 as f64 / v01.min_bytes.0 as f64;
        assert!((ratio - 2.0).abs() < 1e-3, "{ratio}");
        // The one-read steps: 1 read + 1 write, the minimum.
        for (v, rows, cols) in [
            (Variant::V06RowsPerWarp, 262144, 128),
            (Variant::V07ClusterRow, 2048, 32768),
            (Variant::V07ClusterRow, 256, 262144),
            (Variant::V08ClusterRegisters, 2048, 32768),
            (Variant::V09L2Reread, 2048, 32768),
        ] {
            for dt in Dtype::ALL {
                let c = v.modelled(dt, rows, cols);
                assert_eq!(c.modelled_bytes.0, 2 * rows * cols * dt.size(), "{v:?}");
                assert_eq!(c.modelled_bytes, c.min_bytes);
            }
        }
    }
}
