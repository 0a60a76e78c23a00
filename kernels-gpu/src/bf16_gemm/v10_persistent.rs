//! bf16_gemm/v10_persistent — v09 as a persistent kernel: at most one block per SM, each
//! walking many tiles of y in an L2-friendly order (sm_90a only).
//!
//! Changed from v09, one idea: blocks outlive their tile. v09 launches one block per
//! 128×256 tile; a block's epilogue (storing 64 KiB of y) and its ring's fill at the start
//! leave the tensor pipe idle, and the last wave of blocks leaves SMs idle. Here the grid is
//! min(#SMs, tiles) blocks; block b takes tiles b, b + grid, ... of an order that sweeps
//! `GROUP_M` = 8 row blocks at a time (`tma_ring::grouped_tile`: 8 × 128 rows of x and the
//! W columns they meet stay in L2 together). The producer runs ahead across tile
//! boundaries, so the next tile's stages fill while the consumers store the last one.
//!
//! Thread mapping: as v09 (384 threads, producer warpgroup 0, consumers 1-2, 64×256 each).
//!
//! Memory traffic: as v09 per tile; fewer L2 misses from the grouped order.
//!
//! Expected bound: the tensor pipe, less the epilogue no longer overlapped by another
//! block's wgmmas (a block's consumers still store their own tile); then the L2 → SM
//! traffic (v11 cuts it with clusters and TMA multicast).
//! K a multiple of 8; x, W 16-byte aligned.

use super::{tma_ring, wgmma_tile};

pub const CONSUMERS: u32 = 2;
pub const BLOCK_THREADS: u32 = tma_ring::block_threads(CONSUMERS, true);
pub const BM: u32 = tma_ring::bm(CONSUMERS);
pub const BN: u32 = wgmma_tile::BN;
pub const BK: u32 = wgmma_tile::BK;
pub const STAGES: u32 = 4;
pub const SHARED_BYTES: u32 = wgmma_tile::shared_bytes(BM, STAGES);
pub const K_MULTIPLE: u32 = wgmma_tile::K_MULTIPLE;

crate::kernel! {
    /// v10: v09 with a persistent grid (at most one block per SM) walking grouped tiles.
    /// sm_90a only.
    #[cfg(target_feature = "sm_90a")]
    pub unsafe fn bf16_gemm_v10_persistent(
        m: u32,
        n: u32,
        k: u32,
        x_map: *const crate::tensor_map::TensorMap,
        w_map: *const crate::tensor_map::TensorMap,
        y: *mut u16,
    ) {
        crate::gpu::hopper::launch_bounds::<BLOCK_THREADS, 1>();
        // SAFETY: forwarded; the host encodes the maps with boxes 64×BM and 64×BN and the
        // 128-byte swizzle, and launches min(#SMs, tiles) blocks in x on sm_90a.
        unsafe { tma_ring::dev::body::<CONSUMERS, true, true, 1, STAGES>(m, n, k, x_map, w_map, y) }
    }
}
