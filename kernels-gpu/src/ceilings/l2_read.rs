//! ceilings/l2_read — L2 bandwidth.
//!
//! What it does: every thread of a machine-filling grid reads a buffer that fits well inside
//! the L2 (the host sizes it from the device's L2 size) `ITERS` times with 16-byte
//! `ld.global.cg` loads (cached in L2, not L1), `UNROLL` loads in flight, and sums what it
//! reads so the loads cannot be removed; one f32 per thread is written at the end.
//!
//! Thread mapping: grid-stride over the buffer's 16-byte vectors.
//!
//! Memory traffic: `ITERS * buffer` bytes from L2; DRAM only for the first pass.
//!
//! Expected bound: L2 bandwidth (several times DRAM).

pub const BLOCK_THREADS: u32 = 512;
pub const BLOCKS_PER_SM: u32 = 4;
/// Passes over the buffer per launch.
pub const ITERS: u32 = 32;
pub const UNROLL: u64 = 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{thread, vector};

crate::kernel! {
    /// Sum `iters` passes over `vectors` 16-byte vectors at `buf` into `out[thread]`.
    pub unsafe fn ceilings_l2_read(
        buf: *const f32,
        vectors: u64,
        iters: u32,
        out: *mut f32,
    ) {
        let t = thread::index_1d();
        let step = thread::grid_stride_1d();
        let mut acc = [0.0f32; UNROLL as usize];
        for _ in 0..iters {
            let mut v = t;
            // SAFETY: every vector index stays below `vectors` (loop bounds).
            unsafe {
                while v + (UNROLL - 1) * step < vectors {
                    for k in 0..UNROLL as usize {
                        let x =
                            vector::load_f32x4_cg(buf.add(4 * (v + k as u64 * step) as usize)).0;
                        acc[k] += (x[0] + x[1]) + (x[2] + x[3]);
                    }
                    v += UNROLL * step;
                }
                while v < vectors {
                    let x = vector::load_f32x4_cg(buf.add(4 * v as usize)).0;
                    acc[0] += (x[0] + x[1]) + (x[2] + x[3]);
                    v += step;
                }
            }
        }
        // SAFETY: the host allocates one f32 per launched thread.
        unsafe { *out.add(t as usize) = (acc[0] + acc[1]) + (acc[2] + acc[3]) };
    }
}
