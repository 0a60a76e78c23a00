//! gemm/v08_double_buffered — cp.async into two shared-memory stages.
//!
//! Changed from v07 (same 128×128×16 block tile, 32×64 warp tiles, 8×8 results per
//! thread): tiles travel global → shared with `cp.async`, without passing through
//! registers, into one of two stages. While the warps compute on stage `s` the copies of the
//! next tile into stage `s^1` are in flight, so the load latency hides behind the FMAs and
//! each k-step costs one barrier wait less exposed latency.
//!
//! - B: 16-byte `cp.async.cg` (two per thread per tile); at the right edge the source size
//!   operand zero-fills the missing part. Rows not 16-byte aligned (N % 4 != 0) fall back to
//!   4-byte copies.
//! - A: stored transposed (`As[k][m]`, row stride LDA = BM + 4), which a 16-byte copy cannot
//!   do, so A moves with 4-byte `cp.async.ca` (eight per thread per tile: eight consecutive
//!   k of one row, from one row pointer; lanes take consecutive rows, so the shared writes
//!   are conflict-free and the row's sectors are reused from L1). Out-of-range elements are
//!   zero-filled.
//!
//! Pipeline: load(0); for each tile: issue load(next) into the other stage, wait for the
//! current one (`cp.async.wait_group 1`), barrier, compute, barrier.
//!
//! Thread mapping: compute as v07.
//! Memory traffic: global as v07; shared: 2 stages of BK·(LDA + BN) f32 (33 KiB).
//!
//! Expected bound: FMA issue; ≥ v07, the ladder's best: ~90% of cuBLAS SGEMM.

/// Block tile: BM×BN of C, stepping BK along K.
pub const BM: u32 = 128;
pub const BN: u32 = 128;
pub const BK: u32 = 16;
/// Warp tile and its sub-tiles.
pub const WM: u32 = 32;
pub const WN: u32 = 64;
pub const WMITER: u32 = 2;
pub const WNITER: u32 = 2;
/// Per-lane patch inside a sub-tile.
pub const TM: u32 = 4;
pub const TN: u32 = 4;
/// Threads per block: one warp per warp tile.
pub const THREADS: u32 = (BM / WM) * (BN / WN) * 32;
/// Row stride of the transposed A tile in shared memory (padded against bank conflicts).
pub const LDA: u32 = BM + 4;
/// Shared-memory stages (double buffering).
pub const STAGES: u32 = 2;
/// f32 of one stage: A tile transposed (BK×LDA), then B tile (BK×BN).
pub const STAGE_F32: u32 = BK * LDA + BK * BN;
/// Dynamic shared memory.
pub const SHARED_F32: u32 = STAGES * STAGE_F32;

