//! ceilings/smem_bandwidth — shared-memory bandwidth.
//!
//! What it does: each thread owns one 16-byte slot of a block-sized shared array and, `ITERS`
//! times, reads a slot and writes it back incremented, walking `UNROLL` slots 32 apart so a
//! warp's 32 accesses cover 512 contiguous bytes: conflict-free (4 wavefronts per warp access,
//! the hardware minimum for 16-byte accesses). Volatile PTX keeps every access.
//!
//! Thread mapping: thread `t` of the block touches slots `(t + 32k) mod BLOCK_THREADS`.
//!
//! Memory traffic: `2 * 16 * UNROLL * ITERS` shared bytes per thread; no DRAM to speak of.
//!
//! Expected bound: shared-memory bandwidth (128 bytes per clock per SM).

pub const BLOCK_THREADS: u32 = 1024;
pub const BLOCKS_PER_SM: u32 = 2;
pub const UNROLL: u32 = 8;
/// Dynamic shared memory per block: one 16-byte slot per thread.
pub const SHARED_BYTES: u32 = BLOCK_THREADS * 16;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::vector::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, smem, sync_threads, thread};

crate::kernel! {
    /// `iters` rounds of read-increment-write over the block's shared slots.
    pub unsafe fn ceilings_smem_bandwidth(iters: u32, out: *mut f32) {
        let t = thread::thread_idx_x();
        let base = smem::shared_addr(shared::dynamic_shared_mem::<F32x4>());
        // SAFETY: (whole body) every address is base + 16 * (slot < BLOCK_THREADS), inside
        // the SHARED_BYTES the host launches with; `out` holds one f32 per thread.
        unsafe {
            smem::store_f32x4(base + 16 * t, F32x4([t as f32, 1.0, 2.0, 3.0]));
            sync_threads();
            for _ in 0..iters {
                for k in 0..UNROLL {
                    let a = base + 16 * ((t + 32 * k) & (BLOCK_THREADS - 1));
                    let mut v = smem::load_f32x4(a);
                    v.0[0] += 1.0;
                    smem::store_f32x4(a, v);
                }
            }
            sync_threads();
            let v = smem::load_f32x4(base + 16 * t);
            *out.add(thread::index_1d() as usize) = v.0[0] + v.0[3];
        }
    }
}
