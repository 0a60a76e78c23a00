//! bf16_gemm/v06_fragment_double_buffer — v04 with its `ldmatrix` fragments double-buffered
//! across K16 steps, the barrier included.
//!
//! Changed from v04 (same 128×256 block tile, 64×64 warp tiles, swizzled 64-byte rows, BK =
//! 32, 4 `cp.async` stages, one barrier per K tile), one idea: the fragments of K16 step s+1
//! are loaded (`ldmatrix`) *before* the 32 mmas of step s are issued, into a second set of
//! fragment registers, and this runs across the K-tile boundary too: the `cp.async` wait and
//! the barrier for tile t+1 sit before the last K16 step of tile t, so the first fragments of
//! tile t+1 are in flight while the mmas of tile t's last step run. In v04 every K tile
//! starts with barrier → 8 warps × 16 `ldmatrix` (one burst of 64 KiB through the 128 B/clk
//! shared pipe, about 500 clocks) → mmas: with one block (8 warps) per SM, all in lockstep
//! behind the barrier, the shared pipe and the tensor pipe mostly take turns. Here a warp
//! leaves the barrier with 32 mmas whose operands are already in registers.
//!
//! Pipeline (per thread): prologue issues tiles 0..2 into stages 0..2 (one commit group
//! each), waits for tile 0, barrier, loads the fragments of (tile 0, step 0). Then for each
//! tile t:
//! - step 0: `ldmatrix` (t, step 1) → buffer 1; issue tile t+3 into stage (t+3) % 4 and
//!   commit; 32 mmas on buffer 0;
//! - step 1: `cp.async.wait_group 2` (tile t+1 has landed for this thread) and barrier (all
//!   threads' copies of tile t+1 are visible); `ldmatrix` (t+1, step 0) → buffer 0; 32 mmas
//!   on buffer 1.
//!
//! The last read of stage (t-1) % 4 is the `ldmatrix` of (t-1, step 1), issued before the
//! barrier of tile t-1; tile t+3 is written into that stage after it, so one barrier per K
//! tile still suffices. In the last tile the (t+1, step 0) loads read a stage that no copy
//! writes any more (stale or never-written bytes, inside the allocation) into a buffer that
//! is never used: branch-free instead of a guard around them.
//!
//! Thread mapping: as v04: warp `w` at rows `(w / 4)·64`, columns `(w % 4)·64` of the block
//! tile, 4×8 mma tiles of 16×8 (128 f32 accumulators a lane) plus two fragment sets of
//! 4×4 (A) + 8×2 (B) registers; copies: thread `t` issues chunks `t + 256·i` (row `idx / 4`,
//! chunk `idx % 4`), 2 of the x tile and 4 of the W tile per K tile.
//!
//! Memory traffic: as v04. L2 → SM: (128 + 256)·32·2 = 24 KiB per K tile per block, 0.0117
//! bytes per FLOP (x read N/256 times, W M/128 times); shared per K tile and SM: 24 KiB of
//! `cp.async` writes + 8 warps × 16 `ldmatrix.x4` × 512 B = 64 KiB of reads; 4 stages of
//! 24 KiB = 96 KiB of shared memory (one block, 8 warps, per SM, as v04: the registers decide).
//!
//! Expected bound: per K tile and SM sub-partition, 2 warps × 64 mmas at the measured
//! mma.sync rate (628 TFLOP/s: one m16n8k16 per ~6.8 clocks per sub-partition) is ~870
//! clocks; the shared pipe needs ~700 of them (88 KiB at 128 B/clk) and, at 470 TFLOP/s, L2
//! must deliver 5.5 TB/s (80% of the measured 6.9 TB/s L2 read ceiling). v04's 312 TFLOP/s
//! is ~1750 clocks per K tile; with the load burst off the critical path the remaining
//! overheads are the barrier skew and the mma drain around it (~100 clocks). Predicted:
//! ~460 TFLOP/s at 4096³ and 8192³ (tensor pipe ~570 if everything overlapped, then held
//! back by shared-pipe and L2 contention, both near 80% busy). K a multiple of 8; x, W
//! 16-byte aligned.

use super::v04_swizzled as v04;