const _: () = assert!((WM / WMITER / TM) * (WN / WNITER / TN) == 32);
// The epilogue's unroll! counts.
const _: () = assert!(WMITER == 2 && WNITER == 2);
const _: () = assert!((BM * BK).is_multiple_of(THREADS) && (BK * BN / 4).is_multiple_of(THREADS));
// A's copy mapping: THREADS is a whole number of BM-thread row sets.
const _: () = assert!(THREADS.is_multiple_of(BM) && BK.is_multiple_of(THREADS / BM));
// 16-byte alignment of every stage, of B inside a stage and of the float4 reads.
const _: () = assert!(LDA.is_multiple_of(4) && STAGE_F32.is_multiple_of(4) && TM == 4 && TN == 4);

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::gemm::dev::{at, lds4, store_c4};
    use crate::gemm::rows_vectorizable;
    use crate::gpu::async_copy::{
        commit_group, copy_4_zfill, copy_16_zfill, shared_addr, wait_group,
    };
    use crate::gpu::vector::F32x4;
    use crate::gpu::{math, shared, sync_threads, thread, warp};

    const BMU: usize = BM as usize;
    const BNU: usize = BN as usize;
    const BKU: usize = BK as usize;
    const LDAU: usize = LDA as usize;
    const T: usize = THREADS as usize;
    /// Consecutive k of one A row that one thread copies per tile.
    const A_RUN: u32 = BM * BK / THREADS;

    /// Issue the copies of the tiles at `k0` into the stage starting at shared address
    /// `stage` (bytes), and commit them as one group.
    ///
    /// # Safety
    /// A is M×K, B is K×N; `stage` is a 16-byte aligned shared address of STAGE_F32 f32;
    /// `b_vec == rows_vectorizable(b, n)`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn load_stage(
        a: *const f32,
        b: *const f32,
        m: u32,
        n: u32,
        k: u32,
        bm0: u32,
        bn0: u32,
        k0: u32,
        t: u32,
        stage: u32,
        b_vec: bool,
    ) {
        // SAFETY: every copy reads only in-bounds elements (src size 0 otherwise, with the
        // address clamped to the matrix start) and writes inside the stage.
        unsafe {
            // A: thread t copies row `t % BM`, the A_RUN consecutive k from
            // `(t / BM)·A_RUN`: one row pointer serves all its copies. A warp's lanes take
            // 32 consecutive rows at one k, so the transposed shared writes are
            // conflict-free; the global reads of one row's k share sectors through L1.
            let r = t % BM;
            let kb = (t / BM) * A_RUN;
            let row_ok = bm0 + r < m;
            let a_row = if row_ok { a.add(at(bm0 + r, k, 0)) } else { a };
            for j in 0..A_RUN {
                let kk = kb + j;
                let ok = row_ok && k0 + kk < k;
                let src = if ok { a_row.add((k0 + kk) as usize) } else { a };
                copy_4_zfill(stage + 4 * (kk * LDA + r), src, if ok { 4 } else { 0 });
            }
            let bs = stage + 4 * BK * LDA;
            if b_vec {
                for i in 0..BKU * BNU / 4 / T {
                    let idx = t as usize + i * T;
                    let r = (idx / (BNU / 4)) as u32;
                    let cc = (idx % (BNU / 4)) as u32 * 4;
                    let (row, col) = (k0 + r, bn0 + cc);
                    // With 16-byte aligned rows N % 4 == 0, so a float4 is all in or all out;
                    // the clamp keeps the source size exact anyway.
                    let bytes = if row < k && col < n {
                        4 * (n - col).min(4)
                    } else {
                        0
                    };
                    let src = if bytes > 0 { b.add(at(row, n, col)) } else { b };
                    copy_16_zfill(bs + 4 * (r * BN + cc), src, bytes);
                }
            } else {
                for i in 0..BKU * BNU / T {
                    let idx = t as usize + i * T;
                    let (r, cc) = ((idx / BNU) as u32, (idx % BNU) as u32);
                    let ok = k0 + r < k && bn0 + cc < n;
                    let src = if ok {
                        b.add(at(k0 + r, n, bn0 + cc))
                    } else {
                        b
                    };
                    copy_4_zfill(bs + 4 * (r * BN + cc), src, if ok { 4 } else { 0 });
                }
            }
        }
        commit_group();
    }

    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "gpu-kernel" fn gemm_v08_double_buffered(
        m: u32,
        n: u32,
        k: u32,
        alpha: f32,
        a: *const f32,
        b: *const f32,
        beta: f32,
        c: *mut f32,
    ) {
        const MI: usize = WMITER as usize;
        const NI: usize = WNITER as usize;
        const SUBM: usize = (WM / WMITER) as usize;
        const SUBN: usize = (WN / WNITER) as usize;
        const TMU: usize = TM as usize;
        const TNU: usize = TN as usize;
        const STAGE: usize = STAGE_F32 as usize;
        // Asked for as F32x4 so the shared block is declared 16-byte aligned (float4 access).
        let smem = shared::dynamic_shared_mem::<F32x4>() as *mut f32;
        let smem_addr = shared_addr(smem);
        let t = thread::thread_idx_x();
        let (bm0, bn0) = (thread::block_idx_y() * BM, thread::block_idx_x() * BN);
        let w = t / warp::WARP_SIZE;
        let lane = t % warp::WARP_SIZE;
        let wm0 = ((w / (BN / WN)) * WM) as usize;
        let wn0 = ((w % (BN / WN)) * WN) as usize;
        let lr = (lane / (SUBN / TNU) as u32) as usize * TMU;
        let lc = (lane % (SUBN / TNU) as u32) as usize * TNU;
        let b_vec = rows_vectorizable(b as u64, n);
        let c_vec = rows_vectorizable(c as u64, n);
        let tiles = k.div_ceil(BK);
        let mut acc = [[0.0f32; NI * TNU]; MI * TMU];
        // SAFETY: copies stay inside their stage and read in bounds (load_stage); shared
        // reads stay inside the stage being computed on, float4-aligned; stores are checked
        // against M and N in store_c4. The wait + barrier order every copy before its reads,
        // and the trailing barrier every read before the copy that overwrites its stage.
        unsafe {
            if tiles > 0 {
                load_stage(a, b, m, n, k, bm0, bn0, 0, t, smem_addr, b_vec);
            }
            for tile in 0..tiles {
                let cur = (tile % STAGES) as usize;
                if tile + 1 < tiles {
                    let next = smem_addr + 4 * ((tile + 1) % STAGES) * STAGE_F32;
                    load_stage(a, b, m, n, k, bm0, bn0, (tile + 1) * BK, t, next, b_vec);
                    wait_group::<1>();
                } else {
                    wait_group::<0>();
                }
                sync_threads();
                let as_ = smem.add(cur * STAGE);
                let bs = as_.add(BKU * LDAU);
                for kk in 0..BKU {
                    let mut ra = [0.0f32; MI * TMU];
                    let mut rb = [0.0f32; NI * TNU];
                    for s in 0..MI {
                        let v = lds4(as_.add(kk * LDAU + wm0 + s * SUBM + lr));
                        ra[s * TMU..s * TMU + 4].copy_from_slice(&v);
                    }
                    for s in 0..NI {
                        let v = lds4(bs.add(kk * BNU + wn0 + s * SUBN + lc));
                        rb[s * TNU..s * TNU + 4].copy_from_slice(&v);
                    }
                    for i in 0..MI * TMU {
                        for j in 0..NI * TNU {
                            acc[i][j] = math::fma(ra[i], rb[j], acc[i][j]);
                        }
                    }
                }
                sync_threads();
            }
            unroll!(2, sm => {
                unroll!(4, i => {
                    let r = &acc[sm * TMU + i];
                    let row = bm0 + (wm0 + sm * SUBM + lr + i) as u32;
                    unroll!(2, sn => {
                        let col = bn0 + (wn0 + sn * SUBN + lc) as u32;
                        let v = [r[sn * 4], r[sn * 4 + 1], r[sn * 4 + 2], r[sn * 4 + 3]];
                        store_c4(c, m, n, row, col, v, alpha, beta, c_vec);
                    });
                });
            });
        }
    }
}
