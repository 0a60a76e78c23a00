//! gemm/v06_vectorized — 16-byte loads everywhere, A transposed in shared memory.
//!
//! Changed from v05 (same 128×128×8 block tile, 8×8 results per thread, 256 threads):
//! global loads are `ld.global.nc.v4.f32` (one float4 of A and one of B per thread per
//! tile), and the A tile is stored transposed (`As[k][m]`) so that a thread's 8 values of A
//! at one k are contiguous: the inner loop reads A and B with two `ld.shared.v4.f32` each
//! instead of 16 scalar loads. The BK = 8 loop is fully unrolled (`unroll!`: 32
//! `ld.shared.v4` + 512 FMAs straight-line), so ptxas can issue step k+1's shared loads
//! under step k's FMAs. The epilogue writes C with 16-byte stores. Tiles over an edge, or
//! matrices whose rows are not 16-byte aligned (K or N not a multiple of 4), take a
//! bounds-checked scalar path for that tile.
//!
//! Thread mapping: compute as v05 (`t / 16` picks 8 rows, `t % 16` picks 8 columns); A load:
//! row `t / 2`, columns `(t % 2)·4 ..+4`; B load: row `t / 32`, columns `(t % 32)·4 ..+4`.
//!
//! Memory traffic: global as v05; shared loads 4 per 64 FMAs. B reads have a 2-way bank
//! conflict (16 lanes read float4s 32 bytes apart) and the transposed A store a 2-way one.
//! ptxas: 107 registers (2 blocks/SM).
//!
//! Expected bound: FMA issue with some shared-memory stalls and the exposed global-load
//! latency at each tile (loads, barrier, math, barrier); 1.3-1.6x v05.

/// Block tile: BM×BN of C, stepping BK along K.
pub const BM: u32 = 128;
pub const BN: u32 = 128;
pub const BK: u32 = 8;
/// Per-thread tile of results.
pub const TM: u32 = 8;
pub const TN: u32 = 8;
/// Threads per block.
pub const THREADS: u32 = (BM / TM) * (BN / TN);
/// Dynamic shared memory: A tile transposed (BK×BM) and B tile (BK×BN).
pub const SHARED_F32: u32 = BK * BM + BK * BN;

// One float4 of A and one of B per thread per tile.
const _: () = assert!(BM * BK / 4 == THREADS && BK * BN / 4 == THREADS);
// The unroll! counts of the k loop and of the epilogue, and its two float4 per row.
const _: () = assert!(BK == 8 && TM == 8 && TN == 8);

#[cfg(target_arch = "nvptx64")]
use crate::gemm::dev::{lds4, load_a_transposed, load_b, store_c4};
#[cfg(target_arch = "nvptx64")]
use crate::gemm::rows_vectorizable;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::vector::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, shared, sync_threads, thread};

crate::kernel! {
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_v06_vectorized(
        m: u32,
        n: u32,
        k: u32,
        alpha: f32,
        a: *const f32,
        b: *const f32,
        beta: f32,
        c: *mut f32,
    ) {
        const BMU: usize = BM as usize;
        const BNU: usize = BN as usize;
        const BKU: usize = BK as usize;
        const TMU: usize = TM as usize;
        const TNU: usize = TN as usize;
        const T: usize = THREADS as usize;
        // Asked for as F32x4 so the shared block is declared 16-byte aligned (float4 access).
        let smem = shared::dynamic_shared_mem::<F32x4>() as *mut f32;
        let t = thread::thread_idx_x();
        let (bm0, bn0) = (thread::block_idx_y() * BM, thread::block_idx_x() * BN);
        let tr = (t / (BN / TN)) as usize;
        let tc = (t % (BN / TN)) as usize;
        let a_vec = rows_vectorizable(a as u64, k);
        let b_vec = rows_vectorizable(b as u64, n);
        let c_vec = rows_vectorizable(c as u64, n);
        let mut acc = [[0.0f32; TNU]; TMU];
        let mut k0 = 0;
        // SAFETY: the tile loaders check bounds off their fast paths; shared offsets stay
        // inside BK·BM + BK·BN f32 and are multiples of 4 where read as float4; stores are
        // checked against M and N in store_c4.
        unsafe {
            let (as_, bs) = (smem, smem.add(BKU * BMU));
            while k0 < k {
                load_a_transposed::<BMU, BKU, BMU, T>(a, m, k, bm0, k0, t, as_, a_vec);
                load_b::<BKU, BNU, T>(b, n, k, k0, bn0, t, bs, b_vec);
                sync_threads();
                // Fully unrolled (LLVM leaves this loop rolled by itself): constant shared
                // offsets, and ptxas can issue step kk+1's loads under step kk's FMAs.
                unroll!(8, kk => {
                    let a0 = lds4(as_.add(kk * BMU + tr * TMU));
                    let a1 = lds4(as_.add(kk * BMU + tr * TMU + 4));
                    let b0 = lds4(bs.add(kk * BNU + tc * TNU));
                    let b1 = lds4(bs.add(kk * BNU + tc * TNU + 4));
                    let ra = [a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]];
                    let rb = [b0[0], b0[1], b0[2], b0[3], b1[0], b1[1], b1[2], b1[3]];
                    for i in 0..TMU {
                        for j in 0..TNU {
                            acc[i][j] = math::fma(ra[i], rb[j], acc[i][j]);
                        }
                    }
                });
                sync_threads();
                k0 += BK;
            }
            unroll!(8, i => {
                let r = &acc[i];
                let row = bm0 + (tr * TMU + i) as u32;
                let col = bn0 + (tc * TNU) as u32;
                store_c4(c, m, n, row, col, [r[0], r[1], r[2], r[3]], alpha, beta, c_vec);
                store_c4(c, m, n, row, col + 4, [r[4], r[5], r[6], r[7]], alpha, beta, c_vec);
            });
        }
    }
}
