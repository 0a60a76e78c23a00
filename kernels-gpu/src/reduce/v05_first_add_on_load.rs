//! reduce/v05_first_add_on_load — each thread adds two elements while loading.
//!
//! Changed from v04: a block covers `2 · BLOCK_THREADS` elements; thread `tid` loads
//! `x[base + tid]` and `x[base + tid + BLOCK_THREADS]` and stores their sum in shared memory.
//! Half the blocks, no thread idle in the first add, two loads in flight per thread, and
//! `⌈log_512 n⌉` passes (4 at 2^28: 2^28 → 2^19 → 2^10 → 2 → 1).
//!
//! Thread mapping: two elements per thread (0 past the end), one block sum per block.
//!
//! Memory traffic: the minimum read, plus the partials of each pass (as v02); `BLOCK_THREADS · 4`
//! bytes of shared memory per block.
//!
//! Expected bound: closer to DRAM, still held back by the `log2(BLOCK_THREADS)` barrier
//! steps of the tree, most with few active warps.

/// Threads per block; a power of two. A block sums `2 · BLOCK_THREADS` elements.
pub const BLOCK_THREADS: u32 = 256;
/// Elements per block.
pub const ELEMS_PER_BLOCK: u64 = 2 * BLOCK_THREADS as u64;
/// Dynamic shared memory per block, in bytes.
pub const SHARED_BYTES: u32 = BLOCK_THREADS * 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, sync_threads, thread};

crate::kernel! {
    /// `partials[b] = Σ` of block `b`'s elements of `x[0..n]`.
    pub unsafe fn reduce_v05_first_add_on_load(
        x: *const f32,
        n: u64,
        partials: *mut f32,
    ) {
        let sdata = shared::dynamic_shared_mem::<f32>();
        let tid = thread::thread_idx_x();
        let i = thread::block_idx_x() as u64 * ELEMS_PER_BLOCK + tid as u64;
        let j = i + BLOCK_THREADS as u64;
        // SAFETY: (whole body) both reads are guarded by `< n`; shared offsets stay below
        // BLOCK_THREADS; `partials` holds one f32 per block.
        unsafe {
            let a = if i < n { *x.add(i as usize) } else { 0.0 };
            let b = if j < n { *x.add(j as usize) } else { 0.0 };
            *sdata.add(tid as usize) = a + b;
            sync_threads();
            let mut s = BLOCK_THREADS / 2;
            while s > 0 {
                if tid < s {
                    *sdata.add(tid as usize) += *sdata.add((tid + s) as usize);
                }
                sync_threads();
                s /= 2;
            }
            if tid == 0 {
                *partials.add(thread::block_idx_x() as usize) = *sdata;
            }
        }
    }
}
