//! bf16_gemm/v07_wgmma — Hopper's warpgroup MMA: `wgmma.mma_async.m64n256k16` reading both
//! operands from shared memory through descriptors (sm_90a only).
//!
//! Changed from v06, one idea: the multiply. A warp's `mma.sync.m16n8k16` needs its
//! fragments in registers (`ldmatrix`, 64 KiB of shared reads per K tile in v06) and is
//! issued 32 times per K16 step per warp; one `wgmma.m64n256k16` has the 4 warps of a
//! warpgroup multiply a 64×16 tile of x by a 16×256 tile of W straight out of shared memory,
//! asynchronously, in the layout the copy wrote (the 128-byte swizzle, `gpu::hopper`). The
//! loads stay as in v03-v06: `cp.async` by every thread, now written into the 128-byte
//! swizzle, a 4-stage ring with a barrier per K tile.
//!
//! Thread mapping: one warpgroup (128 threads) per block, a 64×256 tile of y (128 f32
//! accumulators a thread, laid out as `wgmma_tile::dev::store_tile` says). Copies: thread
//! `t` issues chunks `t + 128·i` of the x tile (4) and of the W tile (16) per K tile.
//!
//! Pipeline: tiles 0, 1 are issued first; for K tile t: `cp.async.wait_group 1` (tile t has
//! landed), `fence.proxy.async` (the wgmma reads through the async proxy what `cp.async`
//! wrote through the generic one), barrier; 4 wgmmas, commit; `wgmma.wait_group 1` (tile
//! t-1's wgmmas done in this warp); issue tile t+2 into the stage of tile t-2, whose
//! wgmmas every warp finished before the barrier above. So 2 tiles are in flight while
//! one is multiplied and one may still be in the tensor pipe.
//!
//! Memory traffic: per K tile and block (64 + 256)·128 B = 40 KiB from L2 for 2.1 MFLOP,
//! 0.0195 bytes per FLOP (x read N/256 times, W M/64 times: twice v06's W traffic, the price of one
//! warpgroup per block); shared memory 4 × 40 KiB = 160 KiB: one block per SM.
//!
//! Expected bound: one warpgroup per SM cannot keep the tensor pipe fed: its wgmmas wait on
//! the barrier, the copies and its own epilogue, with nothing else resident to fill the
//! gaps. The public worklogs put one-warpgroup wgmma kernels near 60% of cuBLAS on the H100.
//! K a multiple of 8; x, W 16-byte aligned.

use super::wgmma_tile;

