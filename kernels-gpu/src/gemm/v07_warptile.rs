//! gemm/v07_warptile — warp-level tiling, unrolled k loop, next tile prefetched to registers.
//!
//! Changed from v06: the 128×128 block tile is split among the 8 warps as a 4×2 grid of
//! WM×WN = 32×64 warp tiles; each warp tile is covered by WMITER×WNITER = 2×2 sub-tiles of
//! 16×32, and inside a sub-tile each lane owns a TM×TN = 4×4 patch (lanes 8 wide along N,
//! 4 tall along M). A thread still holds 8×8 = 64 results, but at each k the warp reads only
//! 4 distinct float4 of A (a broadcast) and 8 consecutive float4 of B (128 bytes, one
//! wavefront): no bank conflicts on the hot reads. BK grows to 16 (half the barriers), and
//! the transposed A tile gets a 4-float row pad (LDA = BM + 4) to halve its store conflicts.
//! Two latency fixes on top:
//! - the BK = 16 loop is fully unrolled with double-buffered register fragments
//!   (`warp_tile_pipeline::fragments`): the 4 `ld.shared.v4` of step k+1 are issued
//!   before the 64 FMAs of step k (64 `ld.shared.v4` + 1024 FMAs straight-line per tile);
//! - the next tile's global float4s (2 of A, 2 of B per thread) are loaded into registers
//!   right after the barrier and stored to shared memory only after the math, so their
//!   latency hides behind the FMAs instead of stalling every tile.
//!
//! Thread mapping: warp `w`: rows `(w / 2)·32`, columns `(w % 2)·64` of the block tile;
//! lane `l`: rows `(l / 8)·4` and columns `(l % 8)·4` of each 16×32 sub-tile. Loads: two
//! float4 of A and two of B per thread per tile (16-byte `ld.global.nc` when the tile is
//! inside and rows are 16-byte aligned, checked scalar loads otherwise).
//!
//! Memory traffic: global as v05/v06 (each input read N/128 or M/128 times, from L2 mostly);
//! shared: 4 conflict-free `ld.shared.v4` per 64 FMAs. ptxas: 126 registers, so two
//! 256-thread blocks (16 warps) fit an SM.
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

/// Where lane `lane` sits in a 16×32 sub-tile: the (row, column) of its TM×TN patch.
/// Lanes are 8 wide along N and 4 tall along M, in row-major lane order.
pub const fn lane_origin(lane: u32) -> (u32, u32) {
    let lanes_n = WN / WNITER / TN;
    ((lane / lanes_n) * TM, (lane % lanes_n) * TN)
}

// A sub-tile is covered by exactly one warp's lanes; loads split evenly in float4s.
const _: () = assert!((WM / WMITER / TM) * (WN / WNITER / TN) == 32);
// The epilogue's unroll! counts.
const _: () = assert!(WMITER == 2 && WNITER == 2);
// The fully unrolled k loop of `warp_tile_bk16`.
const _: () = assert!(BK == 16);
const _: () =
    assert!((BM * BK / 4).is_multiple_of(THREADS) && (BK * BN / 4).is_multiple_of(THREADS));
// 16-byte shared reads: padded rows stay aligned, a patch is one float4 wide.
const _: () = assert!(LDA.is_multiple_of(4) && TM == 4 && TN == 4);

#[cfg(target_arch = "nvptx64")]
use crate::gemm::dev::{fetch_tile, store_a_transposed, store_b};
#[cfg(target_arch = "nvptx64")]
use crate::gemm::rows_vectorizable;
#[cfg(target_arch = "nvptx64")]
use crate::gemm::warp_tile_pipeline::{
    epilogue::store_warp_tile, fragments::warp_tile_bk16, warp_tile_origin,
};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::vector::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, sync_threads, thread};

crate::kernel! {
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_v07_warptile(
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
        const NA: usize = BMU * BKU / 4 / T;
        const NB: usize = BKU * BNU / 4 / T;
        // Asked for as F32x4 so the shared block is declared 16-byte aligned (float4 access).
        let smem = shared::dynamic_shared_mem::<F32x4>() as *mut f32;
        let t = thread::thread_idx_x();
        let o = warp_tile_origin(BM, BN, WM, WN, lane_origin);
        let (bm0, bn0) = (o.bm0, o.bn0);
        let a_vec = rows_vectorizable(a as u64, k);
        let b_vec = rows_vectorizable(b as u64, n);
        let c_vec = rows_vectorizable(c as u64, n);
        let mut acc = [[0.0f32; NI * TNU]; MI * TMU];
        let tiles = k.div_ceil(BK);
        // SAFETY: fetch_tile checks bounds off its fast path; shared offsets stay inside
        // BK·LDA + BK·BN f32 and are multiples of 4 where read as float4; stores are
        // checked against M and N in store_c4. The first barrier orders the stores before
        // the reads, the second the reads before the next tile's stores.
        unsafe {
            let (as_, bs) = (smem, smem.add(BKU * LDAU));
            if tiles > 0 {
                let mut ra = fetch_tile::<BMU, BKU, T, NA>(a, m, k, k, bm0, 0, t, a_vec);
                let mut rb = fetch_tile::<BKU, BNU, T, NB>(b, k, n, n, 0, bn0, t, b_vec);
                for tile in 0..tiles {
                    store_a_transposed::<BKU, LDAU, T, NA>(&ra, t, as_);
                    store_b::<BNU, T, NB>(&rb, t, bs);
                    sync_threads();
                    // The next tile's global loads are in flight during this tile's math.
                    if tile + 1 < tiles {
                        let k0 = (tile + 1) * BK;
                        ra = fetch_tile::<BMU, BKU, T, NA>(a, m, k, k, bm0, k0, t, a_vec);
                        rb = fetch_tile::<BKU, BNU, T, NB>(b, k, n, n, k0, bn0, t, b_vec);
                    }
                    warp_tile_bk16::<LDAU, BNU, SUBM, SUBN, MI, NI, { MI * TMU }, { NI * TNU }>(
                        as_,
                        bs,
                        o.wm0 + o.lr,
                        o.wn0 + o.lc,
                        &mut acc,
                    );
                    sync_threads();
                }
            }
            store_warp_tile::<SUBM, SUBN, MI, NI, { MI * TMU }, { NI * TNU }>(
                c, m, n, o, &acc, alpha, beta, c_vec,
            );
        }
    }
}
