//! bf16_gemm/v01_mma_sync — tensor cores, fragments straight from global memory.
//!
//! What it does: the first step of the ladder puts the multiply on the tensor cores with
//! `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` and nothing else: each lane loads
//! exactly the elements of its A and B fragments (the PTX ISA m16n8k16 layout, see
//! [`crate::gpu::mma`]) from global memory, 16 columns of K at a time, and keeps its f32
//! accumulators in registers. Elements outside the matrices are read as zero, so any M, N
//! and K work (`K_MULTIPLE = 1`); a fragment register (two neighbouring K elements) is one
//! 32-bit load when x (or W) rows are 4-byte aligned (K even) and both are inside, else two
//! checked 16-bit loads.
//!
//! Thread mapping: 4 warps per block in 2×2, each owning a 16×16 tile of y (two 16×8 mma
//! tiles sharing one A fragment); the block owns 32×32. In a warp, lane `l` (g = l >> 2,
//! t = l % 4) loads x rows g, g+8 and W rows (columns of y) g, 8+g at K offsets 2t, 2t+8.
//!
//! Memory traffic: every warp reads its 16 rows of x and 16 rows of W once per K step, with
//! no sharing between warps except through L1/L2: x is read N/16 times and W M/16 times
//! (from cache), in 4-byte pieces scattered over 8 rows (each warp load touches 8 rows × 16
//! bytes).
//!
//! Expected bound: load latency and L1/L2 bandwidth, far below the tensor pipe: a warp issues
//! 6 loads per 2 mmas and waits for them, with 4 warps a block.

pub const BLOCK_THREADS: u32 = 128;
/// Rows of y per block.
pub const BM: u32 = 32;
/// Columns of y per block.
pub const BN: u32 = 32;
/// No dynamic shared memory.
pub const SHARED_BYTES: u32 = 0;
/// Any K: every element is loaded on its own or as an aligned pair.
pub const K_MULTIPLE: u32 = 1;
/// The warp tile (rows × columns of y): one m16 tile by two n8 tiles.
pub const WM: u32 = 16;
pub const WN: u32 = 16;

const _: () = assert!(BLOCK_THREADS == 32 * (BM / WM) * (BN / WN));

#[cfg(target_arch = "nvptx64")]
use super::dev::{at, pairs_storable, store_warp_tile};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{mma, thread};

/// The fragment register holding elements `(row, col)` and `(row, col + 1)` of a row-major
/// bf16 matrix `rows × k` (col even), zero outside. `vec`: rows are 4-byte aligned (p
/// aligned, k even), so an inside pair is one 32-bit load.
///
/// # Safety
/// The matrix at `p` is `rows × k`; `vec` only as above.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_pair(p: *const u16, rows: u32, k: u32, row: u32, col: u32, vec: bool) -> u32 {
    if row >= rows {
        return 0;
    }
    // SAFETY: row < rows and each element read is checked against k; the 32-bit load is
    // 4-byte aligned (p aligned, k even, col even).
    unsafe {
        let q = p.add(at(row, k, col));
        if vec && col + 1 < k {
            *(q as *const u32)
        } else {
            let lo = if col < k { *q } else { 0 };
            let hi = if col + 1 < k { *q.add(1) } else { 0 };
            mma::pair_bf16(lo, hi)
        }
    }
}

crate::kernel! {
    /// v01: `y = x·Wᵀ`, one m16n8k16 bf16 mma pair per warp per 16 of K, fragments loaded
    /// from global memory.
    pub unsafe fn bf16_gemm_v01_mma_sync(
        m: u32,
        n: u32,
        k: u32,
        x: *const u16,
        w: *const u16,
        y: *mut u16,
    ) {
        let t = thread::thread_idx_x();
        let (lane, warp) = (t % 32, t / 32);
        let r0 = thread::block_idx_y() * BM + (warp / (BN / WN)) * WM;
        let c0 = thread::block_idx_x() * BN + (warp % (BN / WN)) * WN;
        let (g, tg) = (lane >> 2, lane & 3);
        let x_vec = (x as u64).is_multiple_of(4) && k.is_multiple_of(2);
        let w_vec = (w as u64).is_multiple_of(4) && k.is_multiple_of(2);
        let mut acc = [[[0.0f32; 4]; 2]; 1];
        let mut k0 = 0;
        while k0 < k {
            let (ka, kb) = (k0 + 2 * tg, k0 + 2 * tg + 8);
            // SAFETY: load_pair checks every element against the matrices' sizes.
            let (a, b) = unsafe {
                let a = [
                    load_pair(x, m, k, r0 + g, ka, x_vec),
                    load_pair(x, m, k, r0 + g + 8, ka, x_vec),
                    load_pair(x, m, k, r0 + g, kb, x_vec),
                    load_pair(x, m, k, r0 + g + 8, kb, x_vec),
                ];
                let b = [
                    [
                        load_pair(w, n, k, c0 + g, ka, w_vec),
                        load_pair(w, n, k, c0 + g, kb, w_vec),
                    ],
                    [
                        load_pair(w, n, k, c0 + 8 + g, ka, w_vec),
                        load_pair(w, n, k, c0 + 8 + g, kb, w_vec),
                    ],
                ];
                (a, b)
            };
            acc[0][0] = mma::mma_m16n8k16_bf16(a, b[0], acc[0][0]);
            acc[0][1] = mma::mma_m16n8k16_bf16(a, b[1], acc[0][1]);
            k0 += 16;
        }
        // SAFETY: store_warp_tile masks every store against M and N; the whole warp is here
        // (the loop bound is uniform).
        unsafe { store_warp_tile::<1, 2>(y, m, n, r0, c0, lane, &acc, pairs_storable(y, n)) };
    }
}
