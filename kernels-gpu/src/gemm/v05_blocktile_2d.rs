//! gemm/v05_blocktile_2d — each thread computes a TM×TN = 8×8 tile of results.
//!
//! Changed from v04: 256 threads compute a 128×128 tile of C (BK = 8). Per step of K a
//! thread loads TM values of A and TN values of B from shared memory into registers and
//! does their outer product: TM·TN = 64 FMAs for 16 shared loads (v04: 8 FMAs for 9).
//!
//! Thread mapping: compute: thread `t` owns rows `(t / (BN/TN))·TM ..+TM` and columns
//! `(t % (BN/TN))·TN ..+TN`; loads: each thread moves BM·BK/256 = 4 elements of A and 4 of B
//! per tile with scalar, bounds-checked loads (coalesced along K for A, along N for B).
//!
//! Memory traffic: each A element is read from global memory N/128 times, each B element
//! M/128 times; shared traffic 1/4 of v04's per FMA.
//!
//! Expected bound: instruction issue (scalar shared loads, address math); roughly 2x v04.

/// Block tile: BM×BN of C, stepping BK along K.
pub const BM: u32 = 128;
pub const BN: u32 = 128;
pub const BK: u32 = 8;
/// Per-thread tile of results.
pub const TM: u32 = 8;
pub const TN: u32 = 8;
/// Threads per block.
pub const THREADS: u32 = (BM / TM) * (BN / TN);
/// Dynamic shared memory: A tile (BM×BK, row-major) and B tile (BK×BN).
pub const SHARED_F32: u32 = BM * BK + BK * BN;

// Loads split evenly over the threads.
const _: () = assert!((BM * BK).is_multiple_of(THREADS) && (BK * BN).is_multiple_of(THREADS));
// The epilogue's unroll! counts.
const _: () = assert!(TM == 8 && TN == 8);

#[cfg(target_arch = "nvptx64")]
use crate::gemm::dev::{at, store_c};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, shared, sync_threads, thread};

crate::kernel! {
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_v05_blocktile_2d(
        m: u32,
        n: u32,
        k: u32,
        alpha: f32,
        a: *const f32,
        b: *const f32,
        beta: f32,
        c: *mut f32,
    ) {
        const BKU: usize = BK as usize;
        const BNU: usize = BN as usize;
        const TMU: usize = TM as usize;
        const TNU: usize = TN as usize;
        const LOADS: usize = (BM * BK / THREADS) as usize;
        let smem = shared::dynamic_shared_mem::<f32>();
        let t = thread::thread_idx_x();
        let (bm0, bn0) = (thread::block_idx_y() * BM, thread::block_idx_x() * BN);
        let tr = t / (BN / TN);
        let tc = t % (BN / TN);
        let mut acc = [[0.0f32; TNU]; TMU];
        let mut reg_m = [0.0f32; TMU];
        let mut reg_n = [0.0f32; TNU];
        let mut k0 = 0;
        // SAFETY: shared indices stay inside BM·BK + BK·BN f32; global loads are bounds
        // checked (zero outside); stores are checked against M and N.
        unsafe {
            let (as_, bs) = (smem, smem.add((BM * BK) as usize));
            while k0 < k {
                for i in 0..LOADS {
                    let idx = t + i as u32 * THREADS;
                    let (r, cc) = (idx / BK, idx % BK);
                    *as_.add(idx as usize) = if bm0 + r < m && k0 + cc < k {
                        *a.add(at(bm0 + r, k, k0 + cc))
                    } else {
                        0.0
                    };
                    let (r, cc) = (idx / BN, idx % BN);
                    *bs.add(idx as usize) = if k0 + r < k && bn0 + cc < n {
                        *b.add(at(k0 + r, n, bn0 + cc))
                    } else {
                        0.0
                    };
                }
                sync_threads();
                for kk in 0..BKU {
                    for (i, x) in reg_m.iter_mut().enumerate() {
                        *x = *as_.add((tr as usize * TMU + i) * BKU + kk);
                    }
                    for (j, x) in reg_n.iter_mut().enumerate() {
                        *x = *bs.add(kk * BNU + tc as usize * TNU + j);
                    }
                    for i in 0..TMU {
                        for j in 0..TNU {
                            acc[i][j] = math::fma(reg_m[i], reg_n[j], acc[i][j]);
                        }
                    }
                }
                sync_threads();
                k0 += BK;
            }
            unroll!(8, i => {
                let row = bm0 + tr * TM + i as u32;
                if row < m {
                    unroll!(8, j => {
                        let col = bn0 + tc * TN + j as u32;
                        if col < n {
                            store_c(c, n, row, col, acc[i][j], alpha, beta);
                        }
                    });
                }
            });
        }
    }
}
