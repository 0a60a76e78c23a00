//! Family `gemm`: single-precision matrix multiply, `C = alpha·A·B + beta·C`.
//!
//! Row-major throughout: A is M×K (row stride K), B is K×N (row stride N), C is M×N (row
//! stride N). The ladder follows Simon Boehm's "How to optimize a CUDA matmul kernel for
//! cuBLAS-like performance": from one thread per output element to register- and warp-tiled
//! kernels fed by asynchronous copies.
//!
//! Every kernel has the same parameters, `(m, n, k, alpha, a, b, beta, c)` with u32 sizes
//! (the host refuses sizes past `MAX_DIM`) and 64-bit element offsets, and handles any shape:
//! tiles that hang over an edge are zero-filled on load and masked on store. `beta == 0`
//! means C is not read (so a NaN already in C does not propagate), as in BLAS.
//!
//! v12 adds a second kernel, `gemm_v12_split_k_reduce`, which sums the K slices of its main
//! kernel in a fixed order (its own parameters, see the variant file).
//!
//! The warp-tiled steps (v07-v12) share [`warp_tile_pipeline`]: its fragments and epilogue
//! (v07-v11) and its two-stage pipeline (v08-v11), which each of v08-v11 instantiates with
//! its own `GEOMETRY` ([`warp_tile_pipeline::TwoStageGeometry`]).

/// `unroll!(N, i => { body })`: `body` N times with `i` = 0, 1, .. N-1 as constants.
/// Loops that index register arrays (the accumulators) must be fully unrolled or the arrays
/// go to local memory; LLVM does not unroll the epilogue's loops by itself (their bodies are
/// large), so the variants spell it out. N is 2, 4, 8 or 16; callers assert it matches the
/// tile.
#[allow(unused_macros)]
macro_rules! unroll {
    (16, $i:ident => $b:block) => {
        unroll!(@[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] $i $b)
    };
    (2, $i:ident => $b:block) => { unroll!(@[0, 1] $i $b) };
    (4, $i:ident => $b:block) => { unroll!(@[0, 1, 2, 3] $i $b) };
    (8, $i:ident => $b:block) => { unroll!(@[0, 1, 2, 3, 4, 5, 6, 7] $i $b) };
    (@[$($k:literal),*] $i:ident $b:block) => { $( { let $i: usize = $k; $b } )* };
}

pub mod warp_tile_pipeline;

pub mod v01_naive;
pub mod v02_coalesced;
pub mod v03_smem_tiled;
pub mod v04_blocktile_1d;
pub mod v05_blocktile_2d;
pub mod v06_vectorized;
pub mod v07_warptile;
pub mod v08_double_buffered;
pub mod v09_interleaved_lanes;
pub mod v10_warptile_64x64;
pub mod v11_block_256x128;
pub mod v12_split_k;

/// The K depth of one of `slices` split-K slices (v12): K's BK-deep tiles shared out evenly
/// in whole tiles (so every slice but the last starts on a tile boundary); the last slices
/// may be shorter or empty. Used by the kernel (from `gridDim.z`) and the host alike.
pub const fn split_k_chunk(k: u32, slices: u32) -> u32 {
    let bk = v12_split_k::GEOMETRY.bk;
    let slices = if slices == 0 { 1 } else { slices };
    k.div_ceil(bk).div_ceil(slices) * bk
}

/// Largest M, N or K a kernel accepts: sizes and in-tile indices are u32 and stay below
/// 2^31 even after adding a tile.
pub const MAX_DIM: u64 = (1 << 31) - 1;

/// Whether rows starting at byte address `base` with a stride of `ld` f32 can be read with
/// 16-byte accesses: every row start is then 16-byte aligned.
#[inline(always)]
pub const fn rows_vectorizable(base: u64, ld: u32) -> bool {
    base.is_multiple_of(16) && ld.is_multiple_of(4)
}

/// Device helpers shared by the variants: 64-bit offsets, the masked stores of C, the
/// tile loads of v06-v11 (the warp-tiled parts of v07-v11 are in [`warp_tile_pipeline`]).
#[cfg(target_arch = "nvptx64")]
pub(crate) mod dev {
    use crate::gpu::vector::{self, F32x4};

    /// Element offset of `(row, col)` in a row-major matrix with row stride `ld`.
    #[inline(always)]
    pub fn at(row: u32, ld: u32, col: u32) -> usize {
        row as usize * ld as usize + col as usize
    }

    /// `C[row][col] = alpha·v + beta·C[row][col]`; C is not read when `beta == 0`.
    ///
    /// # Safety
    /// `(row, col)` is inside the M×N matrix at `c`.
    #[inline(always)]
    pub unsafe fn store_c(c: *mut f32, n: u32, row: u32, col: u32, v: f32, alpha: f32, beta: f32) {
        // SAFETY: in bounds by the caller's contract.
        unsafe {
            let p = c.add(at(row, n, col));
            *p = if beta == 0.0 {
                alpha * v
            } else {
                crate::gpu::math::fma(alpha, v, beta * *p)
            };
        }
    }

