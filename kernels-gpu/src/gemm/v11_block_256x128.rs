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

/// The constants the CUDA C++ twin (`host/twins/gemm.cu`) is compiled with (`crate::twins`).
#[cfg(not(target_arch = "nvptx64"))]
pub const TWIN_DEFINES: &[(&str, i64)] = &[
    ("GEMM_V11_BM", GEOMETRY.bm as i64),
    ("GEMM_V11_BN", GEOMETRY.bn as i64),
    ("GEMM_V11_BK", GEOMETRY.bk as i64),
    ("GEMM_V11_LDA", GEOMETRY.lda as i64),
    ("GEMM_V11_THREADS", GEOMETRY.threads as i64),
    ("GEMM_V11_WM", GEOMETRY.wm as i64),
    ("GEMM_V11_WN", GEOMETRY.wn as i64),
    ("GEMM_V11_WMITER", GEOMETRY.wmiter as i64),
    ("GEMM_V11_WNITER", GEOMETRY.wniter as i64),
    ("GEMM_V11_NA", GEOMETRY.a_float4s_per_thread() as i64),
    ("GEMM_V11_NB", GEOMETRY.b_float4s_per_thread() as i64),
    ("GEMM_V11_R", GEOMETRY.thread_rows() as i64),
    ("GEMM_V11_C", GEOMETRY.thread_cols() as i64),
    ("GEMM_V11_SHARED_F32", SHARED_F32 as i64),
    ("GEMM_V11_STAGES", super::warp_tile_pipeline::STAGES as i64),
    ("GEMM_V11_SUB_M", super::warp_tile_pipeline::SUB_M as i64),
    ("GEMM_V11_SUB_N", super::warp_tile_pipeline::SUB_N as i64),
    // The lane map, crate::gemm::v07_warptile::lane_origin: lanes_n = WN / WNITER / TN
    // lanes along N, patches of TM×TN.
    ("GEMM_V11_LANE_TM", super::v07_warptile::TM as i64),
    ("GEMM_V11_LANE_TN", super::v07_warptile::TN as i64),
    (
        "GEMM_V11_LANES_N",
        (super::v07_warptile::WN / super::v07_warptile::WNITER / super::v07_warptile::TN) as i64,
    ),
];

use super::warp_tile_pipeline::TwoStageGeometry;

/// The step's geometry: v10's with the block tile twice as tall (BM = 256), so 8 warps
/// (4×2) and a transposed A tile of 256 + 4 floats per row. The rest (warp tile, lane
/// patch, BN, BK) is v10's.
pub const GEOMETRY: TwoStageGeometry = TwoStageGeometry {
    bm: 256,
    lda: 256 + 4,
    threads: 256,
    ..super::v10_warptile_64x64::GEOMETRY
};
const _: () = GEOMETRY.check();

/// `GEOMETRY`'s block tile (BM×BN of C, stepping BK along K), threads and shared memory.
pub const BM: u32 = GEOMETRY.bm;
pub const BN: u32 = GEOMETRY.bn;
pub const BK: u32 = GEOMETRY.bk;
pub const THREADS: u32 = GEOMETRY.threads;
/// 49 KiB: the host opts in past 48.
pub const SHARED_F32: u32 = GEOMETRY.shared_f32();

super::warp_tile_pipeline::two_stage_entry! {
    /// v11: the two-stage pipeline at `GEOMETRY`, lanes mapped as in v07.
    gemm_v11_block_256x128, GEOMETRY, crate::gemm::v07_warptile::lane_origin
}
