//! Family `bf16_gemm`: `y = x·Wᵀ` in bf16 on the tensor cores, as `torch.nn.functional.linear`
//! computes it (no bias).
//!
//! x is M×K, W is N×K, y is M×N, all row-major bf16 (K contiguous in x and W), carried as
//! `u16` bits. Products accumulate in f32 and are rounded to nearest even to bf16 on store.
//! W being N×K row-major is exactly the "col" B operand of `mma.sync ... .row.col`: column n
//! of B is row n of W, K contiguous, so no step ever transposes anything.
//!
//! Every entry has the parameters `(m, n, k, x, w, y)` and handles any M, N ≥ 1 (loads
//! outside the matrices read zeros, stores outside are masked) and any K that is a multiple
//! of the step's `K_MULTIPLE` (a last K tile that hangs over K is zero-filled). Element
//! offsets are 64-bit (`row as usize * ld as usize`). Each variant file exports its launch
//! geometry: `BLOCK_THREADS`, `BM`×`BN` (the tile of y one block computes; grid x =
//! ceil(N / BN), grid y = ceil(M / BM)), `SHARED_BYTES` (dynamic shared memory) and
//! `K_MULTIPLE`.
//!
//! The ladder (all on `mma.sync.m16n8k16` bf16, see [`crate::gpu::mma`]):
//! - v01: fragments straight from global memory, a warp per 16×16 tile of y;
//! - v02: block tiles in (padded) shared memory, 16-byte loads, `ldmatrix`, 64×32 warp tiles;
//! - v03: v02 with a 4-stage `cp.async` pipeline, one barrier per K tile;
//! - v04: an XOR-swizzled shared layout (no padding, no bank conflicts) and 64×64 warp tiles
//!   in a 128×256 block;
//! - v05: weight streaming (another file's subject);
//! - v06: v04 with its fragments double-buffered across K16 steps.
//!
//! Then Hopper's own instructions (sm_90a only, see [`crate::gpu::hopper`]), 64×256 tiles
//! per warpgroup in the 128-byte swizzle ([`wgmma_tile`]):
//! - v07: `wgmma.m64n256k16` from shared memory, one warpgroup, a `cp.async` ring;
//! - v08: the tiles brought by TMA into an mbarrier ring ([`tma_ring`]);
//! - v09: a producer warpgroup and two consumer warpgroups, `setmaxnreg`;
//! - v10: v09 persistent, tiles in L2-friendly groups;
//! - v11: v09 in clusters of two sharing each W tile through TMA multicast.

/// `unroll!(N, i => { body })`: `body` for `i` = 0, 1, .. N-1 (N ≤ 16, a constant
/// expression, e.g. a const generic), as written-out copies guarded by `i < N`, which fold
/// away. Loops that index register arrays (fragments, accumulators) must be fully unrolled
/// or the arrays go to local memory.
#[allow(unused_macros)]
macro_rules! unroll {
    (@[$($k:literal),*] $n:expr, $i:ident $b:block) => {
        const { assert!($n <= 16) };
        $( { let $i: usize = $k; if $i < $n { $b } } )*
    };
    ($n:expr, $i:ident => $b:block) => {
        unroll!(@[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] $n, $i $b)
    };
}
#[allow(unused_imports)]
pub(crate) use unroll;

pub mod v01_mma_sync;
pub mod v02_smem_ldmatrix;
pub mod v03_cp_async_pipeline;
pub mod v04_swizzled;
pub mod v05_weight_streaming;
pub mod v06_fragment_double_buffer;
pub mod v07_wgmma;
pub mod v08_tma;
pub mod v09_warp_specialized;
pub mod v10_persistent;
pub mod v11_cluster_multicast;

pub mod tma_ring;
pub mod wgmma_tile;

