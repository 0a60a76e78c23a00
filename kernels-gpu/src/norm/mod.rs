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
//! of blocks per row, in their shared memory (long rows, up to 393216; sm_90a only); v07 a
//! cluster of blocks per row, in their registers (rows of up to 131072; sm_90a only); v08 one
//! block per row that holds nothing, statistics in one streaming pass and the normalization
//! from L2 (any length; made for rows of 16384-32768, where v04's one 1024-thread block an SM
//! falls off). `norm::auto` on the host picks by row length and dtype (`auto_choice`): v08 for
//! bf16 rows of 16385-32768 and wherever v06 cannot run; not v07, which measured slower than
//! v06 (H200 and H100).

pub mod v01_two_pass;
pub mod v02_fused_block;
pub mod v03_fused_vectorized;
pub mod v04_packed_row;
pub mod v05_rows_per_warp;
pub mod v06_cluster_row;
pub mod v07_cluster_registers;
pub mod v08_l2_reread;

/// `1 / sqrt(v)` (`rsqrt.approx.f32`, relative error ~2^-23 over the normal range).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn rsqrt(v: f32) -> f32 {
    crate::gpu::math::rsqrt(v)
}

/// Whether a launch takes the 16-byte vector layout: x, y, weight (and LayerNorm's bias)
/// 16-byte aligned and `cols` a whole number of vectors, else the element layout. Uniform over
/// the grid (pointers and cols), so the branch on it is too.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn vector_layout<T: crate::gpu::bf16::Storage, const LAYER: bool>(
    x: *const T,
    w: *const T,
    bias: *const T,
    y: *mut T,
    cols: u32,
) -> bool {
    use crate::gpu::bf16::aligned16;
    aligned16(x)
        && aligned16(y)
        && aligned16(w)
        && (!LAYER || aligned16(bias))
        && cols.is_multiple_of(T::PER16 as u32)
}

/// What the cluster steps (v06, v07) share on the device.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub(crate) mod device {
    use crate::cluster_row::slice;
    use crate::gpu::async_copy::shared_addr;
    use crate::gpu::{hopper, thread, warp};

    /// Merge the cluster's blocks' (mean, M2) into the row's (mean, M2) by Chan's parallel
    /// formula: mean = Σ n_l·mean_l / n, M2 = Σ (M2_l + n_l·(mean_l − mean)²) (RMSNorm: mean
    /// 0, M2 = Σ M2_l). Thread 0 puts the block's pair at `partial`; after a cluster barrier
    /// (release / acquire: every pair written and visible, every peer running) lanes 0..c-1 of
    /// every warp read block l's pair through distributed shared memory, each with its slice
    /// length n_l (a function of l, not sent), and the warp merges them. Each block's M2 is
    /// around its own mean and the correction terms are small differences of close means, so
    /// nothing large cancels (never E[x²] − E[x]²). Arrives on the second cluster barrier
    /// after the reads: the caller waits on it (`hopper::cluster_wait`) before it exits.
    ///
    /// # Safety
    /// Every thread of every block of the cluster calls it once; `partial` is 2 f32 of this
    /// block's shared memory at the same offset in every block; `eb` the element bytes.
    #[inline(always)]
    pub unsafe fn chan_merge<const LAYER: bool>(
        mean_b: f32,
        m2_b: f32,
        partial: *mut f32,
        cols: u32,
        eb: u32,
    ) -> (f32, f32) {
        let cluster = hopper::cluster_nctarank();
        // SAFETY: the caller's contract; peers' pairs are read after the barrier that makes
        // them visible, and no block exits before the last barrier's wait.
        unsafe {
            if thread::thread_idx_x() == 0 {
                partial.write_volatile(mean_b);
                partial.add(1).write_volatile(m2_b);
            }
            hopper::cluster_sync();
            let lane = warp::lane_id();
            let (mut ml, mut m2l, mut nl) = (0.0f32, 0.0f32, 0.0f32);
            if lane < cluster {
                let peer = hopper::map_shared_rank(shared_addr(partial), lane);
                [ml, m2l] = hopper::load_shared_cluster_f32x2(peer);
                nl = slice(lane, cols, eb, cluster).1 as f32;
            }
            hopper::cluster_arrive();
            // The lanes past the cluster hold n_l = 0.
            if LAYER {
                let mean = warp::sum_f32(nl * ml) / cols as f32;
                let d = ml - mean;
                (mean, warp::sum_f32(m2l + nl * d * d))
            } else {
                (0.0, warp::sum_f32(m2l))
            }
        }
    }
}
