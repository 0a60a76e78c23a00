//! The warp-tiled SGEMM pipeline shared by v07-v11, in three parts:
//!
//! - [`fragments`]: the math of one BK = 16 slice of the block tile: each lane reads its
//!   register fragments of A and B from shared memory (double-buffered across k steps) and
//!   does their outer product into its accumulators (v07-v11);
//! - [`epilogue`]: a lane's accumulators out to C, `alpha·acc + beta·C`, 16-byte stores
//!   where the rows allow (v07-v11);
//! - [`pipeline`]: v08's two-stage kernel body, generic over the geometry: tile t+1 moves
//!   into one shared-memory stage (B by `cp.async`, A through registers, stored transposed)
//!   while the warps compute on the other (v08-v11).
//!
//! Each two-stage step (v08-v11) declares its whole geometry as one value,
//! `pub const GEOMETRY: TwoStageGeometry`, checked at compile time by
//! [`TwoStageGeometry::check`]; its kernel entry passes that geometry's fields to
//! [`pipeline::run`] as const generics, and the host reads the same value for the launch
//! (threads, shared memory, block tile).
//!
//! Thread mapping (all of v07-v11): warp `w` owns the WM×WN warp tile at rows
//! `(w / (BN/WN))·WM`, columns `(w % (BN/WN))·WN` of the block tile; a warp tile is
//! WMITER×WNITER sub-tiles of SUB_M×SUB_N = 16×32, and inside each sub-tile a lane owns the
//! TM×TN = 4×4 patch at `lane_origin(lane)` (the step's lane map).

#[cfg(target_arch = "nvptx64")]
pub mod epilogue;
#[cfg(target_arch = "nvptx64")]
pub mod fragments;
#[cfg(target_arch = "nvptx64")]
pub mod pipeline;

#[cfg(target_arch = "nvptx64")]
pub(crate) use pipeline::{run, run_split_k};

