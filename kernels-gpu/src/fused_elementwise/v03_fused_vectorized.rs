//! fused_elementwise/v03_fused_vectorized — the fused chain with 16-byte accesses.
//!
//! Changed from v02: each thread moves one 16-byte vector of x, residual and y (4 f32 or
//! 8 bf16) with `ld.global.nc.v4` / `st.global.v4`; scale and bias are vector-loaded too when
//! `cols` is a multiple of the vector and they are aligned, else element by element.
//! One extra thread takes the `n % per_vector` tail; if x, residual and y are not all
//! 16-byte aligned each thread does its elements one by one (same results).
//!
//! Thread mapping: thread t < n / P takes elements `tP .. tP + P` (P = 4 f32 or 8 bf16);
//! thread n / P takes the tail. The column walks from `tP % cols`, wrapping at cols.
//!
//! Memory traffic: the minimum, 3n elements (+ 2 cols), in 16-byte pieces.
//!
//! GELU: f32 runs `gelu` (erf by A&S 7.1.26); bf16 runs `gelu_bf16`, whose erf form is
//! `erf_fast` folded into the GELU (`u / (1 + 2^(u P(min(u^2, 32))))`, abs erf error
//! <= 3.73e-5): 8 elements per 16 bytes made the accurate erf issue-bound (docs/05), and bf16
//! output rounds at up to 2^-8 relative anyway; measured level with the tanh form (docs/05).
//!
//! Expected bound: DRAM, near the copy roof.

/// The constants the CUDA C++ twin (`host/twins/fused_elementwise.cu`) is compiled with (`crate::twins`).
#[cfg(not(target_arch = "nvptx64"))]
pub const TWIN_DEFINES: &[(&str, i64)] = {
    use crate::fused_elementwise::{
        ERF_A, ERF_P, FRAC_1_SQRT_2, GELU_CUBIC, GELU_ERF_FAST_Q, GELU_ERF_FAST_U2_MAX, GELU_TANH,
        LOG2_E, SQRT_2_OVER_PI,
    };
    // f32 constants travel as their bits (`F32_BITS` in the twin turns them back).
    &[
        ("FUSED_ELEMENTWISE_V03_GELU_TANH", GELU_TANH as i64),
        ("FUSED_ELEMENTWISE_V03_LOG2_E_BITS", LOG2_E.to_bits() as i64),
        (
            "FUSED_ELEMENTWISE_V03_SQRT_2_OVER_PI_BITS",
            SQRT_2_OVER_PI.to_bits() as i64,
        ),
        (
            "FUSED_ELEMENTWISE_V03_GELU_CUBIC_BITS",
            GELU_CUBIC.to_bits() as i64,
        ),
        (
            "FUSED_ELEMENTWISE_V03_FRAC_1_SQRT_2_BITS",
            FRAC_1_SQRT_2.to_bits() as i64,
        ),
        ("FUSED_ELEMENTWISE_V03_ERF_P_BITS", ERF_P.to_bits() as i64),
        (
            "FUSED_ELEMENTWISE_V03_ERF_A0_BITS",
            ERF_A[0].to_bits() as i64,
        ),
        (
            "FUSED_ELEMENTWISE_V03_ERF_A1_BITS",
            ERF_A[1].to_bits() as i64,
        ),
        (
            "FUSED_ELEMENTWISE_V03_ERF_A2_BITS",
            ERF_A[2].to_bits() as i64,
        ),
        (
            "FUSED_ELEMENTWISE_V03_ERF_A3_BITS",
            ERF_A[3].to_bits() as i64,
        ),
        (
            "FUSED_ELEMENTWISE_V03_ERF_A4_BITS",
            ERF_A[4].to_bits() as i64,
        ),
        (
            "FUSED_ELEMENTWISE_V03_GELU_ERF_FAST_Q0_BITS",
            GELU_ERF_FAST_Q[0].to_bits() as i64,
        ),
        (
            "FUSED_ELEMENTWISE_V03_GELU_ERF_FAST_Q1_BITS",
            GELU_ERF_FAST_Q[1].to_bits() as i64,
        ),
        (
            "FUSED_ELEMENTWISE_V03_GELU_ERF_FAST_Q2_BITS",
            GELU_ERF_FAST_Q[2].to_bits() as i64,
        ),
        (
            "FUSED_ELEMENTWISE_V03_GELU_ERF_FAST_U2_MAX_BITS",
            GELU_ERF_FAST_U2_MAX.to_bits() as i64,
        ),
    ]
};

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;

