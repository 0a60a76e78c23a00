//! norm/v06_cluster_row — long rows (sm_90a): a cluster of blocks holds one row on chip.
//!
//! Changed from v04: v04 holds a row in one block's registers, so rows past `ROW_MAX_COLS` =
//! 16384 go to v02, which reads them three times with one scalar load in flight a thread and
//! one block a row (5.4% of the roof at 256×262144: 256 blocks on 132 SMs). Here a
//! thread-block cluster of c = `cluster_size(cols, ..)` blocks (1, 2, 4 or 8, set at launch)
//! shares one row, as softmax v07 does: block `rank` owns the slice `slice(rank, cols, .., c)`
//! and copies it into its shared memory once, with 16-byte `cp.async`s all in flight
//! together in `GROUPS` commit groups, folding each group as it lands.
//!
//! Statistics: each block computes its slice's (mean, M2) exactly two-pass from shared
//! memory (LayerNorm: the sum folded as the copies land, a block reduction for the mean,
//! then the squared deviations around it; RMSNorm: the sum of squares folded as they land,
//! mean 0). Thread 0 puts the pair in shared memory; after a cluster barrier
//! (`barrier.cluster.arrive.release` / `wait.acquire`) lanes 0..c-1 of every warp read block
//! l's pair through distributed shared memory (`mapa` + `ld.shared::cluster`), each with its
//! slice length n_l (a function of l, not sent), and the warp merges them by Chan's parallel
//! formula: mean = Σ n_l·mean_l / n, M2 = Σ (M2_l + n_l·(mean_l − mean)²). Why not one
//! exchange of Σx and Σx² in f32: for rows like 1000 + U(-1, 1) Σx²/n − mean² cancels
//! every digit of the variance (the family's rule: never E[x²] − E[x]²); why not two
//! exchanges (the cluster's mean, then its squared deviations): a second cluster barrier
//! round trip for what Chan's merge gives exactly from one. Each block's M2 is around its own
//! mean, and the merge's correction terms are small differences of close means, so nothing
//! large cancels. All in f32. Each block then normalizes its slice from shared memory into y,
//! weight and bias read as 16-byte vectors from global (L2). A second cluster barrier,
//! arrived at right after the reads and waited on at the very end, keeps every block alive
//! until the others have read its pair. Rows of up to `MAX_COLS` = 393216 in f32 and bf16
//! (192 KiB of shared memory a block in f32, under the 227 KiB a block may have); the host
//! refuses longer rows (v02 takes any length) and reports the step unavailable on GPUs other
//! than compute capability 9.0.
//!
//! Thread mapping: the cluster `%clusterid.x` owns that row; block `rank` its slice; the
//! slice's 16-byte vectors (elements, when the rows are not 16-byte aligned) go round-robin
//! over the block's `block_threads(cols, ..)` threads (at least `MIN_VECTORS` vectors each,
//! up to 1024 threads), and each thread reads back from shared memory only what it copied
//! itself, so the copies need no block barrier.
//!
//! Memory traffic: the minimum, 1 read + 1 write (+ weight and bias, L2-resident); the slice
//! crosses shared memory once in and up to three times out (sum, deviations, normalize).
//!
//! Expected bound: DRAM; with one 128 KiB block an SM (262144 f32) the reductions and the
//! cluster barrier are hidden only behind other clusters' loads.

