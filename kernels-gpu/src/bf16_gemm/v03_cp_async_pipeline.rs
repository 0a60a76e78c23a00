//! bf16_gemm/v03_cp_async_pipeline — v02 fed by a 4-stage `cp.async` pipeline.
//!
//! Changed from v02 (same 128×128×32 block tile, 8 warps of 64×32, padded 80-byte rows,
//! `ldmatrix` fragments): the tiles move with 16-byte `cp.async.cg` copies straight into
//! shared memory (no registers, no waiting at issue), into `STAGES` = 4 shared stages. While
//! the warps compute on tile t, tiles t+1 .. t+3 are in flight. Chunks outside x or W copy 0
//! bytes and zero-fill (the K tail and the M, N edges).
//!
//! Pipeline: prologue issues tiles 0..2 into stages 0..2, one commit group each. For each
//! tile t: `cp.async.wait_group 2` (tile t's group has landed for this thread), barrier
//! (every thread's copies of tile t are visible, and every warp is done with tile t-1),
//! issue tile t+3 into stage (t+3) % 4 = (t-1) % 4 (the stage just freed) and commit, then two
//! K16 steps of mma on stage t % 4. One barrier per K tile. Past the last tile the commits
//! are empty groups, which keeps the wait count uniform.
//!
//! Thread mapping: as v02; copies: thread `t` issues chunks `t` and `t + 256` of each tile.
//!
//! Memory traffic: global as v02; shared: 4 stages of (128 + 128)·40 bf16 (80 KiB, above the
//! 48 KiB default: the host opts in).
//!
//! Expected bound: the mma and ldmatrix issue of 16 warps per SM (two blocks), with the
//! global latency hidden behind three tiles in flight; still one `ldmatrix` per 4 mmas and
//! 4-byte scattered stores in the epilogue. K a multiple of 8; x, W 16-byte aligned.

use super::v02_smem_ldmatrix as v02;

pub const BLOCK_THREADS: u32 = v02::BLOCK_THREADS;
/// Rows of y per block.
pub const BM: u32 = v02::BM;
/// Columns of y per block.
pub const BN: u32 = v02::BN;
/// K per stage.
pub const BK: u32 = v02::BK;
/// Shared-memory stages of the pipeline (the body's `cp.async.wait_group 2` assumes 4).
pub const STAGES: u32 = 4;
/// Bytes of one stage: the x tile (BM rows) then the W tile (BN rows), padded rows.
pub const STAGE_BYTES: u32 = v02::SHARED_BYTES;
/// Dynamic shared memory: `STAGES` stages.
pub const SHARED_BYTES: u32 = STAGES * STAGE_BYTES;
/// 16-byte copies of rows: K a multiple of 8.
pub const K_MULTIPLE: u32 = 8;

#[cfg(target_arch = "nvptx64")]
use super::dev::{copy_chunks_async, mma_k16, pairs_storable, store_warp_tile};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::async_copy::{commit_group, shared_addr, wait_group};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::vector::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, sync_threads, thread};

/// The 4-stage `cp.async` kernel body (v03's), generic over the geometry so that v04 runs
/// it with its own: a BM×BN block tile stepping BK (= 32: two K16 steps) of K, T threads
/// in warps of WM×WN warp tiles (MI×NI mma tiles), NA / NB 16-byte chunks of the x / W tile
/// per thread, stages of STAGE bytes with the W tile at byte B_OFF, and the tile layout
/// `off(row, chunk)` (byte offset of a 16-byte chunk inside a tile).
///
/// # Safety
/// x is M×K, W is N×K, y is M×N, K % 8 == 0, x and W 16-byte aligned; the launch has T
/// threads and 4·STAGE bytes of dynamic shared memory; `off` maps BM (x) and BN (W) rows
/// of 4 chunks inside `B_OFF` and `STAGE - B_OFF` bytes, 16-byte aligned.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn pipeline<
    const BM: usize,
    const BN: usize,
    const BK: usize,
    const T: usize,
    const WM: usize,
    const WN: usize,
    const MI: usize,
    const NI: usize,
    const NA: usize,
    const NB: usize,
    const STAGE: u32,
    const B_OFF: u32,
