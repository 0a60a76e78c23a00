//! Family `norm`: LayerNorm `y = (x - mean) * rstd * w + b`, `rstd = 1 / sqrt(var + eps)`,
//! and RMSNorm `y = x * rstd * w`, `rstd = 1 / sqrt(mean(x^2) + eps)`, over the last
//! dimension of a rows x cols tensor; f32 or bf16 storage (raw u16), f32 arithmetic.
//!
//! Variance is always two-pass (mean first, then the mean of squared deviations from it),
//! never `E[x^2] - E[x]^2`, which cancels catastrophically for inputs like 1000 + N(0, 1).
//! v06, whose row is split over 8 blocks, takes it two-pass within each block and merges the
//! blocks' (count, mean, M2) by Chan's formula.
//! Weights and bias have the storage type. Every kernel exists as `_layernorm` and `_rmsnorm`.
//!
//! The ladder: v01 statistics then normalize (two kernels); v02 one block per row, three
//! reads; v03 the row in one block's registers, 16-byte accesses; v04 the same, kept packed
//! (rows of up to 16384); v05 a group of lanes per row (short rows, up to 512); v06 a cluster
//! of 8 blocks per row, in their shared memory (long rows, up to 393216; sm_90a only).
//! `norm::auto` on the host picks v05, v04, v06 (v02 where v06 is unavailable) by row length.

pub mod v01_two_pass;
pub mod v02_fused_block;
pub mod v03_fused_vectorized;
pub mod v04_packed_row;
pub mod v05_rows_per_warp;
pub mod v06_cluster_row;

/// `1 / sqrt(v)` (`rsqrt.approx.f32`, relative error ~2^-23 over the normal range).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn rsqrt(v: f32) -> f32 {
    crate::gpu::math::rsqrt(v)
}
