//! fused_elementwise/v01_unfused — one kernel per operation, every intermediate in DRAM.
//!
//! The baseline an eager framework runs: `t1 = x * scale`, `t2 = t1 + bias`, `t3 = gelu(t2)`,
//! `y = t3 + residual`, four launches; t1..t3 are full-size tensors of the storage type (so
//! bf16 intermediates are rounded to bf16, as PyTorch eager does).
//!
//! Thread mapping: one thread per element, `BLOCK_THREADS` a block; the column of element i
//! is `i % cols` (32-bit indices: the host refuses tensors of 2^32 elements or more).
//!
//! Memory traffic (elements of n, the per-column vectors ignored): mul 2, add-bias 2,
//! gelu 2, add-residual 3: 9n against the fused minimum of 3n.
//!
//! Expected bound: DRAM; about 3x slower than the fused kernel.

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;
/// Elements of n each of the four kernels reads or writes (see the header).
pub const PASSES: u64 = 9;

#[cfg(target_arch = "nvptx64")]
use crate::fused_elementwise::gelu;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::Storage;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread};

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn index() -> u32 {
    thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x()
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn mul<T: Storage>(x: *const T, scale: *const T, out: *mut T, n: u32, cols: u32) {
    let i = index();
    if i < n {
        let i = i as usize;
        // SAFETY: i < n, the column < cols; the host passes arrays of those lengths.
        unsafe {
            T::store(
                out.add(i),
                T::load(x.add(i)) * T::load(scale.add(i % cols as usize)),
            )
        }
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn add_bias<T: Storage>(t: *const T, bias: *const T, out: *mut T, n: u32, cols: u32) {
    let i = index();
    if i < n {
        let i = i as usize;
        // SAFETY: as in `mul`.
        unsafe {
            T::store(
                out.add(i),
                T::load(t.add(i)) + T::load(bias.add(i % cols as usize)),
            )
        }
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gelu_op<T: Storage>(t: *const T, out: *mut T, n: u32, mode: u32) {
    let i = index();
    if i < n {
        let i = i as usize;
        // SAFETY: i < n.
        unsafe {
            T::store(
                out.add(i),
                gelu(T::load(t.add(i)), mode, math::exp2, math::rcp),
            )
        }
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn add<T: Storage>(t: *const T, res: *const T, out: *mut T, n: u32) {
    let i = index();
    if i < n {
        let i = i as usize;
        // SAFETY: i < n.
        unsafe { T::store(out.add(i), T::load(t.add(i)) + T::load(res.add(i))) }
    }
}

macro_rules! entries {
    ($t:ty, $mul:ident, $bias:ident, $gelu:ident, $add:ident) => {
        crate::kernel! {
            /// `out = x * scale[col]`.
            pub unsafe fn $mul(
                x: *const $t,
                scale: *const $t,
                out: *mut $t,
                n: u32,
                cols: u32,
            ) {
                // SAFETY: forwarded from the host wrapper's checks.
                unsafe { mul::<$t>(x, scale, out, n, cols) }
            }
        }
        crate::kernel! {
            /// `out = t + bias[col]`.
            pub unsafe fn $bias(
                t: *const $t,
                bias: *const $t,
                out: *mut $t,
                n: u32,
                cols: u32,
            ) {
                // SAFETY: as above.
                unsafe { add_bias::<$t>(t, bias, out, n, cols) }
            }
        }
        crate::kernel! {
            /// `out = gelu(t)`.
            pub unsafe fn $gelu(t: *const $t, out: *mut $t, n: u32, mode: u32) {
                // SAFETY: as above.
                unsafe { gelu_op::<$t>(t, out, n, mode) }
            }
        }
        crate::kernel! {
            /// `out = t + residual`.
            pub unsafe fn $add(
                t: *const $t,
                res: *const $t,
                out: *mut $t,
                n: u32,
            ) {
                // SAFETY: as above.
                unsafe { add::<$t>(t, res, out, n) }
            }
        }
    };
}

entries!(
    f32,
    fused_elementwise_v01_unfused_mul_f32,
    fused_elementwise_v01_unfused_add_bias_f32,
    fused_elementwise_v01_unfused_gelu_f32,
    fused_elementwise_v01_unfused_add_f32
);
entries!(
    u16,
    fused_elementwise_v01_unfused_mul_bf16,
    fused_elementwise_v01_unfused_add_bias_bf16,
    fused_elementwise_v01_unfused_gelu_bf16,
    fused_elementwise_v01_unfused_add_bf16
);
