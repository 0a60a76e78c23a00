//! bf16_gemm/v02_smem_ldmatrix — block tiles in shared memory, fragments by `ldmatrix`.
//!
//! Changed from v01: the block stages a 128×32 tile of x and a 128×32 tile of W in shared
//! memory per K step, with 16-byte global loads (8 bf16 each), and the warps take their mma
//! fragments from there with `ldmatrix.sync.aligned.m8n8.x4` (one instruction per 16×16
//! piece, in exactly the register layout mma wants). Each warp now owns a 64×32 warp tile,
//! 4×4 mma tiles of 16×8: per 16 of K it loads 4 A and 2 B `ldmatrix.x4` and issues 16 mmas
//! (v01: 6 global loads for 2). Tile rows are padded from 64 to 80 bytes so that the eight
//! 16-byte rows of one `ldmatrix` phase hit distinct banks (stride 80 bytes = 20 banks: rows
//! 0..7 start at banks 0, 20, 8, 28, 16, 4, 24, 12).
//!
//! Loop per K tile: 16-byte `ld.global.nc` of both tiles into registers, `st.shared.v4`,
//! barrier, two K16 steps of mma, barrier (the next tile overwrites the one just read).
//!
//! Thread mapping: 8 warps in 2 (M) × 4 (N), warp `w` at rows `(w / 4)·64`, columns
//! `(w % 4)·32` of the 128×128 block tile; tile loads: thread `t` moves 16-byte chunks `t`
//! and `t + 256` of each tile (row `idx / 4`, chunk `idx % 4`).
//!
//! Memory traffic: x is read N/128 times and W M/128 times (from L2, mostly); per block and
//! K tile 16 KiB of global loads for 128·128·32 multiply-adds; shared: each tile element is
//! written once and read by the 4 (x) or 2 (W) warps that share its rows.
//!
//! Expected bound: latency: every K tile waits for its global loads with no overlap (two
//! barriers per tile, 16 warps per SM at most). K must be a multiple of 8 (16-byte chunks of
//! aligned rows); x, W must be 16-byte aligned.

pub const BLOCK_THREADS: u32 = 256;
/// Rows of y per block.
pub const BM: u32 = 128;
/// Columns of y per block.
pub const BN: u32 = 128;
/// K per shared-memory tile (two mma K steps).
pub const BK: u32 = 32;
/// Row stride of the shared tiles, in bf16: BK plus 8 (16 bytes) of padding.
pub const LDS: u32 = BK + 8;
/// The warp tile: WM×WN of y, MI×NI mma tiles of 16×8.
pub const WM: u32 = 64;
pub const WN: u32 = 32;
pub const MI: usize = (WM / 16) as usize;
pub const NI: usize = (WN / 8) as usize;
/// Dynamic shared memory: the x tile (BM rows) then the W tile (BN rows), LDS bf16 a row.
pub const SHARED_BYTES: u32 = (BM + BN) * LDS * 2;
/// 16-byte loads of rows: K a multiple of 8.
pub const K_MULTIPLE: u32 = 8;

const _: () = assert!(BLOCK_THREADS == 32 * (BM / WM) * (BN / WN));
const _: () = assert!(
    (BM * BK / 8).is_multiple_of(BLOCK_THREADS) && (BN * BK / 8).is_multiple_of(BLOCK_THREADS)
);

/// Byte offset of 16-byte chunk `chunk` of row `row` in a padded tile.
pub const fn padded_offset(row: u32, chunk: u32) -> u32 {
    row * LDS * 2 + chunk * 16
}

#[cfg(target_arch = "nvptx64")]
use super::dev::{fetch_chunks, mma_k16, pairs_storable, store_chunks, store_warp_tile};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::async_copy::shared_addr;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::vector::F32x4;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, sync_threads, thread};

#[cfg(target_arch = "nvptx64")]
const T: usize = BLOCK_THREADS as usize;
#[cfg(target_arch = "nvptx64")]
const NA: usize = (BM * BK / 8) as usize / T;
#[cfg(target_arch = "nvptx64")]
const NB: usize = (BN * BK / 8) as usize / T;

crate::kernel! {
    /// v02: `y = x·Wᵀ` from shared-memory tiles, `ldmatrix` fragments, 64×32 warp tiles.
    pub unsafe fn bf16_gemm_v02_smem_ldmatrix(
        m: u32,
        n: u32,
        k: u32,
        x: *const u16,
        w: *const u16,
        y: *mut u16,
    ) {
        // Asked for as F32x4 so the shared block is declared 16-byte aligned.
        let a_s = shared_addr(shared::dynamic_shared_mem::<F32x4>());
        let b_s = a_s + BM * LDS * 2;
        let t = thread::thread_idx_x();
        let (lane, warp) = (t % 32, t / 32);
        let (bm0, bn0) = (thread::block_idx_y() * BM, thread::block_idx_x() * BN);
        let wm0 = (warp / (BN / WN)) * WM;
        let wn0 = (warp % (BN / WN)) * WN;
        let mut acc = [[[0.0f32; 4]; NI]; MI];
        let mut k0 = 0;
        while k0 < k {
            // SAFETY: fetch_chunks reads only inside x and W (16-byte aligned rows: the
            // host checks K % 8 == 0 and the buffers are 16-byte aligned); stores and
            // ldmatrix stay inside the two padded tiles of SHARED_BYTES. The first barrier
            // makes the tiles visible to all warps, the second keeps the next tile's stores
            // after every warp's reads.
            unsafe {
                let ra = fetch_chunks::<{ BM as usize }, { BK as usize }, T, NA>(x, m, k, bm0, k0, t);
                let rb = fetch_chunks::<{ BN as usize }, { BK as usize }, T, NB>(w, n, k, bn0, k0, t);
                store_chunks::<{ BK as usize }, T, NA>(&ra, t, a_s, padded_offset);
                store_chunks::<{ BK as usize }, T, NB>(&rb, t, b_s, padded_offset);
                sync_threads();
                mma_k16::<MI, NI>(&mut acc, a_s, b_s, wm0, wn0, 0, lane, padded_offset);
                mma_k16::<MI, NI>(&mut acc, a_s, b_s, wm0, wn0, 1, lane, padded_offset);
                sync_threads();
            }
            k0 += BK;
        }
        // SAFETY: store_warp_tile masks every store against M and N; all lanes are here.
        unsafe {
            store_warp_tile::<MI, NI>(y, m, n, bm0 + wm0, bn0 + wn0, lane, &acc, pairs_storable(y, n))
        };
    }
}
