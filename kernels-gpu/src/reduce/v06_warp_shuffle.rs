//! reduce/v06_warp_shuffle — the last six steps in registers, with warp shuffles.
//!
//! Changed from v05: the shared-memory tree stops when 64 partial sums remain; warp 0 adds
//! `sdata[tid] + sdata[tid + 32]` and finishes with a butterfly of `shfl.sync.bfly` (5
//! steps): no shared memory and no barrier for the final warp, which in v05 cost six
//! barrier rounds with almost every thread idle.
//!
//! Thread mapping: as v05: two elements per thread, `2 · BLOCK_THREADS` per block.
//!
//! Memory traffic: the minimum read, plus the partials of each pass (as v02); `BLOCK_THREADS · 4`
//! bytes of shared memory per block.
//!
//! Expected bound: nearer DRAM; what is left is one block per `2 · BLOCK_THREADS` elements
//! (a million short blocks at 2^28) and only two loads in flight per thread.

use crate::reduce::v05_first_add_on_load;

/// Threads per block; a power of two, at least 64.
pub const BLOCK_THREADS: u32 = 256;
/// Elements per block.
pub const ELEMS_PER_BLOCK: u64 = 2 * BLOCK_THREADS as u64;
/// Dynamic shared memory per block, in bytes.
pub const SHARED_BYTES: u32 = BLOCK_THREADS * 4;
/// Partial sums left when the shared-memory tree hands over to warp 0.
pub const WARP_HANDOVER: u32 = 64;

const _: () = assert!(BLOCK_THREADS >= WARP_HANDOVER && BLOCK_THREADS.is_power_of_two());
// v06 keeps v05's load step so the two rows differ only in the tail.
const _: () = assert!(ELEMS_PER_BLOCK == v05_first_add_on_load::ELEMS_PER_BLOCK);

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, sync_threads, thread, warp};

crate::kernel! {
    /// `partials[b] = Σ` of block `b`'s elements of `x[0..n]`.
    pub unsafe fn reduce_v06_warp_shuffle(
        x: *const f32,
        n: u64,
        partials: *mut f32,
    ) {
        let sdata = shared::dynamic_shared_mem::<f32>();
        let tid = thread::thread_idx_x();
        let i = thread::block_idx_x() as u64 * ELEMS_PER_BLOCK + tid as u64;
        let j = i + BLOCK_THREADS as u64;
        // SAFETY: (whole body) reads guarded by `< n`; shared offsets < BLOCK_THREADS;
        // `partials` holds one f32 per block.
        unsafe {
            let a = if i < n { *x.add(i as usize) } else { 0.0 };
            let b = if j < n { *x.add(j as usize) } else { 0.0 };
            *sdata.add(tid as usize) = a + b;
            sync_threads();
            let mut s = BLOCK_THREADS / 2;
            while s >= WARP_HANDOVER {
                if tid < s {
                    *sdata.add(tid as usize) += *sdata.add((tid + s) as usize);
                }
                sync_threads();
                s /= 2;
            }
            // Warp 0 as a whole (all 32 lanes active, as the shuffles require).
            if tid < warp::WARP_SIZE {
                let v = *sdata.add(tid as usize) + *sdata.add((tid + warp::WARP_SIZE) as usize);
                let total = warp::sum_f32(v);
                if tid == 0 {
                    *partials.add(thread::block_idx_x() as usize) = total;
                }
            }
        }
    }
}