/// One warpgroup.
pub const BLOCK_THREADS: u32 = wgmma_tile::WARPGROUP_THREADS;
/// Rows of y per block (one warpgroup's wgmma M).
pub const BM: u32 = wgmma_tile::WG_M;
/// Columns of y per block.
pub const BN: u32 = wgmma_tile::BN;
/// K per stage.
pub const BK: u32 = wgmma_tile::BK;
/// Shared-memory stages; tiles in flight while one is multiplied: STAGES - 2.
pub const STAGES: u32 = 4;
/// Dynamic shared memory (stages, alignment slack; the mbarrier space is unused here).
pub const SHARED_BYTES: u32 = wgmma_tile::shared_bytes(BM, STAGES);
pub const K_MULTIPLE: u32 = wgmma_tile::K_MULTIPLE;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod dev {
    use super::super::dev::{copy_chunks_async, pairs_storable};
    use super::super::wgmma_tile::{self, dev::mma_stage, dev::store_tile};
    use super::{BK, BLOCK_THREADS, BM, BN, STAGES};
    use crate::gpu::async_copy::{commit_group, shared_addr, wait_group};
    use crate::gpu::hopper::{
        fence_proxy_async_shared, launch_bounds, sw128_offset, wgmma_commit, wgmma_fence,
        wgmma_wait,
    };
    use crate::gpu::vector::F32x4;
    use crate::gpu::{shared, sync_threads, thread};

    const LOOKAHEAD: u32 = STAGES - 2;
    const STAGE: u32 = wgmma_tile::stage_bytes(BM);

    /// # Safety
    /// x is M×K, W is N×K, y is M×N, K % 8 == 0, x and W 16-byte aligned; BLOCK_THREADS
    /// threads, SHARED_BYTES of dynamic shared memory, grid (ceil(N/BN), ceil(M/BM)).
    #[inline(always)]
    pub unsafe fn body(m: u32, n: u32, k: u32, x: *const u16, w: *const u16, y: *mut u16) {
        const T: usize = BLOCK_THREADS as usize;
        const NA: usize = (BM * BK / 8 / BLOCK_THREADS) as usize;
        const NB: usize = (BN * BK / 8 / BLOCK_THREADS) as usize;
        launch_bounds::<BLOCK_THREADS, 1>();
        // The swizzle is a function of address bits: stages start on 1024-byte boundaries.
        let base = (shared_addr(shared::dynamic_shared_mem::<F32x4>()) + 1023) & !1023;
        let t = thread::thread_idx_x();
        let (bm0, bn0) = (thread::block_idx_y() * BM, thread::block_idx_x() * BN);
        let tiles = k.div_ceil(BK);
        let stage = |tile: u32| base + (tile % STAGES) * STAGE;
        let load = |tile: u32| {
            let s = stage(tile);
            // SAFETY: copy_chunks_async reads inside x and W only (zero-filling the rest) and
            // writes BM (BN) rows of 8 chunks at sw128_offset inside the stage's x (W) tile.
            unsafe {
                copy_chunks_async::<{ BM as usize }, { BK as usize }, T, NA>(
                    x,
                    m,
                    k,
                    bm0,
                    tile * BK,
                    t,
                    s,
                    sw128_offset,
                );
                copy_chunks_async::<{ BN as usize }, { BK as usize }, T, NB>(
                    w,
                    n,
                    k,
                    bn0,
                    tile * BK,
                    t,
                    s + BM * BK * 2,
                    sw128_offset,
                );
            }
        };
        let mut acc = [0.0f32; wgmma_tile::ACC];
        for tile in 0..LOOKAHEAD {
            if tile < tiles {
                load(tile);
            }
            commit_group();
        }
        for tile in 0..tiles {
            // Groups up to tile + LOOKAHEAD - 1 are committed: tile `tile` is the oldest.
            wait_group::<{ LOOKAHEAD - 1 }>();
            fence_proxy_async_shared();
            sync_threads();
            wgmma_fence();
            let s = stage(tile);
            // SAFETY: the whole warpgroup is here; stage `s` is complete and visible to the
            // async proxy (wait, fence, barrier).
            unsafe { mma_stage(&mut acc, s, s + BM * BK * 2) };
            wgmma_commit();
            wgmma_wait::<1>();
            // Stage of tile + LOOKAHEAD = stage of tile - 2: every warp waited for its
            // wgmmas of tile - 2 (wait_group 1 in the previous iteration) before the barrier.
            if tile + LOOKAHEAD < tiles {
                load(tile + LOOKAHEAD);
            }
            commit_group();
        }
        wgmma_wait::<0>();
        // SAFETY: store_tile masks against M and N.
        unsafe { store_tile(y, m, n, bm0, bn0, t, &acc, pairs_storable(y, n)) };
    }
}

crate::kernel! {
    /// v07: one warpgroup's `wgmma.m64n256k16` from 128-byte-swizzled shared tiles loaded
    /// by a 4-stage `cp.async` ring. sm_90a only.
    #[cfg(target_feature = "sm_90a")]
    pub unsafe fn bf16_gemm_v07_wgmma(
        m: u32,
        n: u32,
        k: u32,
        x: *const u16,
        w: *const u16,
        y: *mut u16,
    ) {
        // SAFETY: forwarded; the host launches this geometry on sm_90a and checks K %
        // K_MULTIPLE and the 16-byte alignment of x and W.
        unsafe { dev::body(m, n, k, x, w, y) }
    }
}
