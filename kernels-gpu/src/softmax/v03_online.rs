//! softmax/v03_online — running max and sum in one pass, then one normalizing pass.
//!
//! Changed from v02: each thread folds its elements into a running (max m, sum s of
//! e^(x - m)), rescaling s whenever m grows (online softmax); the block then takes the max of
//! the m's and the sum of the rescaled s's. Two reads of the row instead of three, and no
//! row-length limit.
//!
//! Thread mapping: block r (of `BLOCK_THREADS`) owns row r; thread t visits columns
//! t, t + 256, ...
//!
//! Memory traffic: at best 1 read + 1 write; at worst 2 reads + 1 write (long rows whose
//! second read misses L2).
//!
//! Expected bound: DRAM; the fallback for rows too long to keep on chip.

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;
/// Dynamic shared memory: one f32 per warp for the block reduction.
pub const SHARED_BYTES: u32 = 32 * 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::Storage;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{block, shared, thread};
#[cfg(target_arch = "nvptx64")]
use crate::softmax::device::{exp_sub, online, safe_inv, safe_max};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn run<T: Storage>(x: *const T, y: *mut T, cols: u32) {
    let off = thread::block_idx_x() as usize * cols as usize;
    let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
    let smem = shared::dynamic_shared_mem::<f32>();
    // SAFETY: every index is off + j with j < cols inside this block's row; smem has 32 f32.
    unsafe {
        let (mut m, mut s) = (f32::NEG_INFINITY, 0.0f32);
        let mut j = t;
        while j < cols {
            online(&mut m, &mut s, T::load(x.add(off + j as usize)));
            j += b;
        }
        let mb = safe_max(block::max_f32(m, smem));
        // Rescale this thread's sum to the block max (a thread with no finite element
        // has s = 0 and contributes 0).
        let mine = if s > 0.0 { s * exp_sub(m, mb) } else { 0.0 };
        let inv = safe_inv(block::sum_f32(mine, smem));
        j = t;
        while j < cols {
            let i = off + j as usize;
            T::store(y.add(i), exp_sub(T::load(x.add(i)), mb) * inv);
            j += b;
        }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (f32).
    pub unsafe fn softmax_v03_online_f32(
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
    pub unsafe fn softmax_v03_online_bf16(
        x: *const u16,
        y: *mut u16,
        cols: u32,
    ) {
        // SAFETY: as above.
        unsafe { run::<u16>(x, y, cols) }
    }
}
