//! reduce/v07_multi_element — a grid sized to the machine, 16-byte loads, shuffles only.
//!
//! Changed from v06: the grid is `BLOCKS_PER_SM` blocks per multiprocessor and each thread
//! walks the array with a grid-stride loop, issuing `UNROLL` independent 16-byte loads
//! (`ld.global.nc.v4.f32`) into separate accumulators before adding: many bytes in flight,
//! one add per element, no per-element shared memory. A block's threads combine with a
//! warp butterfly, one shared word per warp, and a second butterfly in warp 0. The block
//! result then goes either
//! - into `*out` with one atomic per block (`partials` null; the host zeroes `*out`), or
//! - into `partials[blockIdx]`, and `reduce_v07_multi_element_final` (one block) sums the
//!   partials in a fixed order and writes `*out`: bit-identical results run to run.
//!
//! An input that does not start on a 16-byte boundary gets a scalar head (up to 3 elements)
//! and every length a scalar tail (up to 3).
//!
//! Thread mapping: `T = gridDim · BLOCK_THREADS`; thread `t` takes vectors
//! `t, t+T, .., t+(UNROLL-1)T`, then jumps by `UNROLL·T`; leftover vectors one at a time.
//!
//! Memory traffic: the minimum read, plus 4 bytes per block (partials) in the second mode.
//!
//! Expected bound: DRAM read bandwidth.

/// The constants the CUDA C++ twin (`host/twins/reduce.cu`) is compiled with (`crate::twins`).
#[cfg(not(target_arch = "nvptx64"))]
pub const TWIN_DEFINES: &[(&str, i64)] = &[
    ("REDUCE_V07_UNROLL", UNROLL as i64),
    ("REDUCE_V07_BLOCK_THREADS", BLOCK_THREADS as i64),
    ("REDUCE_V07_SHARED_BYTES", SHARED_BYTES as i64),
    ("REDUCE_V07_FINAL_THREADS", FINAL_THREADS as i64),
    ("REDUCE_V07_FINAL_SHARED_BYTES", FINAL_SHARED_BYTES as i64),
];

/// Threads per block (a multiple of 32, at most 32 warps).
pub const BLOCK_THREADS: u32 = 256;
/// Resident blocks per multiprocessor the host launches (2048 threads/SM on sm_80/sm_90).
pub const BLOCKS_PER_SM: u32 = 8;
/// Independent 16-byte loads each thread issues per loop trip.
pub const UNROLL: u64 = 4;
/// Dynamic shared memory per block, in bytes: one word per warp.
pub const SHARED_BYTES: u32 = BLOCK_THREADS / 32 * 4;
/// Threads of the single block of the final (deterministic) pass.
pub const FINAL_THREADS: u32 = 256;
/// Dynamic shared memory of the final pass, in bytes.
pub const FINAL_SHARED_BYTES: u32 = FINAL_THREADS / 32 * 4;

const _: () = assert!(BLOCK_THREADS.is_multiple_of(32) && BLOCK_THREADS <= 1024);
const _: () = assert!(FINAL_THREADS.is_multiple_of(32) && FINAL_THREADS <= 1024);

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{atomic, shared, sync_threads, thread, vector, warp};

/// Sum of `v` over the block; valid in thread 0. Every thread of the block must call it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_sum(v: f32) -> f32 {
    let words = shared::dynamic_shared_mem::<f32>();
    let lane = warp::lane_id();
    let w = thread::thread_idx_x() / warp::WARP_SIZE;
    let nwarps = thread::block_dim_x() / warp::WARP_SIZE;
    let v = warp::sum_f32(v);
    // SAFETY: w < nwarps, and the host launches with one shared word per warp.
    unsafe {
        if lane == 0 {
            *words.add(w as usize) = v;
        }
        sync_threads();
        let mut total = 0.0;
        if w == 0 {
            let mine = if lane < nwarps {
                *words.add(lane as usize)
            } else {
                0.0
            };
            total = warp::sum_f32(mine);
        }
        total
    }
}

crate::kernel! {
    /// Block sums of `x[0..n]`: into `*out` by atomics (`partials` null), or one per block
    /// into `partials[blockIdx.x]`.
    pub unsafe fn reduce_v07_multi_element(
        x: *const f32,
        n: u64,
        out: *mut f32,
        partials: *mut f32,
    ) {
        let t = thread::index_1d();
        let step = thread::grid_stride_1d();
        let head = vector::misalignment_f32(x).min(n);
        let vectors = (n - head) / 4;
        let tail_start = head + 4 * vectors;
        // UNROLL x 4 separate accumulators: the loads of one trip do not wait on each other.
        let mut acc = [[0.0f32; 4]; UNROLL as usize];
        // SAFETY: (whole body) every index is below n (loop bounds, head/tail checks);
        // vector loads start at `head`, a 16-byte boundary; `out`/`partials` are valid for
        // the block index (the host sizes partials to the grid).
        unsafe {
            let xv = x.add(head as usize);
            let mut v = t;
            while v + (UNROLL - 1) * step < vectors {
                let mut r = [vector::F32x4([0.0; 4]); UNROLL as usize];
                for (k, rk) in r.iter_mut().enumerate() {
                    *rk = vector::load_f32x4_nc(xv.add(4 * (v + k as u64 * step) as usize));
                }
                for k in 0..UNROLL as usize {
                    for l in 0..4 {
                        acc[k][l] += r[k].0[l];
                    }
                }
                v += UNROLL * step;
            }
            while v < vectors {
                let r = vector::load_f32x4_nc(xv.add(4 * v as usize));
                for l in 0..4 {
                    acc[0][l] += r.0[l];
                }
                v += step;
            }
            if t < head {
                acc[1][0] += *x.add(t as usize);
            }
            if t < n - tail_start {
                acc[2][0] += *x.add((tail_start + t) as usize);
            }
            let mut s = 0.0;
            for a in acc {
                s += (a[0] + a[1]) + (a[2] + a[3]);
            }
            let total = block_sum(s);
            if thread::thread_idx_x() == 0 {
                if partials.is_null() {
                    atomic::add_f32(out, total);
                } else {
                    *partials.add(thread::block_idx_x() as usize) = total;
                }
            }
        }
    }
}

crate::kernel! {
    /// `*out = Σ partials[0..count]` in a fixed order (launched as one block).
    pub unsafe fn reduce_v07_multi_element_final(
        partials: *const f32,
        count: u32,
        out: *mut f32,
    ) {
        let mut s = 0.0;
        let mut i = thread::thread_idx_x();
        // SAFETY: i < count, the number of partials written by the first pass.
        unsafe {
            while i < count {
                s += *partials.add(i as usize);
                i += thread::block_dim_x();
            }
            let total = block_sum(s);
            if thread::thread_idx_x() == 0 {
                *out = total;
            }
        }
    }
}
