//! reduce/v02_tree_divergent — a shared-memory tree, interleaved addressing.
//!
//! Changed from v01: no atomics. Each block sums its `BLOCK_THREADS` elements in shared
//! memory and writes the result to `partials[blockIdx]`; the host launches the same kernel
//! on the partials until one value is left (`⌈log_256 n⌉` launches: 4 at 2^28, the last one
//! writing `*out`). A fixed tree, so the result is the same every run. The tree uses
//! interleaved addressing: at step `s` (1, 2, 4, ...) thread `tid` adds `sdata[tid + s]` into
//! `sdata[tid]` when `tid % (2s) == 0`. Active threads are scattered over every warp, so
//! warps diverge (half their lanes idle at s = 1, 31 of 32 by s = 16) and every thread
//! evaluates the test at every step. No bank conflicts, though: a warp's active lanes read
//! `sdata[tid]` and `sdata[tid + s]` for tid a multiple of 2s inside one 32-word span, all
//! distinct banks (ncu on the H200: ~1.6 conflicts per block, from the partial loads).
//! v03 (Harris's strided-index step) indexes `2·s·tid` instead and trades the divergence for
//! bank conflicts.
//!
//! Thread mapping: one element per thread (0 past the end), one block sum per block.
//!
//! Memory traffic: the minimum read, plus each pass's partials written and read again (about
//! `n / BLOCK_THREADS` floats, 0.4% more); `BLOCK_THREADS · 4` bytes of shared memory per
//! block.
//!
//! Expected bound: instruction issue in the tree (divergent warps), well below DRAM.

/// Threads (and elements) per block; a power of two.
pub const BLOCK_THREADS: u32 = 256;
/// Dynamic shared memory per block, in bytes.
pub const SHARED_BYTES: u32 = BLOCK_THREADS * 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, sync_threads, thread};

crate::kernel! {
    /// `partials[b] = Σ` of block `b`'s elements of `x[0..n]`.
    pub unsafe fn reduce_v02_tree_divergent(
        x: *const f32,
        n: u64,
        partials: *mut f32,
    ) {
        let sdata = shared::dynamic_shared_mem::<f32>();
        let tid = thread::thread_idx_x();
        let i = thread::index_1d();
        // SAFETY: (whole body) i < n is checked before reading x; shared offsets stay below
        // BLOCK_THREADS, the size the host launches with; `partials` holds one f32 per block.
        unsafe {
            *sdata.add(tid as usize) = if i < n { *x.add(i as usize) } else { 0.0 };
            sync_threads();
            let mut s = 1;
            while s < BLOCK_THREADS {
                if tid.is_multiple_of(2 * s) {
                    *sdata.add(tid as usize) += *sdata.add((tid + s) as usize);
                }
                sync_threads();
                s *= 2;
            }
            if tid == 0 {
                *partials.add(thread::block_idx_x() as usize) = *sdata;
            }
        }
    }
}
