//! memory/v01_strided — the uncoalesced baseline.
//!
//! Changed from nothing: this is the first step. Every element is still touched exactly once,
//! but consecutive threads touch addresses `stride` floats apart.
//!
//! Thread mapping: the array is viewed as `rows = ceil(n / stride)` rows of `stride` floats.
//! Thread `i` takes row `i % rows`, column `i / rows`, i.e. element `(i % rows) * stride +
//! i / rows`: a bijection onto `0..n`, with neighbours in a warp `stride` elements apart.
//!
//! Memory traffic: a warp's 32 loads hit 32 different 32-byte sectors once `stride >= 8`, using
//! 4 bytes of each; the sector is evicted long before the neighbour that needs the rest comes
//! by. Reads move `min(stride, 8)` times the useful bytes (16 times from stride 16 on: DRAM
//! then delivers a 64-byte sector pair per element); each partial-sector write costs a fill
//! read and a write of the sector, `min(stride, 8)` times each way. The copy: 3×, 6×, 12×,
//! 16× its minimum at strides 2, 4, 8, ≥ 16 (the host's `modelled_bytes`, checked against
//! ncu's DRAM counters on the H200).
//!
//! Expected bound: DRAM, at about 1/16 of the copy roof in useful GB/s from stride 16 on.

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;
/// Largest stride the kernel accepts (the host refuses more).
pub const MAX_STRIDE: u32 = 64;

/// Threads needed for `n` elements at `stride`: `rows * stride`.
pub const fn threads(n: u64, stride: u32) -> u64 {
    n.div_ceil(stride as u64) * stride as u64
}

/// The element thread `i` handles, or `None` for the few padding threads of the last row.
#[inline(always)]
pub fn element(i: u64, n: u64, stride: u32) -> Option<u64> {
    let rows = n.div_ceil(stride as u64);
    // 32-bit division where it fits: a u64 divide is a long software sequence on the GPU,
    // and this step is about the access pattern, not about index arithmetic.
    let (r, c) = if rows * stride as u64 <= u32::MAX as u64 {
        let (i, rows) = (i as u32, rows as u32);
        ((i % rows) as u64, (i / rows) as u64)
    } else {
        (i % rows, i / rows)
    };
    let idx = r * stride as u64 + c;
    if c < stride as u64 && idx < n {
        Some(idx)
    } else {
        None
    }
}

#[cfg(target_arch = "nvptx64")]
use crate::gpu::thread;

crate::kernel! {
    /// `dst[j] = src[j]` with a strided thread-to-element mapping.
    pub unsafe fn memory_v01_strided_copy(
        src: *const f32,
        dst: *mut f32,
        n: u64,
        stride: u32,
    ) {
        if let Some(j) = element(thread::index_1d(), n, stride) {
            // SAFETY: j < n and the host passed buffers of at least n elements.
            unsafe { *dst.add(j as usize) = *src.add(j as usize) };
        }
    }
}

crate::kernel! {
    /// `y[j] = a * x[j] + y[j]` with a strided thread-to-element mapping.
    pub unsafe fn memory_v01_strided_saxpy(
        a: f32,
        x: *const f32,
        y: *mut f32,
        n: u64,
        stride: u32,
    ) {
        if let Some(j) = element(thread::index_1d(), n, stride) {
            // SAFETY: j < n and the host passed buffers of at least n elements.
            unsafe {
                let yj = y.add(j as usize);
                *yj = crate::gpu::math::fma(a, *x.add(j as usize), *yj);
            }
        }
    }
}
