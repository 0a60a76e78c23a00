//! softmax/v02_block_per_row — one kernel, one block per row, three passes over the row.
//!
//! Changed from v01: the row max and sum never leave the block: they are reduced through
//! shared memory and kept in registers, so one launch does the job and no statistics travel
//! through DRAM. The row is still read three times (max, sum, normalize); the second and
//! third reads mostly hit L1/L2 for rows of a few KiB, but nothing guarantees it.
//!
//! Thread mapping: block r (of `BLOCK_THREADS`) owns row r; thread t visits columns
//! t, t + 256, ...
//!
//! Memory traffic: at best 1 read + 1 write of the tensor; at worst 3 reads + 1 write.
//!
//! Expected bound: DRAM/L2; below the roof because each thread has one scalar load in flight.

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;
/// Dynamic shared memory: one f32 per warp for the block reduction.
pub const SHARED_BYTES: u32 = 32 * 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::Storage;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{block, math, shared, thread};
#[cfg(target_arch = "nvptx64")]
use crate::softmax::device::{exp_sub, safe_inv, safe_max};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn run<T: Storage>(x: *const T, y: *mut T, cols: u32) {
    let off = thread::block_idx_x() as usize * cols as usize;
    let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
    let smem = shared::dynamic_shared_mem::<f32>();
    // SAFETY: every index is off + j with j < cols inside this block's row; smem has 32 f32.
    unsafe {
        let mut m = f32::NEG_INFINITY;
        let mut j = t;
        while j < cols {
            m = math::max(m, T::load(x.add(off + j as usize)));
            j += b;
        }
        let m = safe_max(block::max_f32(m, smem));
        let mut s = 0.0f32;
        j = t;
        while j < cols {
            s += exp_sub(T::load(x.add(off + j as usize)), m);
            j += b;
        }
        let inv = safe_inv(block::sum_f32(s, smem));
        j = t;
        while j < cols {
            let i = off + j as usize;
            T::store(y.add(i), exp_sub(T::load(x.add(i)), m) * inv);
            j += b;
        }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (f32).
    pub unsafe fn softmax_v02_block_per_row_f32(
        x: *const f32,
        y: *mut f32,
        cols: u32,
    ) {
        // SAFETY: forwarded from the host wrapper's checks (grid = rows).
        unsafe { run::<f32>(x, y, cols) }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (bf16).
    pub unsafe fn softmax_v02_block_per_row_bf16(
        x: *const u16,
        y: *mut u16,
        cols: u32,
    ) {
        // SAFETY: as above.
        unsafe { run::<u16>(x, y, cols) }
    }
}
