//! gemm/v03_smem_tiled — square tiles of A and B through shared memory.
//!
//! Changed from v02: a 32×32 block of threads computes a 32×32 tile of C. For each step of
//! 32 along K the block loads a 32×32 tile of A and one of B into shared memory (one element
//! per thread, coalesced, zero outside the matrices), synchronizes, and each thread takes
//! its 32-long dot product from shared memory.
//!
//! Thread mapping: `threadIdx.x` along N, `threadIdx.y` along M; one C element per thread.
//!
//! Memory traffic: each A and B element is fetched from global memory M/32 or N/32 times
//! instead of M or N times; but every FMA still needs two shared-memory loads.
//!
//! Expected bound: shared-memory bandwidth (2 loads per FMA); roughly 1.5-2x v02.

/// Tile edge: a block is TILE×TILE threads and computes a TILE×TILE tile of C.
pub const TILE: u32 = 32;
/// Dynamic shared memory: one tile of A and one of B.
pub const SHARED_F32: u32 = 2 * TILE * TILE;

#[cfg(target_arch = "nvptx64")]
use crate::gemm::dev::{at, store_c};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, shared, sync_threads, thread};

crate::kernel! {
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_v03_smem_tiled(
        m: u32,
        n: u32,
        k: u32,
        alpha: f32,
        a: *const f32,
        b: *const f32,
        beta: f32,
        c: *mut f32,
    ) {
        const T: usize = TILE as usize;
        let smem = shared::dynamic_shared_mem::<f32>();
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        let row = thread::block_idx_y() * TILE + ty;
        let col = thread::block_idx_x() * TILE + tx;
        let mut acc = 0.0f32;
        let mut k0 = 0;
        // SAFETY: shared indices are < 2·TILE², the launch size; global loads are bounds
        // checked (zero outside); the store is inside C.
        unsafe {
            let (as_, bs) = (smem, smem.add(T * T));
            let mine = ty as usize * T + tx as usize;
            while k0 < k {
                *as_.add(mine) = if row < m && k0 + tx < k {
                    *a.add(at(row, k, k0 + tx))
                } else {
                    0.0
                };
                *bs.add(mine) = if k0 + ty < k && col < n {
                    *b.add(at(k0 + ty, n, col))
                } else {
                    0.0
                };
                sync_threads();
                for kk in 0..T {
                    acc = math::fma(
                        *as_.add(ty as usize * T + kk),
                        *bs.add(kk * T + tx as usize),
                        acc,
                    );
                }
                sync_threads();
                k0 += TILE;
            }
            if row < m && col < n {
                store_c(c, n, row, col, acc, alpha, beta);
            }
        }
    }
}