/// The cluster-row layout (blocks per cluster, threads, slices, shared memory), softmax
/// v07's.
pub use crate::cluster_row::{
    GROUPS, HEADER_BYTES, MAX_CLUSTER, MAX_THREADS, MIN_VECTORS, PARTIAL_OFFSET,
    TARGET_SLICE_BYTES, block_threads, cluster_size, shared_bytes, slice, slice_cols,
};
/// Longest row: 8 blocks of 49152 f32 (192 KiB of shared memory each, 96 KiB in bf16).
pub const MAX_COLS: u32 = 393216;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod dev {
    use super::{GROUPS, HEADER_BYTES, PARTIAL_OFFSET, slice};
    use crate::cluster_row::dev::read_unit;
    use crate::gpu::async_copy::{self, shared_addr};
    use crate::gpu::bf16::{Storage, load16_nc};
    use crate::gpu::vector::F32x4;
    use crate::gpu::{block, hopper, shared, thread};
    use crate::norm::device::chan_merge;
    use crate::norm::rsqrt;

    const _: () = assert!(GROUPS == 4, "the waits below are written for 4 groups");

    /// The same unit of weight or bias (global, `col` its first column), widened.
    #[inline(always)]
    unsafe fn param_unit<T: Storage, const VEC: bool>(p: *const T, col: u32, u: &mut [f32; 8]) {
        // SAFETY: col (and the vector from it) lies inside the cols elements of p; with VEC
        // it is a multiple of PER16 and p is 16-byte aligned.
        unsafe {
            if VEC {
                T::unpack16(load16_nc(p.add(col as usize).cast()), u);
            } else {
                u[0] = T::load(p.add(col as usize));
            }
        }
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn body<T: Storage, const LAYER: bool, const VEC: bool>(
        x: *const T,
        w: *const T,
        bias: *const T,
        y: *mut T,
        cols: u32,
        eps: f32,
    ) {
        let n = if VEC { T::PER16 } else { 1 };
        let eb = 16 / T::PER16 as u32;
        let (rank, cluster) = (hopper::cluster_ctarank(), hopper::cluster_nctarank());
        let (start, len) = slice(rank, cols, eb, cluster);
        let units = len / n as u32;
        let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
        let off = hopper::cluster_id_x() as usize * cols as usize + start as usize;
        let base = shared::dynamic_shared_mem::<F32x4>() as *mut u8;
        // SAFETY: (whole body) the host launches rows clusters of `cluster` blocks of `b`
        // threads with `shared_bytes(cols, .., cluster)` bytes, so the header and the slice
        // fit; every unit j <
        // units lies inside this block's slice of its row (x and y hold rows · cols, w and
        // bias cols); with VEC the rows are 16-byte aligned and slices start on a vector.
        unsafe {
            let scratch = base as *mut f32;
            let partial = base.add(PARTIAL_OFFSET as usize) as *mut f32;
            let data = base.add(HEADER_BYTES as usize) as *mut T;
            let (xs, ys) = (x.add(off), y.add(off));
            // Thread t's units are j = i·b + t; the i's split into GROUPS runs.
            let per_group = units.div_ceil(b).div_ceil(GROUPS);
            for g in 0..GROUPS {
                let mut i = g * per_group;
                while i < (g + 1) * per_group && i * b + t < units {
                    let j = i * b + t;
                    if VEC {
                        let src = xs.add(j as usize * n).cast::<f32>();
                        async_copy::copy_16_zfill(shared_addr(data) + 16 * j, src, 16);
                    } else {
                        // Unaligned rows: a plain element copy (cp.async has no 2-byte form).
                        data.add(j as usize).write(xs.add(j as usize).read());
                    }
                    i += 1;
                }
                async_copy::commit_group();
            }
            // Fold each group as it lands (LayerNorm: the sum; RMSNorm: the sum of squares):
            // this thread reads only what it copied, so its own wait is enough.
            let mut acc = 0.0f32;
            let mut fold = |g: u32| {
                let mut i = g * per_group;
                while i < (g + 1) * per_group && i * b + t < units {
                    let mut u = [0.0f32; 8];
                    read_unit::<T, VEC>(data, i * b + t, &mut u);
                    for k in 0..n {
                        acc += if LAYER { u[k] } else { u[k] * u[k] };
                    }
                    i += 1;
                }
            };
            async_copy::wait_group::<3>();
            fold(0);
            async_copy::wait_group::<2>();
            fold(1);
            async_copy::wait_group::<1>();
            fold(2);
            async_copy::wait_group::<0>();
            fold(3);

            // The block's (mean, M2), exactly two-pass around the block's own mean. An empty
            // slice (short rows: the last ranks) gives (0, 0) and weighs n_l = 0 below.
            let nb = len as f32;
            let (mean_b, m2_b) = if LAYER {
                let s = block::sum_f32(acc, scratch);
                let mb = if len > 0 { s / nb } else { 0.0 };
                let mut sq = 0.0f32;
                let mut i = 0;
                while i * b + t < units {
                    let mut u = [0.0f32; 8];
                    read_unit::<T, VEC>(data, i * b + t, &mut u);
                    for k in 0..n {
                        let d = u[k] - mb;
                        sq += d * d;
                    }
                    i += 1;
                }
                (mb, block::sum_f32(sq, scratch))
            } else {
                (0.0, block::sum_f32(acc, scratch))
            };
            // The cluster's (mean, M2) by Chan's merge (barrier 1, the peers' pairs through
            // distributed shared memory, barrier 2's arrive).
            let (mean, m2) = chan_merge::<LAYER>(mean_b, m2_b, partial, cols, eb);
            let rs = rsqrt(m2 / cols as f32 + eps);

            let mut i = 0;
            while i * b + t < units {
                let j = i * b + t;
                // The unit's first column in the row (weight and bias are indexed by it).
                let col = start + j * n as u32;
                let (mut u, mut wt, mut bt) = ([0.0f32; 8], [0.0f32; 8], [0.0f32; 8]);
                read_unit::<T, VEC>(data, j, &mut u);
                param_unit::<T, VEC>(w, col, &mut wt);
                if LAYER {
                    param_unit::<T, VEC>(bias, col, &mut bt);
                }
                for k in 0..n {
                    u[k] = (u[k] - mean) * rs * wt[k] + bt[k];
                }
                if VEC {
                    T::store16(ys.add(j as usize * n), &u);
                } else {
                    T::store(ys.add(j as usize), u[0]);
                }
                i += 1;
            }
            // No block leaves while a peer may still read its pair.
            hopper::cluster_wait();
        }
    }

    /// The kernel body: the vector layout when x, y, weight, bias and the rows are 16-byte
    /// aligned, the element layout otherwise (uniform over the grid).
    #[inline(always)]
    pub unsafe fn run<T: Storage, const LAYER: bool>(
        x: *const T,
        w: *const T,
        bias: *const T,
        y: *mut T,
        cols: u32,
        eps: f32,
    ) {
        let vec = crate::norm::vector_layout::<T, LAYER>(x, w, bias, y, cols);
        // SAFETY: forwarded.
        unsafe {
            if vec {
                body::<T, LAYER, true>(x, w, bias, y, cols, eps)
            } else {
                body::<T, LAYER, false>(x, w, bias, y, cols, eps)
            }
        }
    }
}

macro_rules! entry {
    ($t:ty, $layer:literal, $name:ident) => {
        crate::kernel! {
            /// A cluster of blocks per row (the launch's cluster size), the row in their
            /// shared memory, rows of up to 393216. sm_90a only.
            #[cfg(target_feature = "sm_90a")]
            pub unsafe fn $name(
                x: *const $t,
                w: *const $t,
                bias: *const $t,
                y: *mut $t,
                cols: u32,
                eps: f32,
            ) {
                // Blocks of up to MAX_THREADS, two of them an SM: ptxas keeps to 32 registers
                // (no spills). Under a bound of one block LayerNorm bf16 took 40, which left
                // room for 3 blocks of 512 threads an SM instead of 4 (H100, 2026-12-06:
                // 256x262144 176.3 µs → 133.8, 1024x65536 125.4 → 117.5).
                crate::gpu::launch_bounds::<{ MAX_THREADS }, 2>();
                // SAFETY: forwarded from the host wrapper's checks (cols <= MAX_COLS; grid =
                // rows clusters of c = cluster_size(cols, ..) blocks of block_threads(cols, ..,
                // c) threads, shared_bytes(cols, .., c) of shared memory).
                unsafe { dev::run::<$t, $layer>(x, w, bias, y, cols, eps) }
            }
        }
    };
}

entry!(f32, true, norm_v06_cluster_row_layernorm_f32);
entry!(u16, true, norm_v06_cluster_row_layernorm_bf16);
entry!(f32, false, norm_v06_cluster_row_rmsnorm_f32);
entry!(u16, false, norm_v06_cluster_row_rmsnorm_bf16);