pub const BLOCK_THREADS: u32 = v04::BLOCK_THREADS;
/// Rows of y per block.
pub const BM: u32 = v04::BM;
/// Columns of y per block.
pub const BN: u32 = v04::BN;
/// K per stage (two K16 steps; rows of 64 bytes, v04's swizzle).
pub const BK: u32 = v04::BK;
/// The warp tile: WM×WN of y, MI×NI mma tiles of 16×8.
pub const WM: u32 = v04::WM;
pub const WN: u32 = v04::WN;
pub const MI: usize = v04::MI;
pub const NI: usize = v04::NI;
/// Shared-memory stages (`cp.async.wait_group STAGES - 2` before the last K16 step).
pub const STAGES: u32 = 4;
/// Bytes of one stage: the x tile (BM rows of 64 bytes) then the W tile (BN rows).
pub const STAGE_BYTES: u32 = (BM + BN) * BK * 2;
/// Dynamic shared memory: `STAGES` stages.
pub const SHARED_BYTES: u32 = STAGES * STAGE_BYTES;
/// 16-byte copies of rows: K a multiple of 8.
pub const K_MULTIPLE: u32 = 8;

const _: () = assert!(BLOCK_THREADS == 32 * (BM / WM) * (BN / WN));
const _: () = assert!(BK == 32 && STAGES >= 3);
const _: () = assert!(
    (BM * BK / 8).is_multiple_of(BLOCK_THREADS) && (BN * BK / 8).is_multiple_of(BLOCK_THREADS)
);

#[cfg(target_arch = "nvptx64")]
mod dev {
    use super::super::dev::{copy_chunks_async, pairs_storable, store_warp_tile};
    use super::super::v04_swizzled::swizzled_byte_offset;
    use super::{BK, BLOCK_THREADS, BM, BN, MI, NI, STAGE_BYTES, STAGES, WM, WN};
    use crate::gpu::async_copy::{commit_group, shared_addr, wait_group};
    use crate::gpu::mma::{ldmatrix_x4, mma_m16n8k16_bf16};
    use crate::gpu::vector::F32x4;
    use crate::gpu::{shared, sync_threads, thread};

    /// The A (x) and B (W) fragments of one K16 step of a warp tile.
    pub type Frags = ([[u32; 4]; MI], [[u32; 2]; NI]);

    /// The fragments of K16 step `ks` (0 or 1) of the stage at `.shared` address `s`: one
    /// `ldmatrix.x4` per 16 rows of x (lane `l`: row `l % 16`, chunk `2·ks + l / 16`) and
    /// per 16 rows of W, i.e. two n8 tiles (lane `l`: row `l % 8 + (l / 16)·8`, chunk
    /// `2·ks + (l / 8) % 2`; registers 0,1 are the first n8 tile's `b`, 2,3 the second's),
    /// as v04's `mma_k16` loads them.
    ///
    /// # Safety
    /// `s` is a stage inside the dynamic shared memory (STAGE_BYTES, 16-byte aligned);
    /// `ks < 2`; all 32 lanes call it.
    #[inline(always)]
    pub unsafe fn load_frags(s: u32, wm0: u32, wn0: u32, ks: u32, lane: u32) -> Frags {
        let mut af = [[0u32; 4]; MI];
        let mut bf = [[0u32; 2]; NI];
        let b_s = s + BM * BK * 2;
        // SAFETY: rows < BM (x tile) and < BN (W tile), chunks < 4: swizzled_byte_offset
        // keeps them inside the stage's two tiles, 16-byte aligned.
        unsafe {
            unroll!(MI, i => {
                let row = wm0 + (i * 16) as u32 + lane % 16;
                af[i] = ldmatrix_x4(s + swizzled_byte_offset(row, 2 * ks + lane / 16));
            });
            unroll!(NI / 2, p => {
                let row = wn0 + (p * 16) as u32 + lane % 8 + (lane / 16) * 8;
                let r = ldmatrix_x4(b_s + swizzled_byte_offset(row, 2 * ks + (lane / 8) % 2));
                bf[2 * p] = [r[0], r[1]];
                bf[2 * p + 1] = [r[2], r[3]];
            });
        }
        (af, bf)
    }

    /// The MI×NI mmas of one K16 step on fragments already in registers.
    #[inline(always)]
    pub fn mma_frags(acc: &mut [[[f32; 4]; NI]; MI], f: &Frags) {
        unroll!(MI, i => {
            unroll!(NI, j => {
                acc[i][j] = mma_m16n8k16_bf16(f.0[i], f.1[j], acc[i][j]);
            });
        });
    }

