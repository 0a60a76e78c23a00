//! memory/v04_grid_stride_ilp — a grid sized to the machine, several loads in flight.
//!
//! Changed from v03: instead of one thread per vector (millions of short-lived blocks), the
//! grid is `BLOCKS_PER_SM` blocks per multiprocessor and each thread walks the array with a
//! grid-stride loop, issuing `UNROLL` independent 16-byte loads before the first store.
//! Bytes in flight per thread grow by `UNROLL`, and block launch/retire overhead disappears.
//!
//! Thread mapping: `T = gridDim * BLOCK_THREADS` threads; thread `t` takes vectors
//! `t, t+T, .., t+(UNROLL-1)T`, then jumps by `UNROLL*T`; leftover vectors one at a time;
//! head and tail scalars as in v03. Mismatched alignment: a scalar grid-stride loop.
//!
//! Memory traffic: the minimum (each byte once), in 16-byte pieces.
//!
//! Expected bound: DRAM, at the copy roof.

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;
/// Resident blocks per multiprocessor the host launches (2048 threads/SM on sm_80/sm_90).
pub const BLOCKS_PER_SM: u32 = 8;
/// Independent 16-byte loads each thread issues before it stores.
pub const UNROLL: u64 = 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread, vector};
#[cfg(target_arch = "nvptx64")]
use crate::memory::VectorSplit;

crate::kernel! {
    /// `dst = src`.
    pub unsafe fn memory_v04_grid_stride_ilp_copy(
        src: *const f32,
        dst: *mut f32,
        n: u64,
    ) {
        let t = thread::index_1d();
        let step = thread::grid_stride_1d();
        // SAFETY: (whole body) indices stay below n (loop bounds), vector accesses start at
        // 16-byte boundaries (VectorSplit).
        unsafe {
            let Some(s) = VectorSplit::new(src as u64, dst as u64, n) else {
                let mut j = t;
                while j < n {
                    *dst.add(j as usize) = *src.add(j as usize);
                    j += step;
                }
                return;
            };
            let (src_v, dst_v) = (src.add(s.head as usize), dst.add(s.head as usize));
            let mut v = t;
            while v + (UNROLL - 1) * step < s.vectors {
                let mut r = [vector::F32x4([0.0; 4]); UNROLL as usize];
                for k in 0..UNROLL as usize {
                    r[k] = vector::load_f32x4_nc(src_v.add(4 * (v + k as u64 * step) as usize));
                }
                for k in 0..UNROLL as usize {
                    vector::store_f32x4(dst_v.add(4 * (v + k as u64 * step) as usize), r[k]);
                }
                v += UNROLL * step;
            }
            while v < s.vectors {
                vector::store_f32x4(
                    dst_v.add(4 * v as usize),
                    vector::load_f32x4_nc(src_v.add(4 * v as usize)),
                );
                v += step;
            }
            if t < s.head {
                *dst.add(t as usize) = *src.add(t as usize);
            }
            if t < s.tail {
                let j = (s.tail_start() + t) as usize;
                *dst.add(j) = *src.add(j);
            }
        }
    }
}

crate::kernel! {
    /// `y = a*x + y`.
    pub unsafe fn memory_v04_grid_stride_ilp_saxpy(
        a: f32,
        x: *const f32,
        y: *mut f32,
        n: u64,
    ) {
        let t = thread::index_1d();
        let step = thread::grid_stride_1d();
        // SAFETY: as in the copy.
        unsafe {
            let Some(s) = VectorSplit::new(x as u64, y as u64, n) else {
                let mut j = t;
                while j < n {
                    let yj = y.add(j as usize);
                    *yj = math::fma(a, *x.add(j as usize), *yj);
                    j += step;
                }
                return;
            };
            let (x_v, y_v) = (x.add(s.head as usize), y.add(s.head as usize));
            let saxpy4 = |xv: vector::F32x4, mut yv: vector::F32x4| {
                for k in 0..4 {
                    yv.0[k] = math::fma(a, xv.0[k], yv.0[k]);
                }
                yv
            };
            let mut v = t;
            while v + (UNROLL - 1) * step < s.vectors {
                let mut xr = [vector::F32x4([0.0; 4]); UNROLL as usize];
                let mut yr = [vector::F32x4([0.0; 4]); UNROLL as usize];
                for k in 0..UNROLL as usize {
                    let j = 4 * (v + k as u64 * step) as usize;
                    xr[k] = vector::load_f32x4_nc(x_v.add(j));
                    yr[k] = vector::load_f32x4(y_v.add(j));
                }
                for k in 0..UNROLL as usize {
                    let j = 4 * (v + k as u64 * step) as usize;
                    vector::store_f32x4(y_v.add(j), saxpy4(xr[k], yr[k]));
                }
                v += UNROLL * step;
            }
            while v < s.vectors {
                let j = 4 * v as usize;
                vector::store_f32x4(
                    y_v.add(j),
                    saxpy4(
                        vector::load_f32x4_nc(x_v.add(j)),
                        vector::load_f32x4(y_v.add(j)),
                    ),
                );
                v += step;
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
    }
}
