//! reduce/v03_strided_index — interleaved addressing with a strided index: the first levels
//! lose their divergence and gain shared-memory bank conflicts.
//!
//! Changed from v02: at step `s` (1, 2, 4, ...) thread `tid` works on `index = 2·s·tid` and,
//! when `index < BLOCK_THREADS`, adds `sdata[index + s]` into `sdata[index]`. The pairs added
//! are v02's, in the same order, so the result is v02's to the bit; only which thread adds
//! them changes. The active threads are now the first `BLOCK_THREADS / (2s)`: whole warps are
//! busy or idle while at least 32 threads work (s ≤ 4 at 256 threads), and only the last
//! levels diverge. The price: lane `l` touches words `2s·l` and `2s·l + s`, so a warp's lanes
//! share banks: 2-way conflicts at s = 1, 4-way at s = 2, 8-way from s = 4 to 16, then fewer as
//! fewer lanes remain (8-way is the most a 256-thread block reaches; 16- and 32-way need a
//! full warp at strides of 16 and 32 words, blocks of 512 and 1024 threads). Each conflict
//! replays the access: counted per block, about 70 extra load and 35 extra store wavefronts,
//! against ~1.6 conflicts per block that ncu measured for v02 on the H200.
//!
//! Thread mapping: one element per thread (0 past the end), one block sum per block; passes
//! over the partials as in v02.
//!
//! Memory traffic: the minimum read, plus the partials of each pass (as v02); `BLOCK_THREADS · 4`
//! bytes of shared memory per block.
//!
//! Expected bound: instruction issue, as v02, now with shared-memory bank conflicts: the
//! n-way replays grow with `s` (up to 8-way), while idle warps no longer issue the tree's
//! loads and stores in the first levels. Counting shared-memory wavefronts, v02's 47
//! conflict-free warp steps and this step's 12 replayed ones come to about the same number
//! per block, so little change from v02 is expected.

/// Threads (and elements) per block; a power of two.
pub const BLOCK_THREADS: u32 = 256;
/// Dynamic shared memory per block, in bytes.
pub const SHARED_BYTES: u32 = BLOCK_THREADS * 4;

const _: () = assert!(BLOCK_THREADS.is_power_of_two());

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, sync_threads, thread};

crate::kernel! {
    /// `partials[b] = Σ` of block `b`'s elements of `x[0..n]`.
    pub unsafe fn reduce_v03_strided_index(
        x: *const f32,
        n: u64,
        partials: *mut f32,
    ) {
        let sdata = shared::dynamic_shared_mem::<f32>();
        let tid = thread::thread_idx_x();
        let i = thread::index_1d();
        // SAFETY: (whole body) as v02: guarded global read; `index + s < BLOCK_THREADS`
        // whenever `index < BLOCK_THREADS` (both are multiples of 2s), so shared offsets stay
        // below the size the host launches with; `partials` holds one f32 per block.
        unsafe {
            *sdata.add(tid as usize) = if i < n { *x.add(i as usize) } else { 0.0 };
            sync_threads();
            let mut s = 1;
            while s < BLOCK_THREADS {
                // At most 2·(BLOCK_THREADS/2)·(BLOCK_THREADS-1): no u32 overflow.
                let index = 2 * s * tid;
                if index < BLOCK_THREADS {
                    *sdata.add(index as usize) += *sdata.add((index + s) as usize);
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
