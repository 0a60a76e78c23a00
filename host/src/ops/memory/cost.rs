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
    use crate::ops::memory::launch::Variant;

    #[test]
    fn cost_model_hand_computed() {
        // 1000 f32 copied: 4000 bytes read + 4000 written, no FLOPs.
        assert_eq!(copy_cost(1000), Cost::new(Flops(0), Bytes(8000)));
        // saxpy: 2 FLOPs/element, 12 bytes/element.
        assert_eq!(saxpy_cost(1000), Cost::new(Flops(2000), Bytes(12000)));
        // particles: 6 FLOPs, 36 bytes; AoS modelled 64 bytes.
        assert_eq!(particles_cost(10), Cost::new(Flops(60), Bytes(360)));
        assert_eq!(particles_aos_modelled(10), Bytes(640));
        // Strided: 8x the bytes from stride 8 on, stride x below.
        let min = copy_cost(1000).min_bytes;
        assert_eq!(
            Variant::V01Strided { stride: 32 }.modelled_bytes(min),
            Bytes(64000)
        );
        assert_eq!(
            Variant::V01Strided { stride: 2 }.modelled_bytes(min),
            Bytes(16000)
        );
        assert_eq!(Variant::V02Coalesced.modelled_bytes(min), min);
    }
}
