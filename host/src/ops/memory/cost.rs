//! memory: FLOPs and the fewest bytes each op must move, from the shape.

use rooflab_kernels::memory::PARTICLE_F32S;

use crate::cost::{Bytes, Cost, Flops};

/// Copy: no FLOPs, `n` f32 read and `n` written.
pub fn copy_cost(n: u64) -> Cost {
    Cost::new(Flops(0), Bytes::of::<f32>(2 * n))
}

/// saxpy: one FMA (2 FLOPs) per element; x and y read, y written.
pub fn saxpy_cost(n: u64) -> Cost {
    Cost::new(Flops(2 * n), Bytes::of::<f32>(3 * n))
}

/// Particle update: three FMAs; 6 f32 read, 3 written per particle at best (SoA).
pub fn particles_cost(n: u64) -> Cost {
    Cost::new(Flops(6 * n), Bytes::of::<f32>(9 * n))
}

/// AoS moves the whole 32-byte struct in and the sector holding `pos` out.
pub fn particles_aos_modelled(n: u64) -> Bytes {
    Bytes::of::<f32>(2 * PARTICLE_F32S as u64 * n)
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::ops::memory::launch::{Op, Variant};

    #[test]
    fn cost_model_hand_computed() {
        // 1000 f32 copied: 4000 bytes read + 4000 written, no FLOPs.
        assert_eq!(copy_cost(1000), Cost::new(Flops(0), Bytes(8000)));
        // saxpy: 2 FLOPs/element, 12 bytes/element.
        assert_eq!(saxpy_cost(1000), Cost::new(Flops(2000), Bytes(12000)));
        // particles: 6 FLOPs, 36 bytes; AoS modelled 64 bytes.
        assert_eq!(particles_cost(10), Cost::new(Flops(60), Bytes(360)));
        assert_eq!(particles_aos_modelled(10), Bytes(640));
        // Strided copy: the factors ncu measured on the H200 (3.0x, 12.0x, 16.0x the minimum
        // at strides 2, 8, 32), 1x at stride 1; saxpy by the same rules.
        let min = copy_cost(1000).min_bytes;
        let copy = |s: u32| Variant::V01Strided { stride: s }.modelled_bytes(Op::Copy, min);
        assert_eq!(copy(1), min);
        assert_eq!(copy(2), Bytes(24000));
        assert_eq!(copy(4), Bytes(48000));
        assert_eq!(copy(8), Bytes(96000));
        assert_eq!(copy(16), Bytes(128000));
        assert_eq!(copy(32), Bytes(128000));
        let smin = saxpy_cost(1000).min_bytes;
        let saxpy = |s: u32| Variant::V01Strided { stride: s }.modelled_bytes(Op::Saxpy, smin);
        assert_eq!(saxpy(1), smin);
        assert_eq!(saxpy(32), Bytes(12000 * 40 / 3));
        assert_eq!(Variant::V02Coalesced.modelled_bytes(Op::Copy, min), min);
    }
}
