//! softmax/v01_three_kernels — max, sum and normalize as three kernels, statistics in DRAM.
//!
//! The baseline: kernel 1 writes each row's max to a `rows` f32 array, kernel 2 reads x and
//! the max and writes each row's sum of exp, kernel 3 reads x, max and sum and writes y.
//!
//! Thread mapping: every kernel runs one block of `BLOCK_THREADS` per row; thread t visits
//! columns t, t + 256, ...; block reductions through warp shuffles and 32 f32 of shared
//! memory.
//!
//! Memory traffic: x read three times, y written once (4 passes over rows x cols), plus
//! 2 x rows f32 of statistics written and read back.
//!
//! Expected bound: DRAM; about 2x the bytes of the one-read, one-write minimum.

/// Threads per block of all three kernels.
pub const BLOCK_THREADS: u32 = 256;
/// Dynamic shared memory: one f32 per warp for the block reduction.
pub const SHARED_BYTES: u32 = 32 * 4;
/// Passes over the rows x cols tensor (3 reads of x, 1 write of y).
pub const PASSES: u64 = 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::Storage;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{block, math, shared, thread};
#[cfg(target_arch = "nvptx64")]
use crate::softmax::device::{exp_sub, safe_inv, safe_max};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn max_kernel<T: Storage>(x: *const T, max_out: *mut f32, cols: u32) {
    let r = thread::block_idx_x() as usize;
    let row = x.wrapping_add(r * cols as usize);
    let mut m = f32::NEG_INFINITY;
    let mut j = thread::thread_idx_x();
    // SAFETY: j < cols inside the row; r < rows (one block per row); smem has 32 f32.
    unsafe {
        while j < cols {
            m = math::max(m, T::load(row.add(j as usize)));
            j += thread::block_dim_x();
        }
        let m = block::max_f32(m, shared::dynamic_shared_mem::<f32>());
        if thread::thread_idx_x() == 0 {
            *max_out.add(r) = m;
        }
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn sum_kernel<T: Storage>(x: *const T, max_in: *const f32, sum_out: *mut f32, cols: u32) {
    let r = thread::block_idx_x() as usize;
    let row = x.wrapping_add(r * cols as usize);
    let mut s = 0.0f32;
    let mut j = thread::thread_idx_x();
    // SAFETY: as in `row_max`.
    unsafe {
        let m = safe_max(*max_in.add(r));
        while j < cols {
            s += exp_sub(T::load(row.add(j as usize)), m);
            j += thread::block_dim_x();
        }
        let s = block::sum_f32(s, shared::dynamic_shared_mem::<f32>());
        if thread::thread_idx_x() == 0 {
            *sum_out.add(r) = s;
        }
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn normalize<T: Storage>(
    x: *const T,
    max_in: *const f32,
    sum_in: *const f32,
    y: *mut T,
    cols: u32,
) {
    let r = thread::block_idx_x() as usize;
    let off = r * cols as usize;
    let mut j = thread::thread_idx_x();
    // SAFETY: as in `row_max`.
    unsafe {
        let m = safe_max(*max_in.add(r));
        let inv = safe_inv(*sum_in.add(r));
        while j < cols {
            let i = off + j as usize;
            T::store(y.add(i), exp_sub(T::load(x.add(i)), m) * inv);
            j += thread::block_dim_x();
        }
    }
}

macro_rules! entries {
    ($t:ty, $max:ident, $sum:ident, $norm:ident) => {
        crate::kernel! {
            /// `row_max[r] = max_j x[r, j]`.
            pub unsafe fn $max(x: *const $t, row_max: *mut f32, cols: u32) {
                // SAFETY: forwarded from the host wrapper's checks (grid = rows).
                unsafe { max_kernel::<$t>(x, row_max, cols) }
            }
        }
        crate::kernel! {
            /// `row_sum[r] = sum_j exp(x[r, j] - row_max[r])`.
            pub unsafe fn $sum(
                x: *const $t,
                row_max: *const f32,
                row_sum: *mut f32,
                cols: u32,
            ) {
                // SAFETY: as above.
                unsafe { sum_kernel::<$t>(x, row_max, row_sum, cols) }
            }
        }
        crate::kernel! {
            /// `y[r, j] = exp(x[r, j] - row_max[r]) / row_sum[r]`.
            pub unsafe fn $norm(
                x: *const $t,
                row_max: *const f32,
                row_sum: *const f32,
                y: *mut $t,
                cols: u32,
            ) {
                // SAFETY: as above.
                unsafe { normalize::<$t>(x, row_max, row_sum, y, cols) }
            }
        }
    };
}

entries!(
    f32,
    softmax_v01_three_kernels_max_f32,
    softmax_v01_three_kernels_sum_f32,
    softmax_v01_three_kernels_normalize_f32
);
entries!(
    u16,
    softmax_v01_three_kernels_max_bf16,
    softmax_v01_three_kernels_sum_bf16,
    softmax_v01_three_kernels_normalize_bf16
);
