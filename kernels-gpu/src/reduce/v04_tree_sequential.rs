//! reduce/v04_tree_sequential — sequential addressing: no divergence, no bank conflicts.
//!
//! Changed from v03: at step `s` (BLOCK_THREADS/2, /4, ... 1) thread `tid < s` adds
//! `sdata[tid + s]` into `sdata[tid]`. The active threads are the first `s`, as in v03, so
//! whole warps are either busy or idle (divergence only once `s < 32`) and idle warps issue
//! nothing; but consecutive lanes now touch consecutive words, so v03's bank conflicts are
//! gone (v02 had none either).
//!
//! Thread mapping: one element per thread (0 past the end), one block sum per block; passes
//! over the partials as in v02.
//!
//! Memory traffic: the minimum read, plus the partials of each pass (as v02); `BLOCK_THREADS · 4`
//! bytes of shared memory per block.
//!
//! Expected bound: still latency/issue-bound: half the threads idle after the first step,
//! and each thread has a single 4-byte load in flight.

/// Threads (and elements) per block; a power of two.
pub const BLOCK_THREADS: u32 = 256;
/// Dynamic shared memory per block, in bytes.
pub const SHARED_BYTES: u32 = BLOCK_THREADS * 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, sync_threads, thread};

crate::kernel! {
    /// `partials[b] = Σ` of block `b`'s elements of `x[0..n]`.
    pub unsafe fn reduce_v04_tree_sequential(
        x: *const f32,
        n: u64,
        partials: *mut f32,
    ) {
        let sdata = shared::dynamic_shared_mem::<f32>();
        let tid = thread::thread_idx_x();
        let i = thread::index_1d();
        // SAFETY: (whole body) as v02: guarded global read, shared offsets < BLOCK_THREADS.
        unsafe {
            *sdata.add(tid as usize) = if i < n { *x.add(i as usize) } else { 0.0 };
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
