//! gemm/v08_double_buffered — v07 with two shared-memory stages and cp.async for B.
//!
//! Changed from v07 (same 128×128×16 block tile, 32×64 warp tiles, 8×8 results per
//! thread, same unrolled fragment-prefetching inner loop `warp_tile_pipeline::fragments`):
//! two shared-memory stages. While the warps compute on stage `s`, tile t+1 moves into stage
//! `s^1`, so a tile costs one barrier instead of two (the write-after-read barrier goes).
//!
//! - B: 16-byte `cp.async.cg` (two per thread per tile) straight into the next stage,
//!   without registers; at the edges the source-size operand zero-fills. Rows not 16-byte
//!   aligned (N % 4 != 0) go through registers with checked loads instead (slow path).
//! - A: stored transposed (`As[k][m]`, row stride LDA = BM + 4), which a 16-byte copy
//!   cannot do, so A goes as in v07: two 16-byte `ld.global.nc` into registers before the
//!   math, transposed `st.shared` into the next stage after it. (v08's first version used
//!   eight 4-byte `cp.async` per thread for A; the register route is 4x fewer requests.)
//!
//! Pipeline: prologue loads tile 0 into stage 0. For each tile: issue B(t+1) copies and
//! A(t+1) loads (past the last tile they read nothing and fill the idle stage with zeros,
//! which keeps the loop branch-free and the register count at 128), compute on stage t%2,
//! store A(t+1), `cp.async.wait_group 0`, barrier. That body is
//! `warp_tile_pipeline::pipeline::run`, generic over the geometry: this file declares the
//! step's `GEOMETRY` and its entry, and v09-v11 instantiate the same body with theirs.
//!
//! Thread mapping: compute as v07; A load as v07; B copy: row `t / 32`, columns
//! `(t % 32)·4` (and 8 rows further for the second).
//! Memory traffic: global as v07; shared: 2 stages of BK·(LDA + BN) f32 (33 KiB).
//! ptxas: 128 registers, two 256-thread blocks per SM.
//!
//! Expected bound: FMA issue; ≥ v07, ~90% of cuBLAS SGEMM. Measured on the H200
//! (2026-12-02 15:15): 44.0 TFLOP/s at 4096³, 44.6 at 8192³, 86% and 87% of cuBLAS, 1-2%
//! over v07. ncu at 4096³: 3.00 shared wavefronts per `ld.shared.v4` (v09's subject); 2.48 G
//! warp instructions, 86.5% of them FMAs; 16 warps per SM, 4.91 cycles between a warp's
//! issues (v10's and v11's subject).

use super::warp_tile_pipeline::TwoStageGeometry;

/// The step's whole geometry: a 128×128 block tile stepping 16 along K, 8 warps of 32×64
/// warp tiles (2×2 sub-tiles of 16×32, a 4×4 patch per lane), the transposed A tile padded
/// by 4 floats per row against bank conflicts. v09 keeps it, v10 and v11 change it.
pub const GEOMETRY: TwoStageGeometry = TwoStageGeometry {
    bm: 128,
    bn: 128,
    bk: 16,
    lda: 128 + 4,
    threads: 256,
    wm: 32,
    wn: 64,
    wmiter: 2,
    wniter: 2,
    tm: 4,
    tn: 4,
};
const _: () = GEOMETRY.check();

/// `GEOMETRY`'s block tile (BM×BN of C, stepping BK along K), threads and shared memory.
pub const BM: u32 = GEOMETRY.bm;
pub const BN: u32 = GEOMETRY.bn;
pub const BK: u32 = GEOMETRY.bk;
pub const THREADS: u32 = GEOMETRY.threads;
pub const SHARED_F32: u32 = GEOMETRY.shared_f32();

super::warp_tile_pipeline::two_stage_entry! {
    /// v08: the two-stage pipeline at `GEOMETRY`, lanes mapped as in v07.
    gemm_v08_double_buffered, GEOMETRY, crate::gemm::v07_warptile::lane_origin
}
