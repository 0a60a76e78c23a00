//! Pipeline: the two-stage kernel body of v08-v11, generic over the geometry. While the
//! warps compute on stage `s`, tile t+1 moves into stage `s^1`, so a tile costs one barrier
//! instead of two (the write-after-read barrier goes):
//!
//! - B: 16-byte `cp.async.cg` straight into the next stage, without registers; at the
//!   edges the source-size operand zero-fills. Rows not 16-byte aligned (N % 4 != 0) go
//!   through registers with checked loads instead (slow path).
//! - A: stored transposed (`As[k][m]`, row stride LDA), which a 16-byte copy cannot do, so
//!   A goes as in v07: 16-byte `ld.global.nc` into registers before the math, transposed
//!   `st.shared` into the next stage after it.
//!
//! Prologue: tile 0 into stage 0. For each tile: issue B(t+1) copies and A(t+1) loads (past
//! the last tile they read nothing and fill the idle stage with zeros, which keeps the loop
//! branch-free), compute on stage t%2 ([`fragments`](super::fragments)), store A(t+1),
//! `cp.async.wait_group 0`, barrier. Then the [`epilogue`](super::epilogue).

use super::epilogue::store_warp_tile;
use super::fragments::warp_tile_bk16;
use super::{STAGES, SUB_M, SUB_N, warp_tile_origin};
use crate::gemm::dev::{at, fetch_tile, store_a_transposed, store_b};
use crate::gemm::rows_vectorizable;
use crate::gpu::async_copy::{commit_group, copy_16_zfill, shared_addr, wait_group};
use crate::gpu::vector::F32x4;
use crate::gpu::{shared, sync_threads, thread};

/// The fixed slice depth of [`warp_tile_bk16`] (the geometry's `bk`, checked to be 16).
const BKU: usize = 16;

/// Issue the copies of the 16×BN tile of B at `k0` into the stage at `stage_ptr` (B
/// after the BK·LDA f32 of A) and commit them as one group; NB float4s per thread.
///
/// # Safety
/// B is K×N; `stage_ptr` is a 16-byte aligned stage of 16·(LDA + BN) f32 in shared
/// memory; `b_vec == rows_vectorizable(b, n)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn load_stage_b<const BN: usize, const LDA: usize, const T: usize, const NB: usize>(
    b: *const f32,
    n: u32,
    k: u32,
    bn0: u32,
    k0: u32,
    t: u32,
    stage_ptr: *mut f32,
    b_vec: bool,
) {
    let stage = shared_addr(stage_ptr);
    // SAFETY: every copy reads only in-bounds elements (src size 0 otherwise, with the
    // address clamped to the matrix start) and writes inside the stage.
    unsafe {
        let bs = stage + 4 * (BKU * LDA) as u32;
        if b_vec {
            for i in 0..NB {
                let idx = t as usize + i * T;
                let r = (idx / (BN / 4)) as u32;
                let cc = (idx % (BN / 4)) as u32 * 4;
                let (row, col) = (k0 + r, bn0 + cc);
                // With 16-byte aligned rows N % 4 == 0, so a float4 is all in or all out;
                // the clamp keeps the source size exact anyway.
                let bytes = if row < k && col < n {
                    4 * (n - col).min(4)
                } else {
                    0
                };
                let src = if bytes > 0 { b.add(at(row, n, col)) } else { b };
                copy_16_zfill(bs + 4 * (r * BN as u32 + cc), src, bytes);
            }
        } else {
            // Rows not 16-byte aligned: through registers with checked scalar loads
            // (a slow path for odd N only, so its latency is not hidden).
            let rb = fetch_tile::<BKU, BN, T, NB>(b, k, n, n, k0, bn0, t, false);
            store_b::<BN, T, NB>(&rb, t, stage_ptr.add(BKU * LDA));
        }
    }
    commit_group();
}

/// The whole two-stage kernel (v08's) with its geometry and the lane-to-patch map as
/// parameters; each step passes its `GEOMETRY`'s fields (see [`TwoStageGeometry`]): a BM×BN
/// block tile of T threads, A's transposed row stride LDA, WM×WN warp tiles of MI×NI
/// sub-tiles of SUB_M×SUB_N, NA / NB float4s of A / B per thread per tile, R×C results per
/// thread. `lane_origin(lane)` must give each lane of a warp a distinct 4×4 patch of the
/// sub-tile, at multiples of 4.
///
/// [`TwoStageGeometry`]: super::TwoStageGeometry
///
/// # Safety
/// A is M×K, B is K×N, C is M×N (row-major, as the kernel's host wrapper checks), the
/// launch has T threads and `2·16·(LDA + BN)` f32 of dynamic shared memory (the
/// geometry's `threads` and `shared_bytes()`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn run<
    const BM: usize,
    const BN: usize,
    const LDA: usize,
    const T: usize,
    const WM: usize,
    const WN: usize,
    const MI: usize,
    const NI: usize,
    const NA: usize,
    const NB: usize,
    const R: usize,
    const C: usize,
>(
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: *const f32,
    b: *const f32,
    beta: f32,
    c: *mut f32,
    lane_origin: impl Fn(u32) -> (u32, u32),
) {
    // SAFETY: forwarded; A's rows are K long.
    unsafe {
        run_range::<BM, BN, LDA, T, WM, WN, MI, NI, NA, NB, R, C>(
            m,
            n,
            k,
            k,
            alpha,
            a,
            b,
            beta,
            c,
            lane_origin,
        )
    }
}