    /// The whole kernel body (see the module docs).
    ///
    /// # Safety
    /// x is M×K, W is N×K, y is M×N, K % 8 == 0, x and W 16-byte aligned; the launch has
    /// BLOCK_THREADS threads and SHARED_BYTES of dynamic shared memory.
    #[inline(always)]
    pub unsafe fn body(m: u32, n: u32, k: u32, x: *const u16, w: *const u16, y: *mut u16) {
        const T: usize = BLOCK_THREADS as usize;
        const NA: usize = (BM * BK / 8 / BLOCK_THREADS) as usize;
        const NB: usize = (BN * BK / 8 / BLOCK_THREADS) as usize;
        // Asked for as F32x4 so the shared block is declared 16-byte aligned.
        let smem = shared_addr(shared::dynamic_shared_mem::<F32x4>());
        let t = thread::thread_idx_x();
        let (lane, warp) = (t % 32, t / 32);
        let (bm0, bn0) = (thread::block_idx_y() * BM, thread::block_idx_x() * BN);
        let wm0 = (warp / (BN / WN)) * WM;
        let wn0 = (warp % (BN / WN)) * WN;
        let tiles = k.div_ceil(BK);
        let stage = |tile: u32| smem + (tile % STAGES) * STAGE_BYTES;
        // Issue the copies of K tile `tile` into its stage (not committed).
        let load = |tile: u32| {
            let s = stage(tile);
            let k0 = tile * BK;
            // SAFETY: copy_chunks_async reads inside x and W only (zero-filling the rest)
            // and writes BM (BN) rows of 4 chunks at swizzled_byte_offset, inside the x (W)
            // tile of the stage.
            unsafe {
                copy_chunks_async::<{ BM as usize }, { BK as usize }, T, NA>(
                    x,
                    m,
                    k,
                    bm0,
                    k0,
                    t,
                    s,
                    swizzled_byte_offset,
                );
                copy_chunks_async::<{ BN as usize }, { BK as usize }, T, NB>(
                    w,
                    n,
                    k,
                    bn0,
                    k0,
                    t,
                    s + BM * BK * 2,
                    swizzled_byte_offset,
                );
            }
        };
        let mut acc = [[[0.0f32; 4]; NI]; MI];
        for s in 0..STAGES - 1 {
            if s < tiles {
                load(s);
            }
            commit_group();
        }
        // Tile 0 is group 0 of the STAGES - 1 committed.
        wait_group::<{ STAGES - 2 }>();
        sync_threads();
        // SAFETY: stage 0 holds tile 0, complete and visible.
        let mut f0 = unsafe { load_frags(stage(0), wm0, wn0, 0, lane) };
        for tile in 0..tiles {
            // K16 step 0. The fragments of step 1 of this tile, before step 0's mmas.
            // SAFETY: the stage holds tile `tile` (waited for and published by the barrier
            // before the previous loads of step 0).
            let f1 = unsafe { load_frags(stage(tile), wm0, wn0, 1, lane) };
            // Stage (tile + 3) % 4 = (tile - 1) % 4 was last read by the step-1 loads of
            // tile - 1, issued before the barrier of tile - 1 by every warp.
            let next = tile + STAGES - 1;
            if next < tiles {
                load(next);
            }
            commit_group();
            mma_frags(&mut acc, &f0);
            // K16 step 1. Groups up to tile + 3 are committed; tile + 1 must have landed:
            // at most 2 may stay in flight.
            wait_group::<{ STAGES - 2 }>();
            sync_threads();
            // SAFETY: stage (tile + 1) % 4 holds tile + 1, complete and visible after the
            // wait and the barrier (past the last tile: bytes nobody writes any more, loaded
            // into a buffer that is not used).
            f0 = unsafe { load_frags(stage(tile + 1), wm0, wn0, 0, lane) };
            mma_frags(&mut acc, &f1);
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
}

crate::kernel! {
    /// v06: v04 with the `ldmatrix` fragments of the next K16 step loaded before the mmas of
    /// the current one, across the K-tile barrier too.
    pub unsafe fn bf16_gemm_v06_fragment_double_buffer(
        m: u32,
        n: u32,
        k: u32,
        x: *const u16,
        w: *const u16,
        y: *mut u16,
    ) {
        // SAFETY: the kernel's parameters, forwarded; the host launches BLOCK_THREADS
        // threads with SHARED_BYTES of dynamic shared memory and checks K % K_MULTIPLE and
        // the 16-byte alignment of x and W.
        unsafe { dev::body(m, n, k, x, w, y) }
    }
}