/// Threads to launch for `n` elements with `per16` elements a vector: one per vector plus one
/// for the tail.
pub const fn threads(n: u64, per16: u64) -> u64 {
    n / per16 + 1
}

#[cfg(target_arch = "nvptx64")]
use crate::fused_elementwise::{gelu, gelu_bf16};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::{Storage, aligned16, each8};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread};

/// The GELU a storage type runs: f32 the accurate erf (`gelu`), bf16 the cheap one
/// (`gelu_bf16`), both with the tanh form unchanged.
#[cfg(target_arch = "nvptx64")]
trait Gelu {
    fn gelu(u: f32, mode: u32) -> f32;
}

#[cfg(target_arch = "nvptx64")]
impl Gelu for f32 {
    #[inline(always)]
    fn gelu(u: f32, mode: u32) -> f32 {
        gelu(u, mode, math::exp2, math::rcp)
    }
}

#[cfg(target_arch = "nvptx64")]
impl Gelu for u16 {
    #[inline(always)]
    fn gelu(u: f32, mode: u32) -> f32 {
        gelu_bf16(u, mode, math::exp2, math::rcp, math::fma)
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn run<T: Storage + Gelu>(
    x: *const T,
    scale: *const T,
    bias: *const T,
    res: *const T,
    y: *mut T,
    n: u32,
    cols: u32,
    mode: u32,
) {
    let p = T::PER16 as u32;
    let t = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
    let nvec = n / p;
    if t > nvec {
        return;
    }
    let start = t * p;
    let count = if t < nvec { p } else { n - start };
    let mut c = start % cols;
    // SAFETY: (the whole body) elements start..start+count are < n, columns < cols; vector
    // accesses only when every pointer involved is 16-byte aligned (and for scale/bias,
    // when the vector stays inside one row: cols % P == 0 makes c a multiple of P).
    unsafe {
        let vec = t < nvec && aligned16(x) && aligned16(res) && aligned16(y);
        if vec {
            let (mut xv, mut rv, mut sv, mut bv) = ([0.0f32; 8], [0.0f32; 8], [0.0; 8], [0.0; 8]);
            T::load16(x.add(start as usize), &mut xv);
            T::load16(res.add(start as usize), &mut rv);
            if cols.is_multiple_of(p) && aligned16(scale) && aligned16(bias) {
                T::load16(scale.add(c as usize), &mut sv);
                T::load16(bias.add(c as usize), &mut bv);
            } else {
                for k in 0..T::PER16 {
                    sv[k] = T::load(scale.add(c as usize));
                    bv[k] = T::load(bias.add(c as usize));
                    c += 1;
                    if c == cols {
                        c = 0;
                    }
                }
            }
            let mut out = [0.0f32; 8];
            each8(T::PER16, |k| {
                out[k] = T::gelu(math::fma(xv[k], sv[k], bv[k]), mode) + rv[k];
            });
            T::store16(y.add(start as usize), &out);
        } else {
            for k in 0..count {
                let i = (start + k) as usize;
                let u = math::fma(
                    T::load(x.add(i)),
                    T::load(scale.add(c as usize)),
                    T::load(bias.add(c as usize)),
                );
                T::store(y.add(i), T::gelu(u, mode) + T::load(res.add(i)));
                c += 1;
                if c == cols {
                    c = 0;
                }
            }
        }
    }
}

macro_rules! entry {
    ($t:ty, $name:ident) => {
        crate::kernel! {
            /// `y = gelu(x * scale[col] + bias[col]) + residual`, 16-byte accesses.
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

entry!(f32, fused_elementwise_v03_fused_vectorized_f32);
entry!(u16, fused_elementwise_v03_fused_vectorized_bf16);
