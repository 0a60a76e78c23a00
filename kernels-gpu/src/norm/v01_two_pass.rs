//! norm/v01_two_pass — a statistics kernel writing mean/rstd per row, then a normalize kernel.
//!
//! The baseline: kernel 1 (one block per row) computes the row mean and then the variance
//! around it (two reads of the row) and writes `mean[r]`, `rstd[r]` to DRAM; kernel 2
//! re-reads x and the statistics and writes y. RMSNorm skips the mean (writes 0).
//!
//! Thread mapping: both kernels run a block of `BLOCK_THREADS` per row; thread t visits
//! columns t, t + 256, ...
//!
//! Memory traffic: x read 3 times (LayerNorm; 2 for RMSNorm) and y written, plus 2 x rows f32
//! of statistics.
//!
//! Expected bound: DRAM, about twice the minimum bytes.

/// Threads per block of both kernels.
pub const BLOCK_THREADS: u32 = 256;
/// Dynamic shared memory: one f32 per warp for the block reduction.
pub const SHARED_BYTES: u32 = 32 * 4;
/// Passes over the tensor: (LayerNorm, RMSNorm) = (3 reads + 1 write, 2 reads + 1 write).
pub const PASSES: (u64, u64) = (4, 3);

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::Storage;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{block, shared, thread};
#[cfg(target_arch = "nvptx64")]
use crate::norm::rsqrt;

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stats<T: Storage, const LAYER: bool>(
    x: *const T,
    mean_out: *mut f32,
    rstd_out: *mut f32,
    cols: u32,
    eps: f32,
) {
    let r = thread::block_idx_x() as usize;
    let off = r * cols as usize;
    let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
    let smem = shared::dynamic_shared_mem::<f32>();
    // SAFETY: indices off + j, j < cols, inside row r < rows (grid = rows); smem 32 f32.
    unsafe {
        let mut mean = 0.0f32;
        if LAYER {
            let mut s = 0.0f32;
            let mut j = t;
            while j < cols {
                s += T::load(x.add(off + j as usize));
                j += b;
            }
            mean = block::sum_f32(s, smem) / cols as f32;
        }
        let mut q = 0.0f32;
        let mut j = t;
        while j < cols {
            let d = T::load(x.add(off + j as usize)) - mean;
            q += d * d;
            j += b;
        }
        let var = block::sum_f32(q, smem) / cols as f32;
        if t == 0 {
            *mean_out.add(r) = mean;
            *rstd_out.add(r) = rsqrt(var + eps);
        }
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn apply<T: Storage, const LAYER: bool>(
    x: *const T,
    mean: *const f32,
    rstd: *const f32,
    w: *const T,
    bias: *const T,
    y: *mut T,
    cols: u32,
) {
    let r = thread::block_idx_x() as usize;
    let off = r * cols as usize;
    let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
    // SAFETY: as in `stats`; w and bias hold cols elements (bias unused for RMSNorm).
    unsafe {
        let (m, rs) = (*mean.add(r), *rstd.add(r));
        let mut j = t;
        while j < cols {
            let c = j as usize;
            let mut v = (T::load(x.add(off + c)) - m) * rs * T::load(w.add(c));
            if LAYER {
                v += T::load(bias.add(c));
            }
            T::store(y.add(off + c), v);
            j += b;
        }
    }
}

macro_rules! entries {
    ($t:ty, $layer:literal, $stats:ident, $apply:ident) => {
        crate::kernel! {
            /// Row statistics: `mean[r]` (0 for RMSNorm) and `rstd[r]`.
            pub unsafe fn $stats(
                x: *const $t,
                mean: *mut f32,
                rstd: *mut f32,
                cols: u32,
                eps: f32,
            ) {
                // SAFETY: forwarded from the host wrapper's checks (grid = rows).
                unsafe { stats::<$t, $layer>(x, mean, rstd, cols, eps) }
            }
        }
        crate::kernel! {
            /// `y = (x - mean[r]) * rstd[r] * w (+ bias)`.
            pub unsafe fn $apply(
                x: *const $t,
                mean: *const f32,
                rstd: *const f32,
                w: *const $t,
                bias: *const $t,
                y: *mut $t,
                cols: u32,
            ) {
                // SAFETY: as above.
                unsafe { apply::<$t, $layer>(x, mean, rstd, w, bias, y, cols) }
            }
        }
    };
}

entries!(
    f32,
    true,
    norm_v01_two_pass_stats_layernorm_f32,
    norm_v01_two_pass_apply_layernorm_f32
);
entries!(
    u16,
    true,
    norm_v01_two_pass_stats_layernorm_bf16,
    norm_v01_two_pass_apply_layernorm_bf16
);
entries!(
    f32,
    false,
    norm_v01_two_pass_stats_rmsnorm_f32,
    norm_v01_two_pass_apply_rmsnorm_f32
);
entries!(
    u16,
    false,
    norm_v01_two_pass_stats_rmsnorm_bf16,
    norm_v01_two_pass_apply_rmsnorm_bf16
);