/// Shared-memory layout of v04: tiles of rows of 32 bf16 (64 bytes, four 16-byte chunks),
/// unpadded, with chunk `c` of row `r` stored at chunk `c ^ ((r >> 1) & 3)` of that row.
/// The eight rows one `ldmatrix` phase reads (rows r0..r0+7, r0 a multiple of 8, one logical
/// chunk) then fall on eight distinct 16-byte bank groups: (r & 1) picks the half of the
/// 128-byte bank window, (r >> 1) & 3 the chunk inside it. Its own inverse for a fixed row.
pub const fn swizzle_chunk(row: u32, chunk: u32) -> u32 {
    chunk ^ ((row >> 1) & 3)
}

/// Element offset of `(row, col)` (col < 32) in v04's swizzled tile of 32-element rows:
/// a bijection of `rows × 32` onto `0 .. rows·32` that keeps each row's elements in that row
/// and each 8-element (16-byte) chunk contiguous.
pub const fn swizzled_offset(row: u32, col: u32) -> u32 {
    row * 32 + swizzle_chunk(row, col / 8) * 8 + col % 8
}

/// Whether the swizzle is what v04 relies on, checked over `rows` rows (the pattern repeats
/// every 8): every row's four chunks land on four distinct chunk slots of that row (a
/// bijection), and for every group of 8 rows starting at a multiple of 8 and every logical
/// chunk, the 8 chunks (one `ldmatrix` phase) fall on 8 distinct 16-byte bank groups of the
/// 128-byte bank window (no bank conflicts). Asserted at compile time below.
pub const fn swizzle_is_conflict_free_bijection(rows: u32) -> bool {
    let mut r = 0;
    while r < rows {
        let mut seen = 0u32;
        let mut c = 0;
        while c < 4 {
            let s = swizzle_chunk(r, c);
            if s >= 4 || seen & (1 << s) != 0 {
                return false;
            }
            seen |= 1 << s;
            c += 1;
        }
        r += 1;
    }
    let mut r0 = 0;
    while r0 + 8 <= rows {
        let mut c = 0;
        while c < 4 {
            let mut groups = 0u32;
            let mut i = 0;
            while i < 8 {
                let r = r0 + i;
                // 16-byte unit index inside the 128-byte (32-bank) window.
                let g = (r * 4 + swizzle_chunk(r, c)) % 8;
                groups |= 1 << g;
                i += 1;
            }
            if groups != 0xff {
                return false;
            }
            c += 1;
        }
        r0 += 8;
    }
    true
}

const _: () = assert!(swizzle_is_conflict_free_bijection(256));

/// Device helpers shared by the variants: fragment loads from shared memory and the mma
/// of one 16-deep K step over a warp tile, tile loads into shared memory (through registers
/// or `cp.async`), and the masked bf16 epilogue.
#[cfg(target_arch = "nvptx64")]
pub(crate) mod dev {
    use crate::gpu::async_copy::copy_16_zfill;
    use crate::gpu::bf16;
    use crate::gpu::mma::{self, ldmatrix_x4, mma_m16n8k16_bf16, store_shared_u32x4};

    /// Element offset of `(row, col)` in a row-major matrix with row stride `ld`.
    #[inline(always)]
    pub fn at(row: u32, ld: u32, col: u32) -> usize {
        row as usize * ld as usize + col as usize
    }

    /// Whether bf16 pairs `y[row][col..col+2]` (col even) can be stored as one 32-bit word:
    /// y 4-byte aligned and N even.
    #[inline(always)]
    pub fn pairs_storable(y: *mut u16, n: u32) -> bool {
        (y as u64).is_multiple_of(4) && n.is_multiple_of(2)
    }