>(
    m: u32,
    n: u32,
    k: u32,
    x: *const u16,
    w: *const u16,
    y: *mut u16,
    off: impl Fn(u32, u32) -> u32 + Copy,
) {
    const {
        assert!(BK == 32 && WM == 16 * MI && WN == 8 * NI);
        assert!(T == 32 * (BM / WM) * (BN / WN) && BM.is_multiple_of(WM) && BN.is_multiple_of(WN));
    };
    // Asked for as F32x4 so the shared block is declared 16-byte aligned.
    let smem = shared_addr(shared::dynamic_shared_mem::<F32x4>());
    let t = thread::thread_idx_x();
    let (lane, warp) = (t % 32, t / 32);
    let (bm0, bn0) = (
        thread::block_idx_y() * BM as u32,
        thread::block_idx_x() * BN as u32,
    );
    let wm0 = (warp / (BN / WN) as u32) * WM as u32;
    let wn0 = (warp % (BN / WN) as u32) * WN as u32;
    let tiles = k.div_ceil(BK as u32);
    let stage = |s: u32| smem + (s % STAGES) * STAGE;
    // Issue the copies of K tile `tile` into its stage (not committed).
    let load = |tile: u32| {
        let s = stage(tile);
        let k0 = tile * BK as u32;
        // SAFETY: copy_chunks_async reads inside x and W only (zero-filling the rest) and
        // writes inside the stage (the caller's `off` contract).
        unsafe {
            copy_chunks_async::<BM, BK, T, NA>(x, m, k, bm0, k0, t, s, off);
            copy_chunks_async::<BN, BK, T, NB>(w, n, k, bn0, k0, t, s + B_OFF, off);
        }
    };
    let mut acc = [[[0.0f32; 4]; NI]; MI];
    for s in 0..STAGES - 1 {
        if s < tiles {
            load(s);
        }
        commit_group();
    }
    for tile in 0..tiles {
        // Tile `tile` is group `tile`; groups up to tile + 2 are committed: at most 2 may
        // stay in flight.
        wait_group::<{ STAGES - 2 }>();
        sync_threads();
        // Stage (tile + 3) % 4 was last read while computing tile - 1, which every warp
        // finished before the barrier above.
        let next = tile + STAGES - 1;
        if next < tiles {
            load(next);
        }
        commit_group();
        let a_s = stage(tile);
        // SAFETY: the stage holds tile `tile`, complete and visible after the wait and the
        // barrier; ldmatrix addresses stay inside it (`off`).
        unsafe {
            mma_k16::<MI, NI>(&mut acc, a_s, a_s + B_OFF, wm0, wn0, 0, lane, off);
            mma_k16::<MI, NI>(&mut acc, a_s, a_s + B_OFF, wm0, wn0, 1, lane, off);
        }
    }
    // SAFETY: store_warp_tile masks every store against M and N; all lanes are here.
    unsafe {
        store_warp_tile::<MI, NI>(
            y,
            m,
            n,
            bm0 + wm0,
            bn0 + wn0,
            lane,
            &acc,
            pairs_storable(y, n),
        )
    };
}

crate::kernel! {
    /// v03: v02's tiles and warp tiles, fed by a 4-stage `cp.async` pipeline.
    pub unsafe fn bf16_gemm_v03_cp_async_pipeline(
        m: u32,
        n: u32,
        k: u32,
        x: *const u16,
        w: *const u16,
        y: *mut u16,
    ) {
        // SAFETY: the kernel's parameters, forwarded; the host launches BLOCK_THREADS
        // threads with SHARED_BYTES of dynamic shared memory and checks K % K_MULTIPLE;
        // padded_offset keeps 128 rows of 4 chunks inside STAGE_BYTES / 2 bytes.
        unsafe {
            pipeline::<
                { BM as usize },
                { BN as usize },
                { BK as usize },
                { BLOCK_THREADS as usize },
                { v02::WM as usize },
                { v02::WN as usize },
                { v02::MI },
                { v02::NI },
                { (BM * BK / 8 / BLOCK_THREADS) as usize },
                { (BN * BK / 8 / BLOCK_THREADS) as usize },
                STAGE_BYTES,
                { BM * v02::LDS * 2 },
            >(m, n, k, x, w, y, v02::padded_offset)
        }
    }
}
