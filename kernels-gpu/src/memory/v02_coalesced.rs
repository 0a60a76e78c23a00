//! memory/v02_coalesced — one element a thread, neighbours on neighbouring addresses.
//!
//! Changed from v01: thread `i` takes element `i`. A warp's 32 loads of 4 bytes fall in one
//! 128-byte line (four sectors), every byte fetched is used.
//!
//! Thread mapping: `i = blockIdx.x * BLOCK_THREADS + threadIdx.x`, one element each.
//!
//! Memory traffic: the minimum, each input read once and each output written once. But each
//! thread has a single 4-byte load in flight, so latency hiding rests on occupancy alone.
//!
//! Expected bound: DRAM, a little under the copy roof (many small transactions).

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread};

crate::kernel! {
    /// `dst[i] = src[i]`.
    pub unsafe fn memory_v02_coalesced_copy(
        src: *const f32,
        dst: *mut f32,
        n: u64,
    ) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n, buffers hold n elements.
            unsafe { *dst.add(i as usize) = *src.add(i as usize) };
        }
    }
}

crate::kernel! {
    /// `y[i] = a * x[i] + y[i]`.
    pub unsafe fn memory_v02_coalesced_saxpy(
        a: f32,
        x: *const f32,
        y: *mut f32,
        n: u64,
    ) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n, buffers hold n elements.
            unsafe {
                let yi = y.add(i as usize);
                *yi = math::fma(a, *x.add(i as usize), *yi);
            }
        }
    }
}
