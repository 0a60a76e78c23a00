//! softmax/v04_warp_per_row — short rows: one warp per row, shuffles only.
//!
//! Changed from v03: a 256-thread block wastes most of its threads and two barriers on a
//! row of a few hundred elements; here each warp owns a row, folds its lanes' elements
//! online and combines them with butterfly shuffles: no shared memory, no barrier.
//!
//! Thread mapping: `ROWS_PER_BLOCK` warps a block; warp w of block g owns row
//! `g * ROWS_PER_BLOCK + w`; lane l visits columns l, l + 32, ...
//!
//! Memory traffic: 1 read + 1 write (the second read of a short row hits L1).
//!
//! Expected bound: DRAM for rows of up to ~1K elements; long rows leave one warp with too
//! much serial work (use v05 there).

/// Rows (warps) per block.
pub const ROWS_PER_BLOCK: u32 = 8;
/// Threads per block.
pub const BLOCK_THREADS: u32 = 32 * ROWS_PER_BLOCK;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::Storage;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{thread, warp};
#[cfg(target_arch = "nvptx64")]
use crate::softmax::device::{exp_sub, online, safe_inv, safe_max};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn run<T: Storage>(x: *const T, y: *mut T, rows: u32, cols: u32) {
    let r = thread::block_idx_x() * ROWS_PER_BLOCK + thread::thread_idx_x() / 32;
    // The whole warp leaves together: the shuffles below see all 32 lanes.
    if r >= rows {
        return;
    }
    let off = r as usize * cols as usize;
    let lane = warp::lane_id();
    // SAFETY: every index is off + j with j < cols inside row r < rows.
    unsafe {
        let (mut m, mut s) = (f32::NEG_INFINITY, 0.0f32);
        let mut j = lane;
        while j < cols {
            online(&mut m, &mut s, T::load(x.add(off + j as usize)));
            j += 32;
        }
        let mw = safe_max(warp::max_f32(m));
        let mine = if s > 0.0 { s * exp_sub(m, mw) } else { 0.0 };
        let inv = safe_inv(warp::sum_f32(mine));
        j = lane;
        while j < cols {
            let i = off + j as usize;
            T::store(y.add(i), exp_sub(T::load(x.add(i)), mw) * inv);
            j += 32;
        }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (f32).
    pub unsafe fn softmax_v04_warp_per_row_f32(
        x: *const f32,
        y: *mut f32,
        rows: u32,
        cols: u32,
    ) {
        // SAFETY: forwarded from the host wrapper's checks.
        unsafe { run::<f32>(x, y, rows, cols) }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (bf16).
    pub unsafe fn softmax_v04_warp_per_row_bf16(
        x: *const u16,
        y: *mut u16,
        rows: u32,
        cols: u32,
    ) {
        // SAFETY: as above.
        unsafe { run::<u16>(x, y, rows, cols) }
    }
}
