//! memory/v03_vectorized — 16-byte loads and stores.
//!
//! Changed from v02: each thread moves four f32 with one `ld.global.nc.v4.f32` and one
//! `st.global.v4.f32`: a quarter of the instructions and four times the bytes in flight per
//! thread. Arrays that do not start on a 16-byte boundary get a scalar head (up to 3
//! elements) and every length gets a scalar tail (up to 3); if the two arrays' alignments
//! differ no common split exists and the kernel falls back to four coalesced scalar passes.
//!
//! Thread mapping: thread `t` moves vector `t` (elements `head + 4t .. head + 4t + 4`);
//! threads `0..head` and `0..tail` also take one head and one tail element.
//!
//! Memory traffic: the minimum (each byte once), in 16-byte pieces.
//!
//! Expected bound: DRAM, near the copy roof.

/// The constants the CUDA C++ twin (`host/twins/memory.cu`) is compiled with (`crate::twins`).
#[cfg(not(target_arch = "nvptx64"))]
pub const TWIN_DEFINES: &[(&str, i64)] = &[];

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;

/// Threads to launch for `n` elements: one per vector, and at least four so the scalar head
/// and tail (and the four-pass fallback, which needs `4 * threads >= n`) are covered.
pub const fn threads(n: u64) -> u64 {
    let t = n.div_ceil(4);
    if t < 4 { 4 } else { t }
}

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread, vector};
#[cfg(target_arch = "nvptx64")]
use crate::memory::VectorSplit;

crate::kernel! {
    /// `dst = src`.
    pub unsafe fn memory_v03_vectorized_copy(
        src: *const f32,
        dst: *mut f32,
        n: u64,
    ) {
        let t = thread::index_1d();
        // SAFETY: (whole body) every index below is < n, buffers hold n elements, and vector
        // accesses start at `head`, which VectorSplit puts on a 16-byte boundary.
        unsafe {
            match VectorSplit::new(src as u64, dst as u64, n) {
                Some(s) => {
                    if t < s.vectors {
                        let j = (s.head + 4 * t) as usize;
                        vector::store_f32x4(dst.add(j), vector::load_f32x4_nc(src.add(j)));
                    }
                    if t < s.head {
                        *dst.add(t as usize) = *src.add(t as usize);
                    }
                    if t < s.tail {
                        let j = (s.tail_start() + t) as usize;
                        *dst.add(j) = *src.add(j);
                    }
                }
                None => {
                    let step = thread::grid_stride_1d();
                    for k in 0..4 {
                        let j = t + k * step;
                        if j < n {
                            *dst.add(j as usize) = *src.add(j as usize);
                        }
                    }
                }
            }
        }
    }
}

crate::kernel! {
    /// `y = a*x + y`.
    pub unsafe fn memory_v03_vectorized_saxpy(
        a: f32,
        x: *const f32,
        y: *mut f32,
        n: u64,
    ) {
        let t = thread::index_1d();
        // SAFETY: as in the copy.
        unsafe {
            match VectorSplit::new(x as u64, y as u64, n) {
                Some(s) => {
                    if t < s.vectors {
                        let j = (s.head + 4 * t) as usize;
                        let xv = vector::load_f32x4_nc(x.add(j)).0;
                        let mut yv = vector::load_f32x4(y.add(j));
                        for k in 0..4 {
                            yv.0[k] = math::fma(a, xv[k], yv.0[k]);
                        }
                        vector::store_f32x4(y.add(j), yv);
                    }
                    if t < s.head {
                        let j = t as usize;
                        *y.add(j) = math::fma(a, *x.add(j), *y.add(j));
                    }
                    if t < s.tail {
                        let j = (s.tail_start() + t) as usize;
                        *y.add(j) = math::fma(a, *x.add(j), *y.add(j));
                    }
                }
                None => {
                    let step = thread::grid_stride_1d();
                    for k in 0..4 {
                        let j = t + k * step;
                        if j < n {
                            let j = j as usize;
                            *y.add(j) = math::fma(a, *x.add(j), *y.add(j));
                        }
                    }
                }
            }
        }
    }
}
