//! bf16_gemm/v04_swizzled — XOR-swizzled shared tiles and 64×64 warp tiles.
//!
//! Changed from v03 (same 4-stage `cp.async` pipeline body, `v03::pipeline`, BK = 32):
//! - Layout: tile rows are 64 bytes (32 bf16), unpadded; 16-byte chunk `c` of row `r` lives
//!   at chunk `c ^ ((r >> 1) & 3)` ([`super::swizzle_chunk`]). The 8 rows of one `ldmatrix`
//!   phase then cover all 32 banks once (bank-conflict-free), as the padding did, without
//!   the 25% of shared memory the padding cost; the `cp.async` writes stay conflict-free
//!   too (a warp writes 8 whole rows).
//! - Tiles: a 128×256 block tile and 64×64 warp tiles (4×8 mma tiles of 16×8, 128 f32
//!   accumulators a lane), 8 warps in 2 (M) × 4 (N). Per K16 step a warp issues 4 + 4
//!   `ldmatrix.x4` for 32 mmas (v03: 6 for 16), and the block reads (128 + 256)·32 bf16 of
//!   global memory per 128·256·32 multiply-adds (v03: (128 + 128)·32 per 128·128·32), so
//!   L2 traffic per FLOP drops by a quarter.
//!
//! Thread mapping: warp `w` at rows `(w / 4)·64`, columns `(w % 4)·64` of the block tile;
//! copies: thread `t` issues chunks `t + 256·i` (row `idx / 4`, chunk `idx % 4`), 2 of the x
//! tile and 4 of the W tile per K tile.
//!
//! Memory traffic: x is read N/256 times and W M/128 times (L2); shared: 4 stages of
//! (128 + 256)·64 bytes (96 KiB: one block per SM, 8 warps).
//!
//! Expected bound: `mma.sync` issue (the `ceilings_mma_throughput` row), with the
//! `ldmatrix`s and the barrier per K tile as the overhead; the target is ~60% of cuBLAS's
//! BF16 at 4096³. K a multiple of 8; x, W 16-byte aligned.

use super::swizzle_chunk;

pub const BLOCK_THREADS: u32 = 256;
/// Rows of y per block.
pub const BM: u32 = 128;
/// Columns of y per block.
pub const BN: u32 = 256;
/// K per stage (rows of 64 bytes: the swizzle is for exactly four 16-byte chunks).
pub const BK: u32 = 32;
/// The warp tile: WM×WN of y, MI×NI mma tiles of 16×8.
pub const WM: u32 = 64;
pub const WN: u32 = 64;
pub const MI: usize = (WM / 16) as usize;
pub const NI: usize = (WN / 8) as usize;
/// Shared-memory stages (the pipeline body is v03's, which waits for 4).
pub const STAGES: u32 = super::v03_cp_async_pipeline::STAGES;
/// Bytes of one stage: the x tile (BM rows of 64 bytes) then the W tile (BN rows).
pub const STAGE_BYTES: u32 = (BM + BN) * BK * 2;
/// Dynamic shared memory: `STAGES` stages.
pub const SHARED_BYTES: u32 = STAGES * STAGE_BYTES;
/// 16-byte copies of rows: K a multiple of 8.
pub const K_MULTIPLE: u32 = 8;

const _: () = assert!(BLOCK_THREADS == 32 * (BM / WM) * (BN / WN));
const _: () = assert!(
    (BM * BK / 8).is_multiple_of(BLOCK_THREADS) && (BN * BK / 8).is_multiple_of(BLOCK_THREADS)
);

/// Byte offset of logical 16-byte chunk `chunk` (0..4) of row `row` in a swizzled tile.
/// A bijection of `rows × 4` chunks onto the tile's `rows × 4` chunk slots (see
/// [`super::swizzled_offset`] in elements).
pub const fn swizzled_byte_offset(row: u32, chunk: u32) -> u32 {
    row * BK * 2 + swizzle_chunk(row, chunk) * 16
}

crate::kernel! {
    /// v04: `y = x·Wᵀ` with swizzled shared tiles, 64×64 warp tiles, a 128×256 block tile
    /// and v03's 4-stage `cp.async` pipeline.
    pub unsafe fn bf16_gemm_v04_swizzled(
        m: u32,
        n: u32,
        k: u32,
        x: *const u16,
        w: *const u16,
        y: *mut u16,
    ) {
        // SAFETY: the kernel's parameters, forwarded; the host launches BLOCK_THREADS
        // threads with SHARED_BYTES of dynamic shared memory and checks K % K_MULTIPLE;
        // swizzled_byte_offset permutes chunks inside their row, so BM rows stay inside
        // BM·64 bytes and BN rows inside BN·64.
        unsafe {
            super::v03_cp_async_pipeline::pipeline::<
                { BM as usize },
                { BN as usize },
                { BK as usize },
                { BLOCK_THREADS as usize },
                { WM as usize },
                { WN as usize },
                MI,
                NI,
                { (BM * BK / 8 / BLOCK_THREADS) as usize },
                { (BN * BK / 8 / BLOCK_THREADS) as usize },
                STAGE_BYTES,
                { BM * BK * 2 },
            >(m, n, k, x, w, y, swizzled_byte_offset)
        }
    }
}