    /// `y[row][col] = v0`, `y[row][col + 1] = v1`, rounded to bf16, each only if inside the
    /// M×N matrix; one 32-bit store when both are inside and `pairs` (see
    /// [`pairs_storable`]).
    ///
    /// # Safety
    /// `y` is M×N; `col` is even; `pairs` only if `pairs_storable(y, n)`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn store_pair(
        y: *mut u16,
        m: u32,
        n: u32,
        row: u32,
        col: u32,
        v0: f32,
        v1: f32,
        pairs: bool,
    ) {
        if row >= m {
            return;
        }
        // SAFETY: row < m and every column written is checked against n; the 32-bit store
        // is 4-byte aligned (y aligned, n even, col even).
        unsafe {
            let p = y.add(at(row, n, col));
            if pairs && col + 1 < n {
                *(p as *mut u32) = mma::pack_bf16x2(v0, v1);
            } else {
                if col < n {
                    *p = bf16::from_f32(v0);
                }
                if col + 1 < n {
                    *p.add(1) = bf16::from_f32(v1);
                }
            }
        }
    }

    /// The epilogue of a warp tile of MI×NI mma tiles (16×8 each) whose corner is
    /// `(r0, c0)` in y: each lane stores its four accumulators of every tile.
    ///
    /// # Safety
    /// `y` is M×N; `pairs` only if `pairs_storable(y, n)`; all lanes of the warp call it.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn store_warp_tile<const MI: usize, const NI: usize>(
        y: *mut u16,
        m: u32,
        n: u32,
        r0: u32,
        c0: u32,
        lane: u32,
        acc: &[[[f32; 4]; NI]; MI],
        pairs: bool,
    ) {
        let (g, tg) = (lane >> 2, lane & 3);
        unroll!(MI, i => {
            unroll!(NI, j => {
                let row = r0 + (i * 16) as u32 + g;
                let col = c0 + (j * 8) as u32 + 2 * tg;
                let c = acc[i][j];
                // SAFETY: store_pair masks against M and N; col is even.
                unsafe {
                    store_pair(y, m, n, row, col, c[0], c[1], pairs);
                    store_pair(y, m, n, row + 8, col, c[2], c[3], pairs);
                }
            });
        });
    }

    /// One 16-deep K step of a warp tile: MI×NI mma tiles (16×8 each) with corner
    /// `(wm0, wn0)` inside the block tile, reading the 16 columns `16·ks ..` of the A tile
    /// (x rows, at `.shared` address `a_s`) and of the B tile (W rows, at `b_s`). `off(row,
    /// chunk)` is the byte offset of 16-byte chunk `chunk` of `row` in a tile (the step's
    /// layout: padded or swizzled). A fragments: one `ldmatrix.x4` per 16 rows (lane `l`:
    /// row `l % 16`, chunk `2·ks + l / 16`); B fragments: one `.x4` per 16 rows of W, i.e. two
    /// n8 tiles (lane `l`: row `l % 8 + (l / 16)·8`, chunk `2·ks + (l / 8) % 2`; registers 0,1
    /// are the first n8 tile's `b`, 2,3 the second's).
    ///
    /// # Safety
    /// The tiles hold the rows `wm0 .. wm0 + 16·MI` and `wn0 .. wn0 + 8·NI` at the layout
    /// `off`, 16-byte aligned, with at least `2·ks + 2` chunks per row; all 32 lanes call it.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn mma_k16<const MI: usize, const NI: usize>(
        acc: &mut [[[f32; 4]; NI]; MI],
        a_s: u32,
        b_s: u32,
        wm0: u32,
        wn0: u32,
        ks: u32,
        lane: u32,
        off: impl Fn(u32, u32) -> u32,
    ) {
        const { assert!(NI.is_multiple_of(2)) };
        let mut af = [[0u32; 4]; MI];
        let mut bf = [[0u32; 2]; NI];
        // SAFETY: rows and chunks inside the tiles by the caller's contract.
        unsafe {
            unroll!(MI, i => {
                let row = wm0 + (i * 16) as u32 + lane % 16;
                af[i] = ldmatrix_x4(a_s + off(row, 2 * ks + lane / 16));
            });
            unroll!(NI / 2, p => {
                let row = wn0 + (p * 16) as u32 + lane % 8 + (lane / 16) * 8;
                let r = ldmatrix_x4(b_s + off(row, 2 * ks + (lane / 8) % 2));
                bf[2 * p] = [r[0], r[1]];
                bf[2 * p + 1] = [r[2], r[3]];
            });
        }
        unroll!(MI, i => {
            unroll!(NI, j => {
                acc[i][j] = mma_m16n8k16_bf16(af[i], bf[j], acc[i][j]);
            });
        });
    }

    /// Fetch the 16-byte chunks of a ROWS×BK tile of a row-major bf16 matrix (`rows × k`,
    /// K contiguous) at `(r0, k0)` into registers: thread `t` takes chunks `t + i·T`, i < N,
    /// in row-major chunk order (chunk `idx % (BK/8)` of tile row `idx / (BK/8)`). Chunks
    /// outside the matrix are zero (K is a multiple of 8, so a chunk is all in or all out).
    ///
    /// # Safety
    /// The matrix at `p` is `rows × k` with `k % 8 == 0` and `p` 16-byte aligned.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn fetch_chunks<
        const ROWS: usize,
        const BK: usize,
        const T: usize,
        const N: usize,
    >(
        p: *const u16,
        rows: u32,
        k: u32,
        r0: u32,
        k0: u32,
        t: u32,
    ) -> [[u32; 4]; N] {
        const { assert!(ROWS * BK / 8 == N * T && BK.is_multiple_of(8)) };
        let mut out = [[0u32; 4]; N];
        unroll!(N, i => {
            let idx = t + (i * T) as u32;
            let (r, ch) = (idx / (BK / 8) as u32, idx % (BK / 8) as u32);
            let (row, col) = (r0 + r, k0 + 8 * ch);
            if row < rows && col < k {
                // SAFETY: inside the matrix (col + 8 <= k since both are multiples of 8),
                // 16-byte aligned (p aligned, k % 8 == 0, col % 8 == 0); x and W are
                // never written by the kernel.
                out[i] = unsafe { bf16::load16_nc(p.add(at(row, k, col)).cast()) };
            }
        });
        out
    }

    /// Store chunks fetched by [`fetch_chunks`] (same ROWS, BK, T, N, t) into the tile at
    /// `.shared` address `s` with the layout `off(row, chunk)`.
    ///
    /// # Safety
    /// The tile at `s` holds ROWS rows of BK/8 chunks at the layout `off`, 16-byte aligned.
    #[inline(always)]
    pub unsafe fn store_chunks<const BK: usize, const T: usize, const N: usize>(
        v: &[[u32; 4]; N],
        t: u32,
        s: u32,
        off: impl Fn(u32, u32) -> u32,
    ) {
        unroll!(N, i => {
            let idx = t + (i * T) as u32;
            let (r, ch) = (idx / (BK / 8) as u32, idx % (BK / 8) as u32);
            // SAFETY: r < ROWS, ch < BK/8: inside the tile by the caller's contract.
            unsafe { store_shared_u32x4(s + off(r, ch), v[i]) };
        });
    }

    /// As [`fetch_chunks`] then [`store_chunks`], but with 16-byte `cp.async.cg` copies
    /// (global to shared without registers; not committed here). Chunks outside the matrix
    /// copy 0 bytes from the matrix start and zero-fill.
    ///
    /// # Safety
    /// As [`fetch_chunks`] and [`store_chunks`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn copy_chunks_async<
        const ROWS: usize,
        const BK: usize,
        const T: usize,
        const N: usize,
    >(
        p: *const u16,
        rows: u32,
        k: u32,
        r0: u32,
        k0: u32,
        t: u32,
        s: u32,
        off: impl Fn(u32, u32) -> u32,
    ) {
        const { assert!(ROWS * BK / 8 == N * T && BK.is_multiple_of(8)) };
        unroll!(N, i => {
            let idx = t + (i * T) as u32;
            let (r, ch) = (idx / (BK / 8) as u32, idx % (BK / 8) as u32);
            let (row, col) = (r0 + r, k0 + 8 * ch);
            let inside = row < rows && col < k;
            // SAFETY: an inside chunk is 16 readable, 16-byte-aligned bytes (as in
            // fetch_chunks); an outside one reads 0 bytes of the (valid) matrix start. The
            // destination is inside the tile by the caller's contract. copy_16_zfill only
            // takes the address: the f32 pointer type is irrelevant to the copy.
            unsafe {
                let src = if inside { p.add(at(row, k, col)) } else { p };
                copy_16_zfill(s + off(r, ch), src.cast::<f32>(), if inside { 16 } else { 0 });
            }
        });
    }
}