/// v12's split K: block `z` of a grid `gridDim.z` deep computes the product over its own
/// slice of K (`split_k_chunk` deep, the last ones shorter or empty) and writes it to the
/// `z`-th M×N matrix after `c` (`alpha·A·B + beta·C` of its slice: the host passes 1 and 0
/// and a workspace when it splits, and C itself when `gridDim.z` is 1).
///
/// # Safety
/// As [`run`], and `c` holds `gridDim.z` M×N matrices.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn run_split_k<
    const BM: usize,
    const BN: usize,
    const LDA: usize,
    const T: usize,
    const WM: usize,
    const WN: usize,
    const MI: usize,
    const NI: usize,
    const NA: usize,
    const NB: usize,
    const R: usize,
    const C: usize,
>(
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: *const f32,
    b: *const f32,
    beta: f32,
    c: *mut f32,
    lane_origin: impl Fn(u32) -> (u32, u32),
) {
    let (z, slices) = (thread::block_idx_z(), thread::grid_dim_z());
    let chunk = crate::gemm::split_k_chunk(k, slices);
    // 64-bit: the slice's first column can be past 2^31 only with K near MAX_DIM, but the
    // products below are element offsets into matrices of up to 2^62 elements.
    let k0 = (z as u64 * chunk as u64).min(k as u64);
    let len = (k as u64 - k0).min(chunk as u64) as u32;
    // SAFETY: the slice's A starts `k0` columns in (rows still K long), its B `k0` rows
    // down; its output is the z-th matrix after `c`; all inside the buffers (host-checked).
    unsafe {
        run_range::<BM, BN, LDA, T, WM, WN, MI, NI, NA, NB, R, C>(
            m,
            n,
            len,
            k,
            alpha,
            a.add(k0 as usize),
            b.add(k0 as usize * n as usize),
            beta,
            c.add(z as usize * m as usize * n as usize),
            lane_origin,
        )
    }
}

/// [`run`] over a K range: `k` columns of A (rows `lda` apart: A may be a column slice of
/// a wider matrix) and `k` rows of B.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn run_range<
    const BM: usize,
    const BN: usize,
    const LDA: usize,
    const T: usize,
    const WM: usize,
    const WN: usize,
    const MI: usize,
    const NI: usize,
    const NA: usize,
    const NB: usize,
    const R: usize,
    const C: usize,
>(
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    alpha: f32,
    a: *const f32,
    b: *const f32,
    beta: f32,
    c: *mut f32,
    lane_origin: impl Fn(u32) -> (u32, u32),
) {
    const { assert!(WM == MI * SUB_M && WN == NI * SUB_N) };
    let stage_f32: usize = BKU * (LDA + BN);
    const BK32: u32 = BKU as u32;
    // Asked for as F32x4 so the shared block is declared 16-byte aligned (float4 access).
    let smem = shared::dynamic_shared_mem::<F32x4>() as *mut f32;
    let t = thread::thread_idx_x();
    let o = warp_tile_origin(BM as u32, BN as u32, WM as u32, WN as u32, lane_origin);
    let (bm0, bn0) = (o.bm0, o.bn0);
    let b_vec = rows_vectorizable(b as u64, n);
    let c_vec = rows_vectorizable(c as u64, n);
    let a_vec = rows_vectorizable(a as u64, lda);
    let tiles = k.div_ceil(BK32);
    let mut acc = [[0.0f32; C]; R];
    // SAFETY: copies stay inside their stage and read in bounds (load_stage_b,
    // fetch_tile); shared reads stay inside the stage being computed on, float4-aligned;
    // stores are checked against M and N in store_c4. Tile t+1 is written into stage
    // (t+1)%2 only after the barrier that ends tile t-1 (the last reader of that stage),
    // and is read only after the barrier that ends tile t, which every thread reaches
    // after its A stores and its `cp.async.wait_group 0`.
    unsafe {
        if tiles > 0 {
            load_stage_b::<BN, LDA, T, NB>(b, n, k, bn0, 0, t, smem, b_vec);
            let ra = fetch_tile::<BM, BKU, T, NA>(a, m, k, lda, bm0, 0, t, a_vec);
            store_a_transposed::<BKU, LDA, T, NA>(&ra, t, smem);
            wait_group::<0>();
            sync_threads();
        }
        for tile in 0..tiles {
            let cur = smem.add((tile % STAGES) as usize * stage_f32);
            let next = smem.add(((tile + 1) % STAGES) as usize * stage_f32);
            // Next tile: B by cp.async straight into the other stage, A into registers
            // (16-byte loads; it is stored transposed after the math). Both are in
            // flight while the warps compute on the current stage.
            // Past the last tile both loaders take their checked paths, read nothing and
            // fill the idle stage with zeros: unconditional, so no branch around them.
            let k0 = (tile + 1) * BK32;
            load_stage_b::<BN, LDA, T, NB>(b, n, k, bn0, k0, t, next, b_vec);
            let ra = fetch_tile::<BM, BKU, T, NA>(a, m, k, lda, bm0, k0, t, a_vec);
            let bs = cur.add(BKU * LDA);
            warp_tile_bk16::<LDA, BN, SUB_M, SUB_N, MI, NI, R, C>(
                cur,
                bs,
                o.wm0 + o.lr,
                o.wn0 + o.lc,
                &mut acc,
            );
            store_a_transposed::<BKU, LDA, T, NA>(&ra, t, next);
            wait_group::<0>();
            // One barrier per tile: the double buffer removes the write-after-read one.
            sync_threads();
        }
        store_warp_tile::<SUB_M, SUB_N, MI, NI, R, C>(c, m, n, o, &acc, alpha, beta, c_vec);
    }
}
