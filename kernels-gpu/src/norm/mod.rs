//! Family `norm`: LayerNorm `y = (x - mean) * rstd * w + b`, `rstd = 1 / sqrt(var + eps)`,
//! and RMSNorm `y = x * rstd * w`, `rstd = 1 / sqrt(mean(x^2) + eps)`, over the last
//! dimension of a rows x cols tensor; f32 or bf16 storage (raw u16), f32 arithmetic.
//!
//! Variance is always two-pass (mean first, then the mean of squared deviations from it),
//! never `E[x^2] - E[x]^2`, which cancels catastrophically for inputs like 1000 + N(0, 1).
//! Weights and bias have the storage type. Every kernel exists as `_layernorm` and `_rmsnorm`.

pub mod v01_two_pass;
pub mod v02_fused_block;
pub mod v03_fused_vectorized;
pub mod v04_packed_row;

/// `1 / sqrt(v)` (`rsqrt.approx.f32`, relative error ~2^-23 over the normal range).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn rsqrt(v: f32) -> f32 {
    crate::gpu::math::rsqrt(v)
}
