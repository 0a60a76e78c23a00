//! memory/v05_particles_aos — particle update, array-of-structs layout.
//!
//! Changed from v04: a different op on purpose: `pos += vel * dt` over particles stored as
//! an array of 32-byte `Particle` structs (pos, vel, mass, charge). Same arithmetic as
//! v06; only the layout differs.
//!
//! Thread mapping: one particle a thread; thread `i` reads the six floats of struct `i`.
//!
//! Memory traffic: each struct's 32 bytes sit in one 32-byte sector, so DRAM reads the
//! whole struct (mass and charge included, 8 bytes never used) and writes back the sector
//! holding `pos`: 32 read + 32 written per particle, against 24 + 12 useful.
//! Every warp load instruction also touches 32 sectors (stride 32 bytes), leaning on L1.
//!
//! Expected bound: DRAM, at about 36/64 of the SoA speed.

use super::PARTICLE_F32S;

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread};

crate::kernel! {
    /// `p[i].pos += p[i].vel * dt` for `n` particles stored as `n * PARTICLE_F32S` f32.
    pub unsafe fn memory_v05_particles_aos(
        particles: *mut f32,
        n: u64,
        dt: f32,
    ) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n and the buffer holds n structs.
            unsafe {
                let p = particles.add(i as usize * PARTICLE_F32S);
                for k in 0..3 {
                    *p.add(k) = math::fma(*p.add(3 + k), dt, *p.add(k));
                }
            }
        }
    }
}

const _: () = assert!(PARTICLE_F32S == 8);