    /// The epilogue for four neighbouring results `C[row][col..col+4]`: one 16-byte access
    /// when C's rows allow it (`c_vec`) and all four are inside, else masked scalar stores.
    ///
    /// # Safety
    /// `c` is an M×N matrix; `c_vec` only if `rows_vectorizable(c, n)`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn store_c4(
        c: *mut f32,
        m: u32,
        n: u32,
        row: u32,
        col: u32,
        v: [f32; 4],
        alpha: f32,
        beta: f32,
        c_vec: bool,
    ) {
        if row >= m {
            return;
        }
        // SAFETY: row < m; vector access only when col+4 <= n and rows are 16-byte aligned
        // (col is a multiple of 4 at every call site); scalar ones are checked one by one.
        unsafe {
            if c_vec && col + 4 <= n {
                let p = c.add(at(row, n, col));
                let mut out = F32x4([0.0; 4]);
                if beta == 0.0 {
                    for j in 0..4 {
                        out.0[j] = alpha * v[j];
                    }
                } else {
                    let old = vector::load_f32x4(p);
                    for j in 0..4 {
                        out.0[j] = crate::gpu::math::fma(alpha, v[j], beta * old.0[j]);
                    }
                }
                vector::store_f32x4(p, out);
            } else {
                for (j, &x) in v.iter().enumerate() {
                    if col + (j as u32) < n {
                        store_c(c, n, row, col + j as u32, x, alpha, beta);
                    }
                }
            }
        }
    }

    /// Four f32 from 16-byte-aligned shared memory (one `ld.shared.v4.f32`).
    ///
    /// # Safety
    /// `p` is a 16-byte-aligned pointer to four readable f32.
    #[inline(always)]
    pub unsafe fn lds4(p: *const f32) -> [f32; 4] {
        // SAFETY: forwarded from the caller.
        unsafe { (*(p as *const F32x4)).0 }
    }

    /// Four f32 of row `row` of a row-major matrix (row stride `ld`), columns
    /// `col..col+4`; elements outside `rows × cols` are zero. `fast` (the whole tile is
    /// inside and rows are 16-byte aligned) takes one 16-byte load.
    ///
    /// # Safety
    /// The matrix at `p` is `rows × ld` with `cols <= ld`; `fast` only under the above.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn load4(
        p: *const f32,
        rows: u32,
        cols: u32,
        ld: u32,
        row: u32,
        col: u32,
        fast: bool,
    ) -> [f32; 4] {
        // SAFETY: the fast path is in bounds and aligned by the caller; the slow path reads
        // only checked elements.
        unsafe {
            if fast {
                vector::load_f32x4_nc(p.add(at(row, ld, col))).0
            } else {
                let mut v = [0.0f32; 4];
                if row < rows {
                    for (j, x) in v.iter_mut().enumerate() {
                        if col + (j as u32) < cols {
                            *x = *p.add(at(row, ld, col + j as u32));
                        }
                    }
                }
                v
            }
        }
    }

    /// Stage the BM×BK tile of A at `(bm0, k0)` into shared memory transposed
    /// (`as_[kk*LDA + mm]`), so the inner loop reads TM consecutive rows with 16-byte loads.
    /// Each of the THREADS threads moves BM·BK/4/THREADS groups of four.
    ///
    /// # Safety
    /// A is M×K at `a`; `as_` holds BK·LDA f32; `a_vec == rows_vectorizable(a, k)`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn load_a_transposed<
        const BM: usize,
        const BK: usize,
        const LDA: usize,
        const THREADS: usize,
    >(
        a: *const f32,
        m: u32,
        k: u32,
        bm0: u32,
        k0: u32,
        t: u32,
        as_: *mut f32,
        a_vec: bool,
    ) {
        let fast = a_vec && bm0 + BM as u32 <= m && k0 + BK as u32 <= k;
        for i in 0..BM * BK / 4 / THREADS {
            let idx = t as usize + i * THREADS;
            let r = idx / (BK / 4);
            let c = (idx % (BK / 4)) * 4;
            // SAFETY: load4 checks bounds off the fast path; r < BM and c+3 < BK index
            // inside the BK×LDA shared tile.
            unsafe {
                let v = load4(a, m, k, k, bm0 + r as u32, k0 + c as u32, fast);
                for (j, &x) in v.iter().enumerate() {
                    *as_.add((c + j) * LDA + r) = x;
                }
            }
        }
    }

    /// Stage the BK×BN tile of B at `(k0, bn0)` into shared memory as it is
    /// (`bs[kk*BN + nn]`), with 16-byte global loads and 16-byte shared stores.
    ///
    /// # Safety
    /// B is K×N at `b`; `bs` holds BK·BN f32, 16-byte aligned; `b_vec ==
    /// rows_vectorizable(b, n)`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn load_b<const BK: usize, const BN: usize, const THREADS: usize>(
        b: *const f32,
        n: u32,
        k: u32,
        k0: u32,
        bn0: u32,
        t: u32,
        bs: *mut f32,
        b_vec: bool,
    ) {
        let fast = b_vec && bn0 + BN as u32 <= n && k0 + BK as u32 <= k;
        for i in 0..BK * BN / 4 / THREADS {
            let idx = t as usize + i * THREADS;
            let r = idx / (BN / 4);
            let c = (idx % (BN / 4)) * 4;
            // SAFETY: as in load_a_transposed; c is a multiple of 4, so the shared store is
            // 16-byte aligned.
            unsafe {
                let v = load4(b, k, n, n, k0 + r as u32, bn0 + c as u32, fast);
                *(bs.add(r * BN + c) as *mut F32x4) = F32x4(v);
            }
        }
    }

    /// Fetch a ROWS×COLS tile of a row-major matrix (`rows × cols`, row stride `ld`) at
    /// `(r0, c0)` into registers: thread `t` takes the float4s `t + i·THREADS`, i < N, in
    /// row-major float4 order. Split from the shared store so the fetch of tile k+1 can be
    /// issued before the math of tile k (its latency then hides behind the FMAs).
    ///
    /// # Safety
    /// The matrix at `p` is `rows × ld` with `cols <= ld`; `vec == rows_vectorizable(p, ld)`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn fetch_tile<
        const ROWS: usize,
        const COLS: usize,
        const THREADS: usize,
        const N: usize,
    >(
        p: *const f32,
        rows: u32,
        cols: u32,
        ld: u32,
        r0: u32,
        c0: u32,
        t: u32,
        vec: bool,
    ) -> [[f32; 4]; N] {
        const { assert!(ROWS * COLS / 4 == N * THREADS && COLS.is_multiple_of(4)) };
        let fast = vec && r0 + ROWS as u32 <= rows && c0 + COLS as u32 <= cols;
        let mut out = [[0.0f32; 4]; N];
        for (i, o) in out.iter_mut().enumerate() {
            let idx = t as usize + i * THREADS;
            let r = (idx / (COLS / 4)) as u32;
            let c = (idx % (COLS / 4)) as u32 * 4;
            // SAFETY: load4 checks bounds off the fast path; the fast path is in bounds and
            // 16-byte aligned by `fast`.
            *o = unsafe { load4(p, rows, cols, ld, r0 + r, c0 + c, fast) };
        }
        out
    }

    /// Store a fetched BM×BK tile of A transposed (`as_[kk*LDA + mm]`).
    ///
    /// # Safety
    /// `as_` holds BK·LDA f32; `v` came from `fetch_tile::<BM, BK, THREADS, N>` with this `t`.
    #[inline(always)]
    pub unsafe fn store_a_transposed<
        const BK: usize,
        const LDA: usize,
        const THREADS: usize,
        const N: usize,
    >(
        v: &[[f32; 4]; N],
        t: u32,
        as_: *mut f32,
    ) {
        for (i, q) in v.iter().enumerate() {
            let idx = t as usize + i * THREADS;
            let (r, c) = (idx / (BK / 4), (idx % (BK / 4)) * 4);
            for (j, &x) in q.iter().enumerate() {
                // SAFETY: c + j < BK and r < BM <= LDA index inside the BK×LDA tile.
                unsafe { *as_.add((c + j) * LDA + r) = x };
            }
        }
    }

    /// Store a fetched BK×BN tile of B as it is (`bs[kk*BN + nn]`), 16-byte stores.
    ///
    /// # Safety
    /// `bs` holds BK·BN f32, 16-byte aligned; `v` came from `fetch_tile::<BK, BN, THREADS, N>`
    /// with this `t`.
    #[inline(always)]
    pub unsafe fn store_b<const BN: usize, const THREADS: usize, const N: usize>(
        v: &[[f32; 4]; N],
        t: u32,
        bs: *mut f32,
    ) {
        for (i, q) in v.iter().enumerate() {
            let idx = t as usize + i * THREADS;
            let (r, c) = (idx / (BN / 4), (idx % (BN / 4)) * 4);
            // SAFETY: r < BK, c + 3 < BN, c a multiple of 4: an aligned float4 in the tile.
            unsafe { *(bs.add(r * BN + c) as *mut F32x4) = F32x4(*q) };
        }
    }
}
