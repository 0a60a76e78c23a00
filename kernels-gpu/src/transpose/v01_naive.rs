//! transpose/v01_naive — one element per thread, straight from the definition.
//!
//! The baseline: thread `(x, y)` reads `in[y][x]` and writes `out[x][y]`.
//!
//! Thread mapping: blocks of `BLOCK_X × BLOCK_Y` threads; x runs along the input's columns,
//! so a warp reads 32 consecutive floats of one input row (one 128-byte line) and writes 32
//! floats that are M floats apart in the output: 32 separate 32-byte sectors for 128 useful
//! bytes. Block rows past `gridDim.y` are covered by a loop in y.
//!
//! Memory traffic: reads at the minimum; each warp-wide store writes 32 sectors for 128 useful
//! bytes, but L2 merges neighbouring warps' partial sectors before DRAM: DRAM moves about the
//! minimum (ncu on the H200: 1.05× at 8192²). The waste is in SM → L2 requests (32 sectors
//! per store request instead of 4).
//!
//! Expected bound: the scattered stores' request traffic through L1/L2, well below the copy
//! roof on the minimum DRAM bytes.

/// Threads per block in x (along input columns): one warp.
pub const BLOCK_X: u32 = 32;
/// Threads per block in y (along input rows).
pub const BLOCK_Y: u32 = 8;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::thread;

crate::kernel! {
    /// `out[j][i] = inp[i][j]`; `inp` is `m × n`, `out` is `n × m`, both row-major.
    pub unsafe fn transpose_v01_naive(
        inp: *const f32,
        out: *mut f32,
        m: u32,
        n: u32,
    ) {
        let j = thread::block_idx_x() * BLOCK_X + thread::thread_idx_x();
        if j >= n {
            return;
        }
        let mut i = thread::block_idx_y() * BLOCK_Y + thread::thread_idx_y();
        let step = thread::grid_dim_y() * BLOCK_Y;
        while i < m {
            // SAFETY: i < m and j < n, so both offsets lie inside the m·n-element buffers.
            unsafe {
                *out.add(j as usize * m as usize + i as usize) =
                    *inp.add(i as usize * n as usize + j as usize);
            }
            i += step;
        }
    }
}
