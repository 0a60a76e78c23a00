//! norm/v07_cluster_registers — long rows (sm_90a): a cluster of blocks holds one row in
//! registers.
//!
//! Changed from v06: v06 copies its slice into shared memory with `cp.async` and reads it
//! back three times (sum, squared deviations, normalize); on the H200 its bf16 rows reach
//! only 22-64% of the roof. As softmax v08 does for v07, each block of the cluster here is a
//! v03 block over its slice: thread t loads its `ROW_ITEMS` (16) slots of the slice
//! `slice(rank, cols, .., c)` into registers once (`crate::gpu::row`, v03's layout with the
//! slice as the row), takes the block's (mean, M2) exactly two-pass from the registers
//! (LayerNorm; RMSNorm: mean 0, M2 the sum of squares), and the blocks merge their pairs
//! through distributed shared memory by Chan's formula, exactly as v06
//! (`norm::device::chan_merge`, shared with it). Each thread then normalizes its slots, with
//! weight and bias read in the same layout (L2-resident), and stores them.
//! c = `reg_cluster_size(cols, ..)`: the fewest of 1, 2, 4, 8 blocks whose slices hold at
//! most `REG_TARGET_SLICE` (8192) elements (512 threads), else 8; set at launch and read from
//! `%cluster_nctarank`. Rows of up to `MAX_COLS` = 8 × 16384 = 131072 (the host refuses longer
//! rows: v06 takes them up to 393216).
//!
//! Thread mapping: the cluster `%clusterid.x` owns that row; block `rank` its slice; thread t
//! of the block's `reg_block_threads(cols, .., c)` holds slots `row_slot(k, t, ..)` of the
//! slice (consecutive threads take consecutive 16-byte vectors).
//!
//! Memory traffic: the minimum, 1 read + 1 write (+ weight and bias, L2-resident), straight
//! between DRAM and registers.
//!
//! Expected bound: DRAM, as v03/v04 (one block per row is v07 with c = 1). Measured
//! (2026-12-06, 1024×32768): slower than v06, on the H100 (LayerNorm f32 127.7 µs against
//! 112.4, bf16 97.0 against 64.5; the H200 in the same order): 56-64 registers a thread
//! hold it to half the SM's threads. `auto` keeps v06 (`docs/07-normalization.md`).

pub use crate::cluster_row::{
    HEADER_BYTES, MAX_CLUSTER, PARTIAL_OFFSET, REG_TARGET_SLICE, reg_block_threads,
    reg_cluster_size, slice,
};
/// Longest row: 8 blocks of 16384 elements (1024 threads of 16 registers each).
pub const MAX_COLS: u32 = crate::cluster_row::REG_MAX_COLS;

/// Dynamic shared memory a block: the cluster-row header (32 f32 for the block reductions,
/// then the block's pair for its peers).
pub const SHARED_BYTES: u32 = HEADER_BYTES;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod dev {
    use super::{PARTIAL_OFFSET, slice};
    use crate::gpu::bf16::Storage;
    use crate::gpu::{block, hopper, row, shared, thread};
    use crate::norm::device::chan_merge;
    use crate::norm::rsqrt;
    use crate::row_layout::row_slot;

    #[inline(always)]
    pub unsafe fn run<T: Storage, const LAYER: bool>(
        x: *const T,
        w: *const T,
        bias: *const T,
        y: *mut T,
        cols: u32,
        eps: f32,
    ) {
        let eb = 16 / T::PER16 as u32;
        let (rank, cluster) = (hopper::cluster_ctarank(), hopper::cluster_nctarank());
        let (start, len) = slice(rank, cols, eb, cluster);
        let off = hopper::cluster_id_x() as usize * cols as usize + start as usize;
        // Uniform over the grid: slices start on a 16-byte vector, and with cols a whole
        // number of vectors every slice is one too.
        let vec = crate::norm::vector_layout::<T, LAYER>(x, w, bias, y, cols);
        let base = shared::dynamic_shared_mem::<f32>();
        let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
        let p = if vec { T::PER16 as u32 } else { 1 };
        let mut v = [0.0f32; 16];
        // SAFETY: the host launches rows clusters of `cluster` blocks of
        // `reg_block_threads(cols, .., cluster)` threads (16 slots each cover the slice)
        // with SHARED_BYTES of shared memory (32 f32 of scratch, then the pair at
        // PARTIAL_OFFSET); the slice x[off .. off + len] lies inside its row and
        // w[start .. start + len] inside the weight (and bias), and row::load/store stay
        // inside them.
        unsafe {
            let partial = (base as *mut u8).add(PARTIAL_OFFSET as usize) as *mut f32;
            // Padding slots load as 0: they add nothing to the sums; the deviations mask them.
            row::load(x.add(off), len, vec, 0.0, &mut v);
            let nb = len as f32;
            let mut mean_b = 0.0f32;
            if LAYER {
                let mut s = 0.0f32;
                for k in 0..16 {
                    s += v[k];
                }
                let sb = block::sum_f32(s, base);
                // An empty slice (short rows: the last ranks) gives (0, 0), weighing n_l = 0.
                mean_b = if len > 0 { sb / nb } else { 0.0 };
            }
            let mut q = 0.0f32;
            for k in 0..16 {
                let d = v[k] - mean_b;
                if row_slot(k as u32, t, b, p, len).is_some() {
                    q += d * d;
                }
            }
            let m2_b = block::sum_f32(q, base);
            let (mean, m2) = chan_merge::<LAYER>(mean_b, m2_b, partial, cols, eb);
            let rs = rsqrt(m2 / cols as f32 + eps);
            let mut wv = [0.0f32; 16];
            row::load(w.add(start as usize), len, vec, 0.0, &mut wv);
            let mut bv = [0.0f32; 16];
            if LAYER {
                row::load(bias.add(start as usize), len, vec, 0.0, &mut bv);
            }
            for k in 0..16 {
                v[k] = (v[k] - mean) * rs * wv[k] + bv[k];
            }
            row::store(y.add(off), len, vec, &v);
            // No block leaves while a peer may still read its pair.
            hopper::cluster_wait();
        }
    }
}

macro_rules! entry {
    ($t:ty, $layer:literal, $name:ident) => {
        crate::kernel! {
            /// A cluster of blocks per row (the launch's cluster size), the slices in their
            /// registers, rows of up to 131072. sm_90a only.
            #[cfg(target_feature = "sm_90a")]
            pub unsafe fn $name(
                x: *const $t,
                w: *const $t,
                bias: *const $t,
                y: *mut $t,
                cols: u32,
                eps: f32,
            ) {
                // Blocks of up to 1024 threads, 1 an SM at that size: up to 64 registers a
                // thread for the 16 slots and their weight and bias (as softmax v08, whose
                // 32-register bound spilled).
                crate::gpu::launch_bounds::<{ crate::row_layout::ROW_MAX_THREADS }, 1>();
                // SAFETY: forwarded from the host wrapper's checks (cols <= MAX_COLS; grid =
                // rows clusters of c = reg_cluster_size(cols, ..) blocks of
                // reg_block_threads(cols, .., c) threads, SHARED_BYTES of shared memory).
                unsafe { dev::run::<$t, $layer>(x, w, bias, y, cols, eps) }
            }
        }
    };
}

entry!(f32, true, norm_v07_cluster_registers_layernorm_f32);
entry!(u16, true, norm_v07_cluster_registers_layernorm_bf16);
entry!(f32, false, norm_v07_cluster_registers_rmsnorm_f32);
entry!(u16, false, norm_v07_cluster_registers_rmsnorm_bf16);
