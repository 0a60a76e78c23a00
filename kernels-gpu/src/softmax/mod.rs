//! Family `softmax`: `y[r, j] = exp(x[r, j] - max_r) / sum_k exp(x[r, k] - max_r)` over the
//! last dimension of a rows x cols tensor, f32 or bf16 storage (raw u16), f32 arithmetic.
//!
//! Numerical contract (every variant): the max is subtracted before exp, so inputs of any
//! finite magnitude are safe; `-inf` entries give 0; a row that is entirely `-inf` gives all
//! zeros (no NaN: its max is taken as 0 and its sum, 0, is inverted as 0). exp is
//! `ex2.approx` of `(x - max) * log2 e`: relative error ~2^-22 plus the rounding of the
//! product, a few 1e-7 in the range that matters.
//!
//! The ladder: v01 three kernels with the statistics in DRAM; v02 one block per row, three
//! reads; v03 online (running max and sum), two reads, any length; v04 a warp per row; v05 the
//! row in one block's registers, one read (rows of up to 16384); v06 a group of lanes per row,
//! in registers (short rows, up to 512); v07 a cluster of 8 blocks per row, in their shared
//! memory (long rows, up to 262144; sm_90a only); v08 a cluster per row with its slices in
//! registers, v05's layout (up to 131072; sm_90a only); v09 a block per row streamed twice, the
//! second read from L2 under eviction hints (any length). `softmax::auto` on the host picks v06,
//! v05, v09 for bf16 rows of up to 32768, v07 for longer ones (v09 where clusters are
//! unavailable or past v07's limit) by row length; not v08, which measured slower than v07
//! (H200 and H100).
//!
//! Also here, device-side, the softmax math every variant shares. The row-in-registers
//! layout v05 and v06 launch with (`ROW_ITEMS` slots a thread, `row_threads` for a block,
//! `warp_row_lanes` for a group of lanes, `row_slot`) is in `crate::row_layout`, shared with
//! norm's v03. The block reductions and the row tile's loads and stores are in the device
//! layer (`crate::gpu::block`, `crate::gpu::row`); the cluster barriers and distributed
//! shared memory v07 uses in `crate::gpu::hopper`.

pub mod v01_three_kernels;
pub mod v02_block_per_row;
pub mod v03_online;
pub mod v04_warp_per_row;
pub mod v05_row_in_registers;
pub mod v06_rows_per_warp;
pub mod v07_cluster_row;
pub mod v08_cluster_registers;
pub mod v09_l2_reread;

/// The row-in-registers layout v05 and v06 share with norm's v03 (see `crate::row_layout`).
pub use crate::row_layout::{
    ROW_ITEMS, ROW_MAX_COLS, ROW_MAX_THREADS, WARP_ROW_MAX_COLS, row_slot, row_threads,
    warp_row_lanes,
};

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device {
    use crate::gpu::math;

    pub const LOG2_E: f32 = core::f32::consts::LOG2_E;

    /// e^(x - m) for a finite-or-(-inf) x and a finite m.
    #[inline(always)]
    pub fn exp_sub(x: f32, m: f32) -> f32 {
        math::exp2((x - m) * LOG2_E)
    }

    /// The max to subtract: a row whose max is -inf (all -inf) uses 0, so that every
    /// exp is exp(-inf) = 0 instead of NaN.
    #[inline(always)]
    pub fn safe_max(m: f32) -> f32 {
        if m == f32::NEG_INFINITY { 0.0 } else { m }
    }

    /// 1 / sum, with an empty sum (all -inf row) giving 0.
    #[inline(always)]
    pub fn safe_inv(s: f32) -> f32 {
        if s > 0.0 { 1.0 / s } else { 0.0 }
    }

    /// The cluster's (max, 1 / sum) from each block's pair (softmax v07, v08): thread 0
    /// puts this block's `(mb, sb)` (its max and its sum of e^(x - mb)) at `partial` (two f32
    /// of the block's shared memory), the blocks meet at a cluster barrier (release /
    /// acquire: the pairs written before it are visible after it), lanes 0..c-1 of every warp
    /// read block l's pair through distributed shared memory and the warp merges them with
    /// shuffles. Returns `(mc, inv)`: `safe_max` of the row's max and `safe_inv` of its sum
    /// relative to it. Arrives at a second cluster barrier after the reads: the caller must
    /// `hopper::cluster_wait()` before the block exits, so that no block leaves while a peer
    /// may still read its pair. Call from every thread of every block of the cluster.
    #[cfg(target_feature = "sm_90a")]
    #[inline(always)]
    pub unsafe fn cluster_merge(mb: f32, sb: f32, partial: *mut f32) -> (f32, f32) {
        use crate::gpu::async_copy::shared_addr;
        use crate::gpu::{hopper, thread, warp};
        // SAFETY: `partial` is two f32 of this block's shared memory, at the same offset in
        // every block of the cluster (the caller's contract).
        unsafe {
            if thread::thread_idx_x() == 0 {
                partial.write_volatile(mb);
                partial.add(1).write_volatile(sb);
            }
            // Barrier 1: every block's pair written and visible; also every block of the
            // cluster running before anyone reads a peer.
            hopper::cluster_sync();
            let lane = warp::lane_id();
            let (mut pm, mut ps) = (f32::NEG_INFINITY, 0.0f32);
            if lane < hopper::cluster_nctarank() {
                let peer = hopper::map_shared_rank(shared_addr(partial), lane);
                [pm, ps] = hopper::load_shared_cluster_f32x2(peer);
            }
            // Barrier 2, arrive: this thread's reads of the peers are done.
            hopper::cluster_arrive();
            let mc = safe_max(warp::max_f32(pm));
            // An empty or all -inf slice has ps = 0 (and pm = -inf): it adds nothing.
            let term = if ps > 0.0 { ps * exp_sub(pm, mc) } else { 0.0 };
            (mc, safe_inv(warp::sum_f32(term)))
        }
    }

    /// One online-softmax step: fold x into the running (max m, sum s of e^(x - m)).
    #[inline(always)]
    pub fn online(m: &mut f32, s: &mut f32, x: f32) {
        let mn = math::max(*m, x);
        if mn != f32::NEG_INFINITY {
            *s = *s * exp_sub(*m, mn) + exp_sub(x, mn);
        }
        *m = mn;
    }
}
