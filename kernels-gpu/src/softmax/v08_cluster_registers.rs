//! softmax/v08_cluster_registers — long rows (sm_90a): a cluster of blocks holds one row in
//! registers.
//!
//! Changed from v07: v07 copies its slice into shared memory with `cp.async` and reads it
//! back twice (fold, normalize). ncu on v07 (H100, 2026-12-05) shows the L2 the busiest unit
//! (~88% of its peak) while DRAM runs at 66-80%: 2.2-2.5 bytes through L2 per DRAM byte
//! against the copy kernel's 1.5, and 20 sectors a load request instead of 16. v05, which
//! keeps its row in registers with plain 16-byte loads, reaches 90-94% of the roof at rows of
//! 8192 on the H200. So here each block of the cluster is a v05 block over its slice: thread
//! t loads its `ROW_ITEMS` (16) slots of the slice `slice(rank, cols, .., c)` into registers
//! once (`crate::gpu::row`, v05's layout with the slice as the row), takes the block's max
//! mb and sum of e^(x - mb) (keeping the exps in the registers), and the blocks merge their
//! pairs through distributed shared memory exactly as v07 does
//! (`softmax::device::cluster_merge`). Each thread then scales its exps by
//! e^(mb - mc) / sum and stores them: one exp per element, no shared-memory copy of the row.
//! c = `reg_cluster_size(cols, ..)`: the fewest of 1, 2, 4, 8 blocks whose slices hold at
//! most `REG_TARGET_SLICE` (8192) elements (512 threads), else 8; set at launch and read from
//! `%cluster_nctarank`. Rows of up to `MAX_COLS` = 8 × 16384 = 131072 (the host refuses longer
//! rows: v07 takes them up to 262144).
//!
//! Thread mapping: the cluster `%clusterid.x` owns that row; block `rank` its slice; thread t
//! of the block's `reg_block_threads(cols, .., c)` holds slots `row_slot(k, t, ..)` of the
//! slice (consecutive threads take consecutive 16-byte vectors).
//!
//! Memory traffic: the minimum, 1 read + 1 write, straight between DRAM and registers.
//!
//! Expected bound: DRAM, as v05 (one block per row is v08 with c = 1). Measured
//! (2026-12-06, 2048×32768): slower than v07, on the H100 (f32 230.3 µs against 199.0, bf16
//! 160.5 against 107.6; the H200 in the same order): 47-49 registers a thread leave an SM
//! half its threads, and each block's one-shot loads are all its bytes in flight. `auto`
//! keeps v07 (`docs/06-softmax.md`).

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
    use crate::gpu::bf16::{Storage, aligned16};
    use crate::gpu::{block, hopper, math, row, shared};
    use crate::softmax::device::{cluster_merge, exp_sub};

    #[inline(always)]
    pub unsafe fn run<T: Storage>(x: *const T, y: *mut T, cols: u32) {
        let (rank, cluster) = (hopper::cluster_ctarank(), hopper::cluster_nctarank());
        let (start, len) = slice(rank, cols, 16 / T::PER16 as u32, cluster);
        let off = hopper::cluster_id_x() as usize * cols as usize + start as usize;
        // Uniform over the grid: slices start on a 16-byte vector, and with cols a whole
        // number of vectors every slice is one too.
        let vec = aligned16(x) && aligned16(y) && cols.is_multiple_of(T::PER16 as u32);
        let base = shared::dynamic_shared_mem::<f32>();
        let mut v = [0.0f32; 16];
        // SAFETY: the host launches rows clusters of `cluster` blocks of
        // `reg_block_threads(cols, .., cluster)` threads (16 slots each cover the slice)
        // with SHARED_BYTES of shared memory (32 f32 of scratch, then the pair at
        // PARTIAL_OFFSET); the slice x[off .. off + len] lies inside its row, and
        // row::load/store stay inside it.
        unsafe {
            let partial = (base as *mut u8).add(PARTIAL_OFFSET as usize) as *mut f32;
            row::load(x.add(off), len, vec, f32::NEG_INFINITY, &mut v);
            let mut m = f32::NEG_INFINITY;
            for k in 0..16 {
                m = math::max(m, v[k]);
            }
            let mb = block::max_f32(m, base);
            // An empty or all -inf slice: mb = -inf, its exps and sum 0 (padding slots too).
            let mut s = 0.0f32;
            if mb != f32::NEG_INFINITY {
                for k in 0..16 {
                    v[k] = exp_sub(v[k], mb);
                    s += v[k];
                }
            } else {
                v = [0.0; 16];
            }
            let sb = block::sum_f32(s, base);
            let (mc, inv) = cluster_merge(mb, sb, partial);
            // e^(x - mc) / sum = e^(x - mb) · e^(mb - mc) / sum.
            let scale = if mb != f32::NEG_INFINITY {
                exp_sub(mb, mc) * inv
            } else {
                0.0
            };
            for k in 0..16 {
                v[k] *= scale;
            }
            row::store(y.add(off), len, vec, &v);
            // No block leaves while a peer may still read its pair.
            hopper::cluster_wait();
        }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (f32), rows of up to 131072, a cluster of blocks a
    /// row with the slices in registers (the launch's cluster size). sm_90a only.
    #[cfg(target_feature = "sm_90a")]
    pub unsafe fn softmax_v08_cluster_registers_f32(
        x: *const f32,
        y: *mut f32,
        cols: u32,
    ) {
        // Bounds of 1024 threads, 1 block: forcing v05's 32 registers spills here (the
        // cluster merge's state on top of the 16 slots); ptxas takes 47-49, which fits 2 blocks of
        // 512 threads an SM, 1024 threads of 16 slots each in flight.
        crate::gpu::launch_bounds::<{ crate::row_layout::ROW_MAX_THREADS }, 1>();
        // SAFETY: forwarded from the host wrapper's checks (cols <= MAX_COLS; grid = rows
        // clusters of c blocks of reg_block_threads(cols, 4, c) threads, SHARED_BYTES).
        unsafe { dev::run::<f32>(x, y, cols) }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (bf16), as the f32 entry. sm_90a only.
    #[cfg(target_feature = "sm_90a")]
    pub unsafe fn softmax_v08_cluster_registers_bf16(
        x: *const u16,
        y: *mut u16,
        cols: u32,
    ) {
        // Bounds of 1024 threads, 1 block: forcing v05's 32 registers spills here (the
        // cluster merge's state on top of the 16 slots); ptxas takes 47-49, which fits 2 blocks of
        // 512 threads an SM, 1024 threads of 16 slots each in flight.
        crate::gpu::launch_bounds::<{ crate::row_layout::ROW_MAX_THREADS }, 1>();
        // SAFETY: as above, with 2-byte elements.
        unsafe { dev::run::<u16>(x, y, cols) }
    }
}
