//! softmax/v05_row_in_registers — the row held on chip: one DRAM read, one write.
//!
//! Changed from v03: each thread loads its `ROW_ITEMS` (16) elements of the row into
//! registers once, with 16-byte vector loads when the rows are 16-byte aligned; max, exp,
//! sum and the normalized output are all computed from those registers. The block size
//! follows the row: `row_threads(cols)` = cols / 16 rounded up to whole warps, up to 1024, so
//! rows of up to `ROW_MAX_COLS` = 16384 elements fit; the host refuses longer rows for this
//! variant (`softmax::auto` falls back to v03 there).
//!
//! Thread mapping: block r owns row r; slot k of thread t holds element `row_slot(k, t, ..)`
//! (consecutive threads take consecutive 16-byte vectors).
//!
//! Memory traffic: the minimum, 1 read + 1 write.
//!
//! Expected bound: DRAM, near the copy roof.

/// The constants the CUDA C++ twin (`host/twins/softmax.cu`) is compiled with (`crate::twins`).
#[cfg(not(target_arch = "nvptx64"))]
pub const TWIN_DEFINES: &[(&str, i64)] = &[
    ("SOFTMAX_V05_ROW_ITEMS", crate::row_layout::ROW_ITEMS as i64),
    // softmax::device::LOG2_E (device-only there), as f32 bits.
    (
        "SOFTMAX_V05_LOG2_E_BITS",
        core::f32::consts::LOG2_E.to_bits() as i64,
    ),
    (
        "SOFTMAX_V05_ROW_MAX_THREADS",
        crate::row_layout::ROW_MAX_THREADS as i64,
    ),
    ("SOFTMAX_V05_SHARED_BYTES", SHARED_BYTES as i64),
];

/// Dynamic shared memory: one f32 per warp for the block reduction.
pub const SHARED_BYTES: u32 = 32 * 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::{Storage, aligned16};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{block, math, row, shared, thread};
#[cfg(target_arch = "nvptx64")]
use crate::softmax::device::{exp_sub, safe_inv, safe_max};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn run<T: Storage>(x: *const T, y: *mut T, cols: u32) {
    let off = thread::block_idx_x() as usize * cols as usize;
    let smem = shared::dynamic_shared_mem::<f32>();
    let vec = aligned16(x) && aligned16(y) && cols.is_multiple_of(T::PER16 as u32);
    let mut v = [0.0f32; 16];
    // SAFETY: the row is x[off .. off + cols] (block r < rows); row::load/store stay
    // inside it; smem has 32 f32.
    unsafe {
        row::load(x.add(off), cols, vec, f32::NEG_INFINITY, &mut v);
        let mut m = f32::NEG_INFINITY;
        for k in 0..16 {
            m = math::max(m, v[k]);
        }
        let m = safe_max(block::max_f32(m, smem));
        let mut s = 0.0f32;
        for k in 0..16 {
            // Padding slots are -inf: exp gives 0.
            v[k] = exp_sub(v[k], m);
            s += v[k];
        }
        let inv = safe_inv(block::sum_f32(s, smem));
        for k in 0..16 {
            v[k] *= inv;
        }
        row::store(y.add(off), cols, vec, &v);
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (f32), rows of up to 16384.
    pub unsafe fn softmax_v05_row_in_registers_f32(
        x: *const f32,
        y: *mut f32,
        cols: u32,
    ) {
        // SAFETY: forwarded from the host wrapper's checks (grid = rows, block = row_threads).
        unsafe { run::<f32>(x, y, cols) }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (bf16), rows of up to 16384.
    pub unsafe fn softmax_v05_row_in_registers_bf16(
        x: *const u16,
        y: *mut u16,
        cols: u32,
    ) {
        // SAFETY: as above.
        unsafe { run::<u16>(x, y, cols) }
    }
}
