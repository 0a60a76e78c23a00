//! gemm/v07_warptile — warp-level tiling on top of v06.
//!
//! Changed from v06: the 128×128 block tile is split among the 8 warps as a 4×2 grid of
//! WM×WN = 32×64 warp tiles; each warp tile is covered by WMITER×WNITER = 2×2 sub-tiles of
//! 16×32, and inside a sub-tile each lane owns a TM×TN = 4×4 patch (lanes 8 wide along N,
//! 4 tall along M). A thread still holds 8×8 = 64 results, but at each k the warp reads only
//! 4 distinct float4 of A (a broadcast) and 8 consecutive float4 of B (128 bytes, one
//! wavefront): no bank conflicts on the hot reads. BK grows to 16 (half the barriers), and
//! the transposed A tile gets a 4-float row pad (LDA = BM + 4) to halve its store conflicts.
//!
//! Thread mapping: warp `w`: rows `(w / 2)·32`, columns `(w % 2)·64` of the block tile;
//! lane `l`: rows `(l / 8)·4` and columns `(l % 8)·4` of each 16×32 sub-tile. Loads: two
//! float4 of A and two of B per thread per tile.
//!
//! Memory traffic: global as v05/v06 (each input read N/128 or M/128 times, from L2 mostly);
//! shared: 4 conflict-free `ld.shared.v4` per 64 FMAs.
//!
//! Expected bound: FMA issue; the goal is most of the FP32 peak, ~80-90% of cuBLAS.

/// Block tile: BM×BN of C, stepping BK along K.
pub const BM: u32 = 128;
pub const BN: u32 = 128;
pub const BK: u32 = 16;
/// Warp tile and its sub-tiles.
pub const WM: u32 = 32;
pub const WN: u32 = 64;
pub const WMITER: u32 = 2;
pub const WNITER: u32 = 2;
/// Per-lane patch inside a sub-tile.
pub const TM: u32 = 4;
pub const TN: u32 = 4;
/// Threads per block: one warp per warp tile.
pub const THREADS: u32 = (BM / WM) * (BN / WN) * 32;
/// Row stride of the transposed A tile in shared memory (padded against bank conflicts).
pub const LDA: u32 = BM + 4;
/// Dynamic shared memory: A tile transposed (BK×LDA) and B tile (BK×BN).
pub const SHARED_F32: u32 = BK * LDA + BK * BN;

// A sub-tile is covered by exactly one warp's lanes; loads split evenly in float4s.
const _: () = assert!((WM / WMITER / TM) * (WN / WNITER / TN) == 32);
// The epilogue's unroll! counts.
const _: () = assert!(WMITER == 2 && WNITER == 2);
const _: () =
    assert!((BM * BK / 4).is_multiple_of(THREADS) && (BK * BN / 4).is_multiple_of(THREADS));
// 16-byte shared reads: padded rows stay aligned, a patch is one float4 wide.
const _: () = assert!(LDA.is_multiple_of(4) && TM == 4 && TN == 4);

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::gemm::dev::{lds4, load_a_transposed, load_b, store_c4};
    use crate::gemm::rows_vectorizable;
    use crate::gpu::vector::F32x4;
    use crate::gpu::{math, shared, sync_threads, thread, warp};

    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "gpu-kernel" fn gemm_v07_warptile(
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
        const LDAU: usize = LDA as usize;
        const T: usize = THREADS as usize;
        const MI: usize = WMITER as usize;
        const NI: usize = WNITER as usize;
        const SUBM: usize = (WM / WMITER) as usize;
        const SUBN: usize = (WN / WNITER) as usize;
        const TMU: usize = TM as usize;
        const TNU: usize = TN as usize;
        // Asked for as F32x4 so the shared block is declared 16-byte aligned (float4 access).
        let smem = shared::dynamic_shared_mem::<F32x4>() as *mut f32;
        let t = thread::thread_idx_x();
        let (bm0, bn0) = (thread::block_idx_y() * BM, thread::block_idx_x() * BN);
        let w = t / warp::WARP_SIZE;
        let lane = t % warp::WARP_SIZE;
        let wm0 = ((w / (BN / WN)) * WM) as usize;
        let wn0 = ((w % (BN / WN)) * WN) as usize;
        let lr = (lane / (SUBN / TNU) as u32) as usize * TMU;
        let lc = (lane % (SUBN / TNU) as u32) as usize * TNU;
        let a_vec = rows_vectorizable(a as u64, k);
        let b_vec = rows_vectorizable(b as u64, n);
        let c_vec = rows_vectorizable(c as u64, n);
        let mut acc = [[0.0f32; NI * TNU]; MI * TMU];
        let mut k0 = 0;
        // SAFETY: the tile loaders check bounds off their fast paths; shared offsets stay
        // inside BK·LDA + BK·BN f32 and are multiples of 4 where read as float4; stores are
        // checked against M and N in store_c4.
        unsafe {
            let (as_, bs) = (smem, smem.add(BKU * LDAU));
            while k0 < k {
                load_a_transposed::<BMU, BKU, LDAU, T>(a, m, k, bm0, k0, t, as_, a_vec);
                load_b::<BKU, BNU, T>(b, n, k, k0, bn0, t, bs, b_vec);
                sync_threads();
                for kk in 0..BKU {
                    let mut ra = [0.0f32; MI * TMU];
                    let mut rb = [0.0f32; NI * TNU];
                    for s in 0..MI {
                        let v = lds4(as_.add(kk * LDAU + wm0 + s * SUBM + lr));
                        ra[s * TMU..s * TMU + 4].copy_from_slice(&v);
                    }
                    for s in 0..NI {
                        let v = lds4(bs.add(kk * BNU + wn0 + s * SUBN + lc));
                        rb[s * TNU..s * TNU + 4].copy_from_slice(&v);
                    }
                    for i in 0..MI * TMU {
                        for j in 0..NI * TNU {
                            acc[i][j] = math::fma(ra[i], rb[j], acc[i][j]);
                        }
                    }
                }
                sync_threads();
                k0 += BK;
            }
            unroll!(2, sm => {
                unroll!(4, i => {
                    let r = &acc[sm * TMU + i];
                    let row = bm0 + (wm0 + sm * SUBM + lr + i) as u32;
                    unroll!(2, sn => {
                        let col = bn0 + (wn0 + sn * SUBN + lc) as u32;
                        let v = [r[sn * 4], r[sn * 4 + 1], r[sn * 4 + 2], r[sn * 4 + 3]];
                        store_c4(c, m, n, row, col, v, alpha, beta, c_vec);
                    });
                });
            });
        }
    }
}
