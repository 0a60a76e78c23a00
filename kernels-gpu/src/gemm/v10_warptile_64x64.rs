//! gemm/v10_warptile_64x64 — v08 with 64×64 warp tiles: 16×8 results per thread, 4 warps.
//!
//! Changed from v08 (same 128×128×16 block tile, same two stages with cp.async for B, same
//! lane map and 16×32 sub-tiles): the block tile is split among 4 warps (2×2) instead of 8,
//! so each warp tile is 64×64, covered by 4×2 sub-tiles, and each thread holds 16×8 = 128
//! results instead of 64. Per k step a thread now issues 6 `ld.shared.v4` (4 of A, 2 of B)
//! for 128 FMAs instead of 4 for 64: a third fewer shared reads per FMA, and every value
//! read is used 8 or 16 times, where v08 used it 8 times. Each tile's fixed cost (address
//! arithmetic, the copies' bookkeeping, the barrier) is spread over twice the FMAs. The
//! price is occupancy: 239 registers per thread, so 2 blocks of 4 warps (8 warps) per SM
//! instead of 16; each warp has 128 independent FMAs per k step to issue back to back,
//! which is the latency hiding this step trades occupancy for (cuBLAS's SIMT kernels do
//! the same).
//!
//! Thread mapping: warp `w`: rows `(w / 2)·64`, columns `(w % 2)·64` of the block tile;
//! lane `l` as v07 (rows `(l / 8)·4`, columns `(l % 8)·4` of each 16×32 sub-tile). Loads:
//! four float4 of A (registers, stored transposed) and four 16-byte cp.async of B per
//! thread per tile.
//! Memory traffic: global as v08; shared: 2 stages of BK·(LDA + BN) f32 (33 KiB per block),
//! 6 `ld.shared.v4` per 128 FMAs.
//!
//! Expected bound: FMA issue; above v08 if v08's time went to instructions beside the FMAs
//! and to shared-read issue, below it if 8 warps per SM cannot hide the barrier.
//! Measured on the H200 (2026-12-02 15:15): 43.7 TFLOP/s at 4096³, 44.4 at 8192³, 1% under
//! v08 (85% and 87% of cuBLAS). ncu at 4096³: warp instructions 2.48 G -> 2.42 G only, and
//! the issue slots used fell from 76% to 73% (2 warps per scheduler). The thread tile is
//! cuBLAS's; its block tile is not: v11.

use super::warp_tile_pipeline::TwoStageGeometry;

/// The step's geometry: v08's with 64×64 warp tiles of 4×2 sub-tiles, so 4 warps
/// (128 threads) per 128×128 block tile.
pub const GEOMETRY: TwoStageGeometry = TwoStageGeometry {
    wm: 64,
    wn: 64,
    wmiter: 4,
    wniter: 2,
    threads: 128,
    ..super::v08_double_buffered::GEOMETRY
};
const _: () = GEOMETRY.check();

/// `GEOMETRY`'s block tile (BM×BN of C, stepping BK along K), threads and shared memory.
pub const BM: u32 = GEOMETRY.bm;
pub const BN: u32 = GEOMETRY.bn;
pub const BK: u32 = GEOMETRY.bk;
pub const THREADS: u32 = GEOMETRY.threads;
pub const SHARED_F32: u32 = GEOMETRY.shared_f32();

super::warp_tile_pipeline::two_stage_entry! {
    /// v10: the two-stage pipeline at `GEOMETRY`, lanes mapped as in v07.
    gemm_v10_warptile_64x64, GEOMETRY, crate::gemm::v07_warptile::lane_origin
}
