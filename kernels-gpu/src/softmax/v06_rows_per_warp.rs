//! softmax/v06_rows_per_warp — short rows: a group of lanes per row, the row in registers.
//!
//! Changed from v04: v04 gives a 128-element row a whole warp, loads it with scalar (in bf16,
//! 2-byte) loads, one in flight per lane, and reads it twice. Here a group of `G` lanes owns a
//! row, `G = warp_row_lanes(cols)` (the fewest lanes, a power of two, that hold the row at
//! `ROW_ITEMS` = 16 elements a lane: 8 for 128 columns), so a warp serves `32 / G` rows. Each
//! lane loads its 16 elements into registers once, as 16-byte vectors when the rows are
//! 16-byte aligned (4 vectors in f32, 2 in bf16: 64 or 32 bytes in flight per lane), and max,
//! exp, sum and the output all come from those registers (v05's layout, with the group in
//! place of the block). Max and sum are butterfly shuffles with masks below `G`, which never
//! leave the group: no shared memory, no barrier. Rows of up to `WARP_ROW_MAX_COLS` = 512
//! elements (32 lanes × 16); the host refuses longer ones for this variant.
//!
//! Thread mapping: `BLOCK_THREADS` a block; group `g` of the block (threads `g·G .. g·G + G`,
//! inside one warp) owns row `blockIdx.x · BLOCK_THREADS / G + g`; slot `k` of lane `q` of the
//! group holds element `row_slot(k, q, G, ..)`: with 16-byte vectors, vector `c` of lane `q`
//! is the row's vector `c·G + q`, so the group reads `G·16` contiguous bytes per instruction.
//!
//! Memory traffic: the minimum, 1 read + 1 write.
//!
//! Expected bound: DRAM, near the copy roof, for short rows (262144×128 in f32 and bf16).

pub use crate::row_layout::{WARP_ROW_MAX_COLS, warp_row_lanes};

/// Threads per block (8 warps): `BLOCK_THREADS / warp_row_lanes(cols)` rows a block.
pub const BLOCK_THREADS: u32 = 256;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::{Storage, aligned16};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, row, thread, warp};
#[cfg(target_arch = "nvptx64")]
use crate::softmax::device::{exp_sub, safe_inv, safe_max};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn run<T: Storage>(x: *const T, y: *mut T, rows: u32, cols: u32) {
    // The same function the host sized the grid with; a power of two, so divisions by it
    // are shifts (`/` would be a dozen instructions).
    let g = warp_row_lanes(cols);
    let lg = g.trailing_zeros();
    let tid = thread::thread_idx_x();
    let first = thread::block_idx_x() * (BLOCK_THREADS >> lg);
    // A warp whose first row is past the end leaves whole; inside a warp that stays, every
    // lane takes part in the shuffles, and lanes past the last row only skip memory.
    if first + ((tid & !31) >> lg) >= rows {
        return;
    }
    let r = first + (tid >> lg);
    let live = r < rows;
    let q = tid & (g - 1);
    let off = r as usize * cols as usize;
    let vec = aligned16(x) && aligned16(y) && cols.is_multiple_of(T::PER16 as u32);
    let mut v = [f32::NEG_INFINITY; 16];
    // SAFETY: a live lane's row is x[off .. off + cols] with r < rows; row::load_for/store_for
    // stay inside it (slots past cols are skipped, vectors whole and aligned when `vec`).
    unsafe {
        if live {
            row::load_for(q, g, x.add(off), cols, vec, f32::NEG_INFINITY, &mut v);
        }
        let mut m = f32::NEG_INFINITY;
        for k in 0..16 {
            m = math::max(m, v[k]);
        }
        let m = safe_max(warp::max_f32_in(m, g));
        let mut s = 0.0f32;
        for k in 0..16 {
            // Padding slots are -inf: exp gives 0.
            v[k] = exp_sub(v[k], m);
            s += v[k];
        }
        let inv = safe_inv(warp::sum_f32_in(s, g));
        for k in 0..16 {
            v[k] *= inv;
        }
        if live {
            row::store_for(q, g, y.add(off), cols, vec, &v);
        }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (f32), rows of up to 512.
    pub unsafe fn softmax_v06_rows_per_warp_f32(
        x: *const f32,
        y: *mut f32,
        rows: u32,
        cols: u32,
    ) {
        // SAFETY: forwarded from the host wrapper's checks (cols <= WARP_ROW_MAX_COLS; grid =
        // rows · warp_row_lanes(cols) threads in blocks of BLOCK_THREADS).
        unsafe { run::<f32>(x, y, rows, cols) }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (bf16), rows of up to 512.
    pub unsafe fn softmax_v06_rows_per_warp_bf16(
        x: *const u16,
        y: *mut u16,
        rows: u32,
        cols: u32,
    ) {
        // SAFETY: as above.
        unsafe { run::<u16>(x, y, rows, cols) }
    }
}
