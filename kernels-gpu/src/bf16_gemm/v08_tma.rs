//! bf16_gemm/v08_tma — v07 with its tiles brought by the tensor copy engine (TMA,
//! `cp.async.bulk.tensor`) into a ring guarded by mbarriers (sm_90a only).
//!
//! Changed from v07, one idea: who moves the bytes. In v07 all 128 threads issue 20
//! `cp.async` each per K tile (address arithmetic, predicates, zero-fill sizes in their
//! instruction stream), then every K tile ends in a block-wide barrier. Here thread 0 issues
//! two TMA copies per K tile (a 64×64 box of x, a 256×64 box of W, swizzled by the engine
//! itself, zeros past the matrix edges); their bytes complete on the stage's *full*
//! mbarrier, which the warpgroup waits on; each warp releases a stage on its *empty*
//! mbarrier once its wgmmas are done with it. No block barrier in the loop, and the ring is
//! 4 stages deep instead of 2 tiles ahead (the empty barriers say exactly when a stage is
//! free). The ring itself is `tma_ring`, shared with v09 and v10.
//!
//! Thread mapping: one warpgroup, a 64×256 tile of y per block (as v07); thread 0 is also
//! the producer, issuing K tile t + 4 right after the stage of tile t is released.
//!
//! Memory traffic: as v07 (40 KiB per K tile and block from L2); the tensor maps (128 bytes
//! each, in global memory) are prefetched once per block.
//!
//! Expected bound: still one warpgroup per SM, so the tensor pipe idles whenever that
//! warpgroup waits (on a stage, on its epilogue); a little above v07 (no per-tile barrier,
//! no copy instructions in the multiply loop). K a multiple of 8 (TMA's 16-byte row
//! strides); x, W 16-byte aligned.

use super::{tma_ring, wgmma_tile};

/// Consumer warpgroups (thread 0 of the first is also the producer).
pub const CONSUMERS: u32 = 1;
pub const BLOCK_THREADS: u32 = tma_ring::block_threads(CONSUMERS, false);
pub const BM: u32 = tma_ring::bm(CONSUMERS);
pub const BN: u32 = wgmma_tile::BN;
pub const BK: u32 = wgmma_tile::BK;
pub const STAGES: u32 = 4;
pub const SHARED_BYTES: u32 = wgmma_tile::shared_bytes(BM, STAGES);
pub const K_MULTIPLE: u32 = wgmma_tile::K_MULTIPLE;

crate::kernel! {
    /// v08: v07's wgmmas on a 4-stage TMA ring with full/empty mbarriers; thread 0 issues
    /// the copies. sm_90a only.
    #[cfg(target_feature = "sm_90a")]
    pub unsafe fn bf16_gemm_v08_tma(
        m: u32,
        n: u32,
        k: u32,
        x_map: *const crate::tensor_map::TensorMap,
        w_map: *const crate::tensor_map::TensorMap,
        y: *mut u16,
    ) {
        crate::gpu::hopper::launch_bounds::<BLOCK_THREADS, 1>();
        // SAFETY: forwarded; the host encodes the maps with boxes 64×BM and 64×BN and the
        // 128-byte swizzle, and launches this geometry on sm_90a.
        unsafe { tma_ring::dev::body::<CONSUMERS, false, false, 1, STAGES>(m, n, k, x_map, w_map, y) }
    }
}
