//! gemm/v01_naive — one thread per element of C, the textbook triple loop.
//!
//! Thread mapping: thread x runs along M (rows of C), thread y along N. So the 32 lanes of a
//! warp hold 32 different rows: each `A[i][kk]` load is 32 addresses K floats apart (32
//! sectors for 128 useful bytes), B's `B[kk][j]` is the same address for the whole warp,
//! and the stores to C are strided too.
//!
//! Memory traffic: every thread reads a row of A and a column of B: 2·M·N·K loads, served
//! mostly by L1/L2 but with 8x sector waste on A.
//!
//! Expected bound: load/store throughput with uncoalesced access; well under 1 TFLOP/s.

/// Threads per block along M (x, the fast index of the thread) and along N (y).
pub const BLOCK_X: u32 = 32;
pub const BLOCK_Y: u32 = 8;

#[cfg(target_arch = "nvptx64")]
use crate::gemm::dev::{at, store_c};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread};

crate::kernel! {
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_v01_naive(
        m: u32,
        n: u32,
        k: u32,
        alpha: f32,
        a: *const f32,
        b: *const f32,
        beta: f32,
        c: *mut f32,
    ) {
        let (i, j) = thread::index_2d();
        if i >= m || j >= n {
            return;
        }
        let mut acc = 0.0f32;
        // SAFETY: i < m, j < n and kk < k index inside A (M×K), B (K×N) and C (M×N).
        unsafe {
            for kk in 0..k {
                acc = math::fma(*a.add(at(i, k, kk)), *b.add(at(kk, n, j)), acc);
            }
            store_c(c, n, i, j, acc, alpha, beta);
        }
    }
}
