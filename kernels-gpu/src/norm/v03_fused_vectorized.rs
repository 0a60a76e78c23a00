//! norm/v03_fused_vectorized — the row in registers, 16-byte accesses: one read, one write.
//!
//! Changed from v02: each thread loads its 16 elements of the row once (16-byte vectors when
//! aligned, the layout of `row_layout::row_slot`), and the mean, the variance around it and the
//! output are all computed from registers; weight and bias are read in the same layout.
//! Block size follows the row (`row_layout::row_threads`), so rows of up to 16384 elements fit;
//! the host refuses longer rows for this variant.
//!
//! Thread mapping: block r owns row r; slot k of thread t holds element `row_slot(k, t, ..)`.
//!
//! Memory traffic: the minimum: 1 read + 1 write (+ weight and bias, L2-resident).
//!
//! Expected bound: DRAM, near the copy roof.

/// The constants the CUDA C++ twin (`host/twins/norm.cu`) is compiled with (`crate::twins`).
#[cfg(not(target_arch = "nvptx64"))]
pub const TWIN_DEFINES: &[(&str, i64)] = &[
    ("NORM_V03_ROW_ITEMS", crate::row_layout::ROW_ITEMS as i64),
    (
        "NORM_V03_ROW_MAX_THREADS",
        crate::row_layout::ROW_MAX_THREADS as i64,
    ),
    ("NORM_V03_SHARED_BYTES", SHARED_BYTES as i64),
];

/// Dynamic shared memory: one f32 per warp for the block reduction.
pub const SHARED_BYTES: u32 = 32 * 4;

/// The longest row this variant holds on chip and its block size for a row of `cols`: the
/// row-in-registers layout it shares with softmax v05 (defined there).
pub use crate::row_layout::{ROW_MAX_COLS, row_threads};

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::Storage;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{block, row, shared, thread};
#[cfg(target_arch = "nvptx64")]
use crate::norm::rsqrt;
#[cfg(target_arch = "nvptx64")]
use crate::row_layout::row_slot;

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
    let smem = shared::dynamic_shared_mem::<f32>();
    let vec = crate::norm::vector_layout::<T, LAYER>(x, w, bias, y, cols);
    let n = cols as f32;
    let mut v = [0.0f32; 16];
    // SAFETY: the row is x[off .. off + cols] (block r < rows); row::load/store stay
    // inside it and inside w / bias (cols elements); smem has 32 f32.
    unsafe {
        // Padding slots load as 0: they add nothing to the sums below once masked.
        row::load(x.add(off), cols, vec, 0.0, &mut v);
        let mut mean = 0.0f32;
        if LAYER {
            let mut s = 0.0f32;
            for k in 0..16 {
                s += v[k];
            }
            mean = block::sum_f32(s, smem) / n;
        }
        // Padding slots (past the row) must not add (0 - mean)^2 to the variance.
        let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
        let p = if vec { T::PER16 as u32 } else { 1 };
        let mut q = 0.0f32;
        for k in 0..16 {
            let d = v[k] - mean;
            if row_slot(k as u32, t, b, p, cols).is_some() {
                q += d * d;
            }
        }
        let mut wv = [0.0f32; 16];
        row::load(w, cols, vec, 0.0, &mut wv);
        let rs = rsqrt(block::sum_f32(q, smem) / n + eps);
        let mut bv = [0.0f32; 16];
        if LAYER {
            row::load(bias, cols, vec, 0.0, &mut bv);
        }
        for k in 0..16 {
            v[k] = (v[k] - mean) * rs * wv[k] + bv[k];
        }
        row::store(y.add(off), cols, vec, &v);
    }
}

macro_rules! entry {
    ($t:ty, $layer:literal, $name:ident) => {
        crate::kernel! {
            /// One row per block held in registers, rows of up to 16384.
            pub unsafe fn $name(
                x: *const $t,
                w: *const $t,
                bias: *const $t,
                y: *mut $t,
                cols: u32,
                eps: f32,
            ) {
                // SAFETY: forwarded from the host wrapper's checks (grid = rows,
                // block = row_threads(cols)).
                unsafe { run::<$t, $layer>(x, w, bias, y, cols, eps) }
            }
        }
    };
}

entry!(f32, true, norm_v03_fused_vectorized_layernorm_f32);
entry!(u16, true, norm_v03_fused_vectorized_layernorm_bf16);
entry!(f32, false, norm_v03_fused_vectorized_rmsnorm_f32);
entry!(u16, false, norm_v03_fused_vectorized_rmsnorm_bf16);
