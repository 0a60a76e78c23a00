//! gemm/v12_split_k — v11's kernel with K split across blocks when C has too few tiles.
//!
//! Changed from v11: v11 gives one block per 256×128 tile of C, so a tall-skinny product
//! (8192×128×8192: 32 tiles) keeps 32 of the H200's 132 SMs busy, each walking all of K.
//! Here the host picks `slices` (`slices()`, below): the grid gets `gridDim.z = slices`
//! and block `z` multiplies only its slice of K (`split_k_chunk`, whole BK tiles), writing
//! its partial product to the `z`-th M×N matrix of a workspace; a second kernel,
//! `gemm_v12_split_k_reduce`, then adds the slices in a fixed order (0, 1, .. — the same
//! bits every run, unlike atomics) and applies `alpha` and `beta·C`. With one slice (enough
//! tiles for the SMs) the host launches v11's own kernel: this one over a single slice
//! measured 7-8% slower than v11 at 2048³-8192³ (H200, 2026-12-03; not yet profiled
//! why), so the split is the only thing v12 adds.
//!
//! Thread mapping: the main kernel's is v11's (warp tiles of 64×64, lanes as v07) within
//! each slice; the reduce kernel has one thread per element of C.
//!
//! Memory traffic: A and B as v11 (each slice reads its own columns of A and rows of B);
//! plus `slices` M×N partials written and read back once, and C read and written: for
//! 8192×128×8192 at 4 slices, 8 MiB + 8 MiB against 260 MiB of A and B.
//!
//! Expected bound: FMA issue, as v11, on about one block per SM instead of a quarter; the
//! reduce costs a few microseconds of DRAM.

use super::warp_tile_pipeline::TwoStageGeometry;

/// v11's geometry: the same block tile, warp tile and pipeline.
pub const GEOMETRY: TwoStageGeometry = super::v11_block_256x128::GEOMETRY;

/// `GEOMETRY`'s block tile, threads and shared memory.
pub const BM: u32 = GEOMETRY.bm;
pub const BN: u32 = GEOMETRY.bn;
pub const BK: u32 = GEOMETRY.bk;
pub const THREADS: u32 = GEOMETRY.threads;
pub const SHARED_F32: u32 = GEOMETRY.shared_f32();

/// Threads per block of the reduce kernel.
pub const REDUCE_THREADS: u32 = 256;

/// At most this many slices: past that the partials' traffic and the reduce outweigh the
/// parallelism gained.
pub const MAX_SLICES: u32 = 16;

/// A slice walks at least this many BK-deep tiles, so its pipeline's prologue and epilogue
/// stay small against its loop.
pub const MIN_TILES_PER_SLICE: u32 = 8;

/// How many K slices the host launches for an M×N×K product on `sms` multiprocessors: 1
/// when C's tiles alone fill the SMs (one block an SM fits: 231 registers × 256 threads);
/// else enough slices to bring the blocks up to about one per SM, each slice at least
/// `MIN_TILES_PER_SLICE` tiles deep, at most `MAX_SLICES`, and no more than K's tiles
/// fill (no slice is empty).
pub const fn slices(m: u32, n: u32, k: u32, sms: u32) -> u32 {
    let tiles = m.div_ceil(BM) as u64 * n.div_ceil(BN) as u64;
    if tiles == 0 || tiles >= sms as u64 {
        return 1;
    }
    let for_sms = sms as u64 / tiles;
    let for_depth = k.div_ceil(BK) / MIN_TILES_PER_SLICE;
    let s = if for_sms < for_depth as u64 {
        for_sms as u32
    } else {
        for_depth
    };
    let s = if s > MAX_SLICES {
        MAX_SLICES
    } else if s < 1 {
        1
    } else {
        s
    };
    // As many slices as `split_k_chunk`'s whole-tile chunks need: none left empty.
    let k_tiles = k.div_ceil(BK);
    if k_tiles == 0 {
        return 1; // K = 0: C = beta·C, nothing to split
    }
    k_tiles.div_ceil(k_tiles.div_ceil(s))
}

super::warp_tile_pipeline::two_stage_entry! {
    /// v12: v11's two-stage pipeline over the `blockIdx.z`-th slice of K (see the header).
    split_k gemm_v12_split_k, GEOMETRY, crate::gemm::v07_warptile::lane_origin
}

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread};

crate::kernel! {
    /// `c[i] = alpha·(ws[0][i] + ws[1][i] + .. + ws[slices-1][i]) + beta·c[i]` for the
    /// `mn` elements of C, the slices `mn` apart in `ws`, added in slice order (`beta == 0`:
    /// C not read, as in BLAS).
    pub unsafe fn gemm_v12_split_k_reduce(
        mn: u64,
        slices: u32,
        alpha: f32,
        ws: *const f32,
        beta: f32,
        c: *mut f32,
    ) {
        let i = thread::index_1d();
        if i >= mn {
            return;
        }
        // SAFETY: i < mn and ws holds `slices` matrices of mn elements (host-checked).
        unsafe {
            let mut s = *ws.add(i as usize);
            for z in 1..slices as u64 {
                s += *ws.add((z * mn + i) as usize);
            }
            let p = c.add(i as usize);
            *p = if beta == 0.0 {
                alpha * s
            } else {
                math::fma(alpha, s, beta * *p)
            };
        }
    }
}
