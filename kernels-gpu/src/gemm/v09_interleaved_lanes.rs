//! gemm/v09_interleaved_lanes — v08 with lanes placed so each shared read costs 2 wavefronts.
//!
//! Changed from v08: only the map from a lane to its 4×4 patch of the 16×32 sub-tile. A
//! warp's `ld.shared.v4` returns 32 × 16 bytes, and the shared-memory pipe returns 128 bytes
//! per cycle (a "wavefront"), so it takes 4 wavefronts, unless neighbouring lanes ask for
//! the same address: when every lane pair (l, l^1) or every pair (l, l^2) reads one
//! address, the answer is packed into 2 wavefronts. In v07/v08 lanes are 8 wide along N,
//! row-major (`lane / 8`, `lane % 8`): pairs (l, l^1) share A's row (2 wavefronts for A),
//! but no pair shares B's column (4 for B): 12 wavefronts per k for 64 FMAs per lane.
//! Here lane bits 0, 2, 3 pick the column and bits 1, 4 the row (CUTLASS's "interleaved"
//! SIMT layout): (l, l^1) still share the row for A, and (l, l^2) share the column for B,
//! so both reads take 2 wavefronts: 8 per k, a third less shared-pipe time beside the FMAs.
//!
//! Thread mapping: as v08, except lane `l`: rows `4·(b1 + 2·b4)`, columns
//! `4·(b0 + 2·b2 + 4·b3)` of each 16×32 sub-tile, `bi` = bit i of `l`. Each row of the
//! sub-tile is still read and written by 8 lanes covering all 32 columns, so the epilogue's
//! 16-byte stores still fill whole 128-byte lines.
//! Memory traffic: as v08 (global and shared bytes unchanged; fewer shared wavefronts).
//!
//! Expected bound: FMA issue, a few percent over v08 if the shared pipe held it back.
//! Measured on the H200 (2026-12-02 13:22): the wavefronts fell as predicted (ncu: 3.00 ->
//! 2.00 per `ld.shared.v4`), the speed did not follow: 42.4 TFLOP/s at 4096³ and 42.8 at
//! 8192³, 4% under v08 (83-84% of cuBLAS). The shared pipe was not v08's limit; this step
//! stays as that measured lesson.

use super::warp_tile_pipeline::TwoStageGeometry;

/// The step's geometry: v08's, unchanged (only the lane map below differs).
pub const GEOMETRY: TwoStageGeometry = super::v08_double_buffered::GEOMETRY;

/// `GEOMETRY`'s block tile (BM×BN of C, stepping BK along K), threads and shared memory.
pub const BM: u32 = GEOMETRY.bm;
pub const BN: u32 = GEOMETRY.bn;
pub const BK: u32 = GEOMETRY.bk;
pub const THREADS: u32 = GEOMETRY.threads;
pub const SHARED_F32: u32 = GEOMETRY.shared_f32();

/// Where lane `lane` sits in a 16×32 sub-tile: the (row, column) of its TM×TN patch.
/// Column index from lane bits 0, 2, 3; row index from bits 1, 4.
pub const fn lane_origin(lane: u32) -> (u32, u32) {
    let row = ((lane >> 1) & 1) | (((lane >> 4) & 1) << 1);
    let col = (lane & 1) | (((lane >> 2) & 1) << 1) | (((lane >> 3) & 1) << 2);
    (row * GEOMETRY.tm, col * GEOMETRY.tn)
}

// The map above covers exactly a 4 × 8 grid of lanes of 4×4 patches: a 16×32 sub-tile.
const _: () = assert!(
    GEOMETRY.wm / GEOMETRY.wmiter == 4 * GEOMETRY.tm
        && GEOMETRY.wn / GEOMETRY.wniter == 8 * GEOMETRY.tn
);

super::warp_tile_pipeline::two_stage_entry! {
    /// v09: v08's pipeline and `GEOMETRY`, lanes interleaved by [`lane_origin`].
    gemm_v09_interleaved_lanes, GEOMETRY, lane_origin
}