/// `two_stage_entry! { /// docs  NAME, GEOMETRY, LANE_ORIGIN }` (or `/// docs split_k NAME,
/// ..` for [`pipeline::run_split_k`], v12): the kernel entry `NAME`
/// (through `crate::kernel!`, with the gemm parameters) running [`pipeline::run`] with the
/// geometry constant and the lane map it is given. Both are arguments: the macro takes
/// nothing from the scope it is invoked in, it only spells out the const generic arguments
/// that `GEOMETRY` determines.
macro_rules! two_stage_entry {
    ($(#[$doc:meta])* split_k $name:ident, $g:ident, $lane_origin:path) => {
        crate::gemm::warp_tile_pipeline::two_stage_entry!(
            @entry run_split_k, $(#[$doc])* $name, $g, $lane_origin
        );
    };
    ($(#[$doc:meta])* $name:ident, $g:ident, $lane_origin:path) => {
        crate::gemm::warp_tile_pipeline::two_stage_entry!(
            @entry run, $(#[$doc])* $name, $g, $lane_origin
        );
    };
    (@entry $run:ident, $(#[$doc:meta])* $name:ident, $g:ident, $lane_origin:path) => {
        crate::kernel! {
            $(#[$doc])*
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn $name(
                m: u32,
                n: u32,
                k: u32,
                alpha: f32,
                a: *const f32,
                b: *const f32,
                beta: f32,
                c: *mut f32,
            ) {
                // SAFETY: the kernel's parameters, forwarded; the host launches it with
                // the geometry's threads and shared_bytes() of dynamic shared memory.
                unsafe {
                    crate::gemm::warp_tile_pipeline::$run::<
                        { $g.bm as usize },
                        { $g.bn as usize },
                        { $g.lda as usize },
                        { $g.threads as usize },
                        { $g.wm as usize },
                        { $g.wn as usize },
                        { $g.wmiter as usize },
                        { $g.wniter as usize },
                        { $g.a_float4s_per_thread() as usize },
                        { $g.b_float4s_per_thread() as usize },
                        { $g.thread_rows() as usize },
                        { $g.thread_cols() as usize },
                    >(m, n, k, alpha, a, b, beta, c, $lane_origin)
                }
            }
        }
    };
}
pub(crate) use two_stage_entry;

/// The sub-tile of the warp-tiled kernels (v07-v11): 4×8 lanes of 4×4 patches, so a
/// warp's k step reads 4 distinct float4s of A and 8 consecutive of B per sub-tile.
pub const SUB_M: usize = 16;
pub const SUB_N: usize = 32;

/// Shared-memory stages of the pipeline (double buffering).
pub const STAGES: u32 = 2;

/// The geometry of one two-stage step (v08-v11): everything its kernel is instantiated
/// with and its launch needs. Fields are the step's choices; the methods derive the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TwoStageGeometry {
    /// Block tile: BM×BN of C per block, stepping BK along K (BK = 16: the fully unrolled
    /// slice of [`fragments`]).
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    /// Row stride of the transposed A tile in shared memory (`As[k][m]`): BM plus a pad
    /// against bank conflicts on its stores; a multiple of 4 (float4 reads).
    pub lda: u32,
    /// Threads per block: one warp per warp tile.
    pub threads: u32,
    /// Warp tile: WM×WN of the block tile per warp.
    pub wm: u32,
    pub wn: u32,
    /// Sub-tiles (SUB_M×SUB_N) per warp tile, along M and along N.
    pub wmiter: u32,
    pub wniter: u32,
    /// Per-lane patch inside a sub-tile.
    pub tm: u32,
    pub tn: u32,
}

impl TwoStageGeometry {
    /// Warps per block: one per warp tile.
    pub const fn warps(self) -> u32 {
        (self.bm / self.wm) * (self.bn / self.wn)
    }
    /// f32 of one stage: A tile transposed (BK×LDA), then B tile (BK×BN).
    pub const fn stage_f32(self) -> u32 {
        self.bk * self.lda + self.bk * self.bn
    }
    /// Dynamic shared memory, in f32: [`STAGES`] stages.
    pub const fn shared_f32(self) -> u32 {
        STAGES * self.stage_f32()
    }
    /// Dynamic shared memory, in bytes (what the launch asks for).
    pub const fn shared_bytes(self) -> u32 {
        4 * self.shared_f32()
    }
    /// Float4s of A each thread loads per tile (`NA`).
    pub const fn a_float4s_per_thread(self) -> u32 {
        self.bm * self.bk / 4 / self.threads
    }
    /// Float4s of B each thread copies per tile (`NB`).
    pub const fn b_float4s_per_thread(self) -> u32 {
        self.bk * self.bn / 4 / self.threads
    }
    /// Rows of results a thread holds (`R`): WMITER patches of TM.
    pub const fn thread_rows(self) -> u32 {
        self.wmiter * self.tm
    }
    /// Columns of results a thread holds (`C`): WNITER patches of TN.
    pub const fn thread_cols(self) -> u32 {
        self.wniter * self.tn
    }

    /// Compile-time checks that the geometry fits the two-stage body (use as
    /// `const _: () = GEOMETRY.check();`): 16×32 sub-tiles of 4×4 patches, BK = 16 (the
    /// unrolled k loop), at most 4×4 sub-tiles per warp (the epilogue's unrolling), one warp
    /// per warp tile, whole float4s of A and B per thread, 16-byte-aligned stages.
    pub const fn check(self) {
        assert!(
            self.wm / self.wmiter == SUB_M as u32 && self.wn / self.wniter == SUB_N as u32,
            "sub-tiles must be SUB_M×SUB_N"
        );
        assert!(
            self.tm == 4 && self.tn == 4 && self.bk == 16 && self.wmiter <= 4 && self.wniter <= 4,
            "4×4 patches, BK = 16, at most 4×4 sub-tiles per warp"
        );
        assert!(
            self.bm.is_multiple_of(self.wm)
                && self.bn.is_multiple_of(self.wn)
                && self.threads == self.warps() * 32,
            "one warp per warp tile"
        );
        assert!(
            (self.bm * self.bk / 4).is_multiple_of(self.threads)
                && (self.bk * self.bn / 4).is_multiple_of(self.threads),
            "whole float4s of A and B per thread"
        );
        assert!(
            self.lda >= self.bm && self.lda.is_multiple_of(4) && self.stage_f32().is_multiple_of(4),
            "16-byte-aligned rows of A and stages"
        );
    }
}

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{thread, warp};

/// Where a thread of the warp-tiled kernels (v07-v11) works: the block tile's corner in
/// C `(bm0, bn0)`, its warp's tile inside the block tile `(wm0, wn0)`, and its lane's
/// patch inside a sub-tile `lane_origin(lane)`. `bm`×`bn` is the block tile, `wm`×`wn`
/// the warp tile (constants at every call, folded after inlining).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn warp_tile_origin(
    bm: u32,
    bn: u32,
    wm: u32,
    wn: u32,
    lane_origin: impl Fn(u32) -> (u32, u32),
) -> WarpTileOrigin {
    let t = thread::thread_idx_x();
    let (bm0, bn0) = (thread::block_idx_y() * bm, thread::block_idx_x() * bn);
    let w = t / warp::WARP_SIZE;
    let wm0 = ((w / (bn / wn)) * wm) as usize;
    let wn0 = ((w % (bn / wn)) * wn) as usize;
    let (lr, lc) = lane_origin(t % warp::WARP_SIZE);
    let (lr, lc) = (lr as usize, lc as usize);
    WarpTileOrigin {
        bm0,
        bn0,
        wm0,
        wn0,
        lr,
        lc,
    }
}

/// See [`warp_tile_origin`]. The parts stay separate: added up front, LLVM schedules
/// the kernels' address arithmetic differently (measured figures belong to this PTX).
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
pub struct WarpTileOrigin {
    pub bm0: u32,
    pub bn0: u32,
    pub wm0: usize,
    pub wn0: usize,
    pub lr: usize,
    pub lc: usize,
}
