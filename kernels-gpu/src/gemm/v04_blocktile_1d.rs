//! gemm/v04_blocktile_1d — each thread computes a column of TM results.
//!
//! Changed from v03: a block of 512 threads computes a BM×BN = 64×64 tile of C, stepping
//! BK = 8 along K. Thread `t` owns column `t % BN` and the TM = 8 rows `(t / BN)·TM ..`:
//! per step of K it loads one B value from shared memory into a register and reuses it for
//! TM FMAs against TM values of A (A's are a broadcast across the warp's lanes).
//!
//! Thread mapping: loads: one A and one B element per thread per tile (coalesced along
//! K for A and along N for B); compute: as above; stores: TM scalar stores per thread.
//!
//! Memory traffic: global as v03 with 64-wide tiles (each input read M/64 or N/64 times);
//! shared: TM+1 loads per TM FMAs instead of 2 per FMA.
//!
//! Expected bound: still shared-memory/issue bound, but ~2-3x v03.

/// Block tile: BM rows of C by BN columns, stepping BK along K.
pub const BM: u32 = 64;
pub const BN: u32 = 64;
pub const BK: u32 = 8;
/// Results per thread (a column of TM rows).
pub const TM: u32 = 8;
/// Threads per block: one per TM results.
pub const THREADS: u32 = BM * BN / TM;
/// Dynamic shared memory: A tile (BM×BK) and B tile (BK×BN).
pub const SHARED_F32: u32 = BM * BK + BK * BN;

// One A and one B element per thread per tile.
const _: () = assert!(THREADS == BM * BK && THREADS == BK * BN);

#[cfg(target_arch = "nvptx64")]
use crate::gemm::dev::{at, store_c};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, shared, sync_threads, thread};

crate::kernel! {
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_v04_blocktile_1d(
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
        let smem = shared::dynamic_shared_mem::<f32>();
        let t = thread::thread_idx_x();
        let (bm0, bn0) = (thread::block_idx_y() * BM, thread::block_idx_x() * BN);
        // Compute mapping.
        let tc = t % BN;
        let tr = t / BN;
        // Load mapping: A tile row/col, B tile row/col.
        let (ar, ac) = (t / BK, t % BK);
        let (br, bc) = (t / BN, t % BN);
        let mut acc = [0.0f32; TMU];
        let mut k0 = 0;
        // SAFETY: shared indices stay inside BM·BK + BK·BN f32; global loads are bounds
        // checked (zero outside); stores are checked against M and N.
        unsafe {
            let (as_, bs) = (smem, smem.add((BM * BK) as usize));
            while k0 < k {
                *as_.add(t as usize) = if bm0 + ar < m && k0 + ac < k {
                    *a.add(at(bm0 + ar, k, k0 + ac))
                } else {
                    0.0
                };
                *bs.add(t as usize) = if k0 + br < k && bn0 + bc < n {
                    *b.add(at(k0 + br, n, bn0 + bc))
                } else {
                    0.0
                };
                sync_threads();
                for kk in 0..BKU {
                    let bv = *bs.add(kk * BNU + tc as usize);
                    for (r, x) in acc.iter_mut().enumerate() {
                        *x = math::fma(*as_.add((tr as usize * TMU + r) * BKU + kk), bv, *x);
                    }
                }
                sync_threads();
                k0 += BK;
            }
            let col = bn0 + tc;
            if col < n {
                for (r, &x) in acc.iter().enumerate() {
                    let row = bm0 + tr * TM + r as u32;
                    if row < m {
                        store_c(c, n, row, col, x, alpha, beta);
                    }
                }
            }
        }
    }
}
