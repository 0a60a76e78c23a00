//! fused_elementwise/v02_fused — the whole chain in one kernel.
//!
//! Changed from v01: each thread loads x and residual once, keeps `x * scale + bias` and its
//! GELU in registers and stores y once: no intermediate tensor exists.
//!
//! Thread mapping: one thread per element, `BLOCK_THREADS` a block, column `i % cols`
//! (32-bit indices). Scale and bias (one row's worth) stay in L1/L2.
//!
//! Memory traffic: x and residual read, y written: 3n elements (+ 2 cols), the minimum.
//!
//! Expected bound: DRAM; scalar 4- or 2-byte accesses leave some bandwidth on the table.

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;

#[cfg(target_arch = "nvptx64")]
use crate::fused_elementwise::gelu;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::Storage;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn run<T: Storage>(
    x: *const T,
    scale: *const T,
    bias: *const T,
    res: *const T,
    y: *mut T,
    n: u32,
    cols: u32,
    mode: u32,
) {
    let i = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    if i < n {
        let c = (i % cols) as usize;
        let i = i as usize;
        // SAFETY: i < n and c < cols; the host passes arrays of those lengths.
        unsafe {
            let u = math::fma(
                T::load(x.add(i)),
                T::load(scale.add(c)),
                T::load(bias.add(c)),
            );
            T::store(
                y.add(i),
                gelu(u, mode, math::exp2, math::rcp) + T::load(res.add(i)),
            );
        }
    }
}

macro_rules! entry {
    ($t:ty, $name:ident) => {
        crate::kernel! {
            /// `y = gelu(x * scale[col] + bias[col]) + residual`.
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn $name(
                x: *const $t,
                scale: *const $t,
                bias: *const $t,
                res: *const $t,
                y: *mut $t,
                n: u32,
                cols: u32,
                mode: u32,
            ) {
                // SAFETY: forwarded from the host wrapper's checks.
                unsafe { run::<$t>(x, scale, bias, res, y, n, cols, mode) }
            }
        }
    };
}

entry!(f32, fused_elementwise_v02_fused_f32);
entry!(u16, fused_elementwise_v02_fused_bf16);
