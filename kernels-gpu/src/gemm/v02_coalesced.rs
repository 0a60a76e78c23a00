//! gemm/v02_coalesced — v01 with the thread mapping swapped.
//!
//! Changed from v01: thread x runs along N (columns of C). A warp now reads one `A[i][kk]`
//! (a broadcast) and 32 consecutive `B[kk][j..j+32]` (128 contiguous bytes) per step, and
//! writes 128 contiguous bytes of C: every access is coalesced.
//!
//! Memory traffic: still 2·M·N·K loads with no reuse in registers or shared memory; L1 and L2
//! absorb most of them.
//!
//! Expected bound: L1/L2 load throughput; several times v01, a few TFLOP/s at most.

/// Threads per block along N (x) and along M (y).
pub const BLOCK_X: u32 = 32;
pub const BLOCK_Y: u32 = 8;

#[cfg(target_arch = "nvptx64")]
use crate::gemm::dev::{at, store_c};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread};

crate::kernel! {
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_v02_coalesced(
        m: u32,
        n: u32,
        k: u32,
        alpha: f32,
        a: *const f32,
        b: *const f32,
        beta: f32,
        c: *mut f32,
    ) {
        let (j, i) = thread::index_2d();
        if i >= m || j >= n {
            return;
        }
        let mut acc = 0.0f32;
        // SAFETY: i < m, j < n and kk < k index inside A, B and C.
        unsafe {
            for kk in 0..k {
                acc = math::fma(*a.add(at(i, k, kk)), *b.add(at(kk, n, j)), acc);
            }
            store_c(c, n, i, j, acc, alpha, beta);
        }
    }
}
