//! norm/v02_fused_block — statistics and normalization in one kernel, one block per row.
//!
//! Changed from v01: the mean and rstd are block reductions kept in registers; one launch,
//! no statistics in DRAM. The row is read for the mean, again for the variance (two-pass,
//! exact around the mean) and again to normalize: later reads mostly hit L1/L2.
//!
//! Thread mapping: block r (`BLOCK_THREADS`) owns row r; thread t visits t, t + 256, ...
//!
//! Memory traffic: at best 1 read + 1 write; at worst 3 reads + 1 write.
//!
//! Expected bound: DRAM/L2 latency: one scalar load in flight per thread.

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;
/// Dynamic shared memory: one f32 per warp for the block reduction.
pub const SHARED_BYTES: u32 = 32 * 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::Storage;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{block, shared, thread};
#[cfg(target_arch = "nvptx64")]
use crate::norm::rsqrt;

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn run<T: Storage, const LAYER: bool>(
    x: *const T,
    w: *const T,
    bias: *const T,
    y: *mut T,
    cols: u32,
    eps: f32,
) {
    let off = thread::block_idx_x() as usize * cols as usize;
    let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
    let smem = shared::dynamic_shared_mem::<f32>();
    // SAFETY: indices off + j, j < cols, inside row r < rows; w, bias hold cols elements.
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
        let rs = rsqrt(block::sum_f32(q, smem) / cols as f32 + eps);
        j = t;
        while j < cols {
            let c = j as usize;
            let mut v = (T::load(x.add(off + c)) - mean) * rs * T::load(w.add(c));
            if LAYER {
                v += T::load(bias.add(c));
            }
            T::store(y.add(off + c), v);
            j += b;
        }
    }
}

macro_rules! entry {
    ($t:ty, $layer:literal, $name:ident) => {
        crate::kernel! {
            /// One row per block: statistics, then `y = (x - mean) * rstd * w (+ bias)`.
            pub unsafe fn $name(
                x: *const $t,
                w: *const $t,
                bias: *const $t,
                y: *mut $t,
                cols: u32,
                eps: f32,
            ) {
                // SAFETY: forwarded from the host wrapper's checks (grid = rows).
                unsafe { run::<$t, $layer>(x, w, bias, y, cols, eps) }
            }
        }
    };
}

entry!(f32, true, norm_v02_fused_block_layernorm_f32);
entry!(u16, true, norm_v02_fused_block_layernorm_bf16);
entry!(f32, false, norm_v02_fused_block_rmsnorm_f32);
entry!(u16, false, norm_v02_fused_block_rmsnorm_bf16);
