//! gemm/v11_block_256x128 — v10's 64×64 warp tiles in a 256×128 block tile of 8 warps.
//!
//! Changed from v10 (same warp tile, lane map, 16×8 results per thread, two stages with
//! cp.async for B): the block tile doubles along M to 256×128 and holds 8 warps (4×2), the
//! shape cuBLAS's SIMT SGEMM uses on this GPU (ncu names its kernel
//! `..._tilesize256x128x8_stage3_warpsize4x2x1_ffma_...`). Each block reads a 256×16 slice of A
//! and a 16×128 slice of B per tile for 256×128×16 FMAs: a quarter fewer bytes from L2 per FMA
//! than 128×128 (1/256 + 1/128 against 2/128 per output and k). Occupancy stays at 8 warps
//! per SM (one block: 231 registers × 256 threads).
//!
//! Thread mapping: warp `w`: rows `(w / 2)·64`, columns `(w % 2)·64` of the block tile;
//! lanes as v07. Loads: four float4 of A (registers, stored transposed) and two 16-byte
//! cp.async of B per thread per tile.
//! Memory traffic: global: A read N/128 times, B M/256 times (mostly from L2); shared: 2
//! stages of BK·(LDA + BN) f32 (49 KiB, past the 48 KiB default: the host opts in).
//!
//! Expected bound: FMA issue; above v10 if the L2 feed or the shared stores held v10 back.
//! Measured on the H200 (2026-12-02 15:15): 47.2 TFLOP/s at 4096³, 47.9 at 8192³, 92.0% and
//! 93.5% of cuBLAS (51.3, 51.2), the ladder's best; ncu at 4096³: 2.38 G warp instructions,
//! issue slots 78% used (cuBLAS: 2.43 G, 87%). Worse than v08 where tiles are few (1024³,
//! 8192×128×8192: 32 blocks for 132 SMs).

// The warp tile, lane patch, BN, BK and the stages are v10's; only the block tile's height
// and what follows from it change.
pub use super::v10_warptile_64x64::{BK, BN, STAGES, TM, TN, WM, WMITER, WN, WNITER};

/// Block tile height: BM×BN of C.
pub const BM: u32 = 256;
/// Threads per block: one warp per warp tile (4×2 warps).
pub const THREADS: u32 = (BM / WM) * (BN / WN) * 32;
/// Row stride of the transposed A tile in shared memory (padded against bank conflicts).
pub const LDA: u32 = BM + 4;
/// f32 of one stage: A tile transposed (BK×LDA), then B tile (BK×BN).
pub const STAGE_F32: u32 = BK * LDA + BK * BN;
/// Dynamic shared memory (49 KiB: the host opts in past 48).
pub const SHARED_F32: u32 = STAGES * STAGE_F32;

two_stage_checks!();

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;

    two_stage_kernel!(
        gemm_v11_block_256x128,
        crate::gemm::v07_warptile::lane_origin
    );
}
